//! The Redis model: keyspace, commands, scripts, the node as a sans-IO process.
//! It sees only its node's clock readings, never true time.

pub mod blocked;
pub mod functions;
pub mod keyspace;
pub mod long_double;
pub mod lua;
pub mod node;
pub mod replication;
pub mod scripts;
pub mod sentinel;

#[cfg(test)]
mod command_path_tests;
#[cfg(test)]
mod expiry_tests;

pub use node::{RedisConfig, RedisNode, RedisProcess};
