//! distlock-sim: a deterministic discrete-event simulator of Redis-based distributed locks.
//!
//! Layers, lowest first, dependencies pointing down (docs/ARCHITECTURE.md has the map;
//! tests/layering.rs checks it): `time`; `rng`, `clock`; `net`, `proto`; `history`;
//! `process`, `check`; `redis`; `client`; `sim`; `conformance`; `scenario`; `explore`;
//! `view`; `assess`, `testing`; `cli`.
#![forbid(unsafe_code)]

pub mod assess;
pub mod check;
pub mod cli;
pub mod client;
pub mod clock;
pub mod conformance;
pub mod explore;
pub mod history;
pub mod net;
pub mod process;
pub mod proto;
pub mod redis;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod testing;
pub mod time;
pub mod view;

/// Guides whose code examples are compiled and run as tests.
pub mod guide {
    #[doc = include_str!("../docs/custom-algorithm.md")]
    pub mod custom_algorithm {}
}
