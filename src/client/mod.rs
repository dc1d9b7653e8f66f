//! Lock algorithms and the protected resource, as sans-IO processes. They see only their
//! node's clock readings and talk to Redis with typed commands.

pub mod consensus;
pub mod node_redlock;
pub mod presets;
pub mod python_redis_lock;
pub mod redis_py;
pub mod redisson;
pub mod redlock;
pub mod redsync;
pub mod resource;
pub mod section;
pub mod single;
pub mod timeout;
pub mod timer;
pub mod watchdog;

pub use resource::Resource;
pub use single::{Algorithm, ClientConfig, LockClient, NsRange};
