//! The bounds of a run and how it ended.

use crate::time::SimTime;

/// Bounds of a run. Hitting one ends the run with that verdict; nothing loops forever.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_time: SimTime,
    pub max_events: u64,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// The run reached `max_time` (the normal end of a timed model).
    TimeLimit,
    /// The event budget ran out before `max_time`: the world produced events faster than the
    /// model allows (a livelock, or a budget set too low).
    EventLimit,
    /// No event was left to handle.
    Quiescent,
    /// The history outgrew its memory budget (`history::HISTORY_BUDGET_BYTES`) before
    /// `max_time`: the run stopped between two events, like `EventLimit` a budget stop whose
    /// verdict covers only the run so far (inconclusive where it reports no violation).
    HistoryLimit,
}

impl RunEnd {
    /// A run cut short by one of its budgets (events, history memory) rather than ended by
    /// its duration or by running out of work.
    pub fn is_budget_stop(self) -> bool {
        match self {
            RunEnd::EventLimit | RunEnd::HistoryLimit => true,
            RunEnd::TimeLimit | RunEnd::Quiescent => false,
        }
    }

    /// The run stopped on a budget before the model's duration: a property that held may
    /// still fail later in the run, so "held" is not a verdict for this run. (Every budget
    /// stop is; matched exhaustively there, so a new way of stopping has to say which it is.)
    pub fn is_inconclusive(self) -> bool {
        self.is_budget_stop()
    }
}
