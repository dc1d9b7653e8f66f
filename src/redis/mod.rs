//! The Redis model: keyspace, commands, scripts, the node as a sans-IO process.
//! It sees only its node's clock readings, never true time.

pub mod connection;
pub mod keyspace;
pub mod lua;
mod lua_libs;
pub mod node;
pub mod pubsub;
pub mod replication;
pub mod scripts;
pub mod sentinel;

pub use node::{RedisConfig, RedisNode, RedisProcess};
