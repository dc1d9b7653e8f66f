//! Sentinel: failure detection and failover (being written).
