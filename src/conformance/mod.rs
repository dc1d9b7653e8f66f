//! Replays a recorded Redis conformance corpus against the model, in virtual time.

pub mod corpus;
pub mod info;
pub mod replicated;
pub mod runner;

pub use runner::{CaseResult, DirReport, FileReport, NodeReplay, Sent, run_dir, run_text};
