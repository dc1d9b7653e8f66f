//! The simulation engine: the event loop, the actors it runs, faults and traces.
//! Only this layer (and `check`) reads true time.

pub mod actor;
pub mod adversary;
pub mod decision;
pub mod fault;
pub mod periodic;
pub mod queue;
pub mod run;
pub mod trace;
pub mod world;

pub use actor::Actor;
pub use fault::{Fault, FaultKind};
pub use trace::{Trace, TraceMode};
pub use world::{Limits, ProcSpec, RunEnd, RunState, World};
