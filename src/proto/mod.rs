//! Wire types shared by processes: Redis commands and replies, and the messages the event
//! loop carries between processes. Plain data, no behaviour beyond parsing and rendering.

pub mod argv;
pub mod bytes;
pub mod command;
pub mod consensus;
pub mod msg;
pub mod reply;
pub mod scripts;
pub mod sentinel;

pub use command::{Bytes, Command, Script, ScriptRef};
pub use msg::Msg;
pub use reply::Reply;
