//! The validated model, `Scenario`: a model file's sections (`schema.rs`) checked against
//! each other (`validate.rs`), with its process table and what a run of it needs; built into
//! a world for a seed by `lower.rs`, and named and worded by `names.rs`.

use crate::check::Property;
use crate::rng::Ratio;
use crate::scenario::schema::Model;
use crate::sim::Limits;

/// What kind of process a name stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcKind {
    Redis,
    Resource,
    Client,
    Sentinel,
    Consensus,
}

/// A validated model, ready to be built into a world for any seed.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// File stem, e.g. `single-px-del-pause`.
    pub name: String,
    /// Path as given (for replay commands).
    pub path: String,
    pub model: Model,
    pub procs: Vec<(String, ProcKind)>,
    pub properties: Vec<Property>,
    pub liveness_bound_ns: u64,
    /// `release_returns`: how long an unlock call may take (`release_within`).
    pub release_within_ns: u64,
    pub limits: Limits,
    pub epoch_unix_ms: i64,
    /// Flags a replay command needs besides the path and seed to rebuild this scenario
    /// (` --adversary triggered` for a re-timed model); empty for a model as written.
    pub replay_flags: String,
    /// The command that runs this tool, as printed replay lines begin: `distlock-sim` unless
    /// the command line says how it was invoked (`cli::program_for_replay`). Generated docs
    /// keep the default, so that they do not name one machine's paths.
    pub replay_program: String,
    /// Each random fault and each trigger firing applies with this chance (`--sparser K`:
    /// 1/K); the rest of the schedule is drawn as if all applied.
    pub fault_keep: Ratio,
    /// The model's variants, each checked to load (`scenario::variants`); empty for a model
    /// built from a typed model rather than read from its text.
    pub variants: Vec<crate::scenario::variants::Variant>,
}
