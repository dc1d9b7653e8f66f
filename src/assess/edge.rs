//! The edge of one fault for a finding: the finding's model with its random faults off and one
//! triggered fault at the moment it hurts most (a pause the moment a client acquires, a clock
//! step the moment the master grants, replies delayed the moment a client attempts), its size
//! bisected on one seed to the resolution of its unit. "A pause right after acquiring breaks
//! it from 10.000561 s (10.000560 s holds)" is the sentence people bring to a lock, measured
//! on the setup's own model; both sizes' replay lines are printed and run as pasted.

use std::ops::Range;

use crate::explore;
use crate::scenario::{self, overrides::Override};
use crate::time::fmt_duration_us;

/// How the fault's size is written in the model and read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A window in µs.
    Us,
    /// A clock step in ms (the model's unit for steps).
    Ms,
}

impl Unit {
    fn text(self, v: u64) -> String {
        match self {
            Unit::Us => fmt_duration_us(v * 1_000),
            Unit::Ms => format!("+{v}ms"),
        }
    }
    fn ron(self, v: u64) -> String {
        match self {
            Unit::Us => format!("\"{v}us\""),
            Unit::Ms => format!("\"+{v}ms\""),
        }
    }
}

/// One fault, placed by a trigger, whose size the edge is sought for.
#[derive(Clone, Debug)]
pub struct Probe {
    /// "a pause of c1 the moment it acquires".
    pub what: String,
    /// The trigger entry with `{}` where its size goes.
    pub trigger: String,
    pub unit: Unit,
    /// The largest size tried, and the largest the assumptions allow.
    pub hi: u64,
    pub assumed: u64,
}

/// Where the finding's verdict flips under the probe, on one seed.
#[derive(Clone, Debug)]
pub struct Edge {
    pub what: String,
    pub seed: u64,
    pub unit: Unit,
    /// The largest size that held and the smallest that broke (they differ by the unit).
    pub holds: u64,
    pub breaks: u64,
    pub assumed: u64,
    pub replay_holds: String,
    pub replay_breaks: String,
}

/// No edge: every size tried held (up to `hi`), or the smallest already broke.
#[derive(Clone, Debug)]
pub enum NoEdge {
    HeldUpTo {
        what: String,
        hi: String,
        seeds: u64,
    },
    BreaksAtOnce {
        what: String,
    },
}

impl Edge {
    pub fn sentence(&self) -> String {
        let place = if self.breaks <= self.assumed {
            format!("inside the assumed {}", self.unit.text(self.assumed))
        } else {
            format!(
                "beyond the assumed {}: no assumed one reaches it",
                self.unit.text(self.assumed)
            )
        };
        format!(
            "on seed {}, {} breaks it from {} ({} holds) — {place}",
            self.seed,
            self.what,
            self.unit.text(self.breaks),
            self.unit.text(self.holds)
        )
    }
}

impl NoEdge {
    pub fn sentence(&self) -> String {
        match self {
            NoEdge::HeldUpTo { what, hi, seeds } => {
                format!("{what} held up to {hi} on each of seeds 0..{seeds}: no edge below it")
            }
            NoEdge::BreaksAtOnce { what } => {
                format!("{what} breaks it at its smallest size: the edge is not this fault's")
            }
        }
    }
}

/// Seeds the probe tries for one that breaks at the largest size.
const PROBE_SEEDS: u64 = 8;

fn sets(trigger: &str) -> Vec<Override> {
    [
        "random_faults=[]".to_string(),
        format!("triggers=[{trigger}]"),
    ]
    .iter()
    .map(|s| s.parse().expect("a well-formed override"))
    .collect()
}

/// The edge of `probe` on the finding's model (`text`, written at `path`).
pub fn find(
    probe: &Probe,
    text: &str,
    path: &str,
    program: &str,
    seeds: Range<u64>,
) -> Result<Result<Edge, NoEdge>, String> {
    let at = |size: u64| probe.trigger.replace("{}", &probe.unit.ron(size));
    let breaks = |size: u64, seed: u64| -> Result<Option<bool>, String> {
        let (sc, _) = scenario::overrides::load_with("edge", path, text, &sets(&at(size)))?;
        let o = explore::run_seed(&sc, seed);
        Ok(if !o.violations.is_empty() {
            Some(true)
        } else if o.inconclusive() {
            None
        } else {
            Some(false)
        })
    };
    let tried = PROBE_SEEDS.min(seeds.end - seeds.start);
    let mut seed = None;
    for s in seeds.start..seeds.start + tried {
        if breaks(probe.hi, s)? == Some(true) {
            seed = Some(s);
            break;
        }
    }
    let Some(seed) = seed else {
        return Ok(Err(NoEdge::HeldUpTo {
            what: probe.what.clone(),
            hi: probe.unit.text(probe.hi),
            seeds: seeds.start + tried,
        }));
    };
    let (mut lo, mut hi) = (1u64, probe.hi);
    if breaks(lo, seed)? != Some(false) {
        return Ok(Err(NoEdge::BreaksAtOnce {
            what: probe.what.clone(),
        }));
    }
    // Invariant: `lo` held and `hi` broke, on `seed`.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match breaks(mid, seed)? {
            Some(true) => hi = mid,
            Some(false) => lo = mid,
            // A budget stopped the run: no claim either way, so no edge.
            None => {
                return Ok(Err(NoEdge::BreaksAtOnce {
                    what: probe.what.clone(),
                }));
            }
        }
    }
    let replay = |size: u64| {
        let mut c = format!("{program} replay {}", scenario::names::shell_word(path));
        for s in sets(&at(size)) {
            c.push_str(" --set ");
            c.push_str(&scenario::names::shell_word(&s.arg));
        }
        c.push_str(&format!(" --seed {seed}"));
        c
    };
    Ok(Ok(Edge {
        what: probe.what.clone(),
        seed,
        unit: probe.unit,
        holds: lo,
        breaks: hi,
        assumed: probe.assumed,
        replay_holds: replay(lo),
        replay_breaks: replay(hi),
    }))
}
