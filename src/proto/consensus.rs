//! Messages of the consensus lock service (a ZooKeeper-style lock, for contrast with Redis
//! locks). Defined by the consensus module's author; see src/client/consensus.rs.

/// Traffic between consensus-lock clients and the lock service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConsensusMsg {}
