//! Thresholds (`explore MODEL --faults 1 --thresholds`): for each one-fault placement — fault
//! kind, target and start — the magnitude at which the verdict flips ("pause of c1 from
//! 12.300 s: violates iff duration ≥ 9.701234 s"), to 1 µs for a window (pause, crash
//! downtime, cut) and a latency spike's extra latency, to the model's 1 ms for a clock step
//! and to 1 ppm for a drift's rate (`magnitude` says which number a fault varies).
//!
//! How (docs/explore.md, "Thresholds"):
//! - the starts are the one-fault level's: every offset before an event of a client (and of
//!   a server with `--every-offset`) and every decision point; what a fault does depends on
//!   which event it meets first, so one start stands for the whole piece of time before it;
//! - at each start, each fault family the model declares there is run at the magnitudes of
//!   a grid — the smallest (1 µs; a step of ±1 ms; ±1 ppm), the menu's canonical ones, the
//!   largest the model declares, every decade of a drift, and for a window (pause, downtime,
//!   cut) or a spike a point just past each thing its largest run did while the window
//!   was open (a client acquiring, releasing or
//!   losing a lock, a key leaving a node, a write to the resource): until a window ends,
//!   every shorter one runs as the largest does, so its end passing one of those is where
//!   the verdict can change. Between two neighbours of the grid whose verdicts differ, the
//!   flip is found by bisection, its first guess the instant the same family's previous flip
//!   ended at (the flip of a pause is most often "ends after an expiry", an instant);
//! - every run goes from a clone of the world just before the start to the model's whole
//!   duration, and is judged as `run` judges it: so a flip's two replay commands, which
//!   differ only in the magnitude, exit 0 and 1 as pasted — each is run again from time 0 to
//!   confirm it, and a replay that disagrees is reported, never hidden.
//!
//! What it does not claim: that the verdict does not flip twice between two neighbours of
//! the grid that agree — which needs the window's end to matter relative to something that
//! happens after it (`tests/thresholds.rs` draws random magnitudes inside each piece, runs
//! them from time 0 and compares their verdicts with the piece's).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::explore::minimize::fault_ron;
use crate::explore::systematic::{ExploreConfig, Item, Search, coverage_key};
use crate::history::Observation;
use crate::scenario::Scenario;
use crate::scenario::faults::FaultEntry;
use crate::scenario::names::shell_word;
use crate::sim::decision::DecisionKind;
use crate::sim::{Fault, World};
use crate::time::{ProcId, SimTime, fmt_duration_ns, fmt_duration_us};

/// Runs the thresholds start unless told otherwise (`--budget`): each start costs one run
/// per point of its grid and about two per flip; the catalogue's largest single-node models
/// need 30,000 to 65,000.
pub const DEFAULT_BUDGET_RUNS: u64 = 200_000;

pub use crate::sim::fault::Unit;

/// Where the verdict flips at one start of one fault family.
#[derive(Clone, Debug)]
pub struct Threshold {
    /// The family, as the coverage table names it ("pause", "crash (empty, host down)").
    pub kind: String,
    pub target: String,
    /// The start's label (`before-event`, `acquired`, …) and when the fault opens.
    pub point: &'static str,
    pub at: SimTime,
    pub unit: Unit,
    /// The magnitude closest to the flip that holds, and the one that violates; they differ
    /// by at most the unit's resolution.
    pub holds_at: i64,
    pub violates_at: i64,
    /// The faults of the two runs (as scripted faults, they differ only in the magnitude).
    pub holds: Vec<Fault>,
    pub violates: Vec<Fault>,
    /// The property the violating run broke first.
    pub property: String,
    /// The start it was found at (an index into `ThresholdReport::pieces`).
    pub piece: usize,
}

/// One family at one start, as the thresholds covered it: the grid and bisection ran every
/// magnitude it names from `lo` to `max`, and its flips are the `Threshold`s whose `piece`
/// is this one's index. Between two of them (or below the first, above the last) the claim is
/// that the verdict is constant: `tests/thresholds.rs` checks it with magnitudes drawn at
/// random.
#[derive(Clone, Debug)]
pub struct Piece {
    pub kind: String,
    pub target: String,
    pub point: &'static str,
    pub at: SimTime,
    pub unit: Unit,
    /// The smallest and the largest magnitude (signed: a step back is negative).
    pub lo: i64,
    pub max: i64,
    /// The faults at `lo` (`at_magnitude` sets another magnitude).
    pub faults: Vec<Fault>,
    /// At `lo`: the run violated.
    pub violated_at_lo: bool,
    /// A run at one of its magnitudes was cut short by a model budget: the piece claims
    /// nothing (counted in `FamilySummary::inconclusive`).
    pub inconclusive: bool,
}

impl Threshold {
    /// "above": larger faults violate (`violates iff duration ≥ boundary`).
    pub fn violates_above(&self) -> bool {
        self.violates_at.abs() > self.holds_at.abs()
    }
    /// The magnitude that sentence names: the violating one.
    pub fn boundary(&self) -> i64 {
        self.violates_at
    }
    /// "violates iff duration ≥ 9.701234 s".
    pub fn sentence(&self) -> String {
        let what = self.unit.quantity();
        let back = self.unit.signed() && self.violates_at < 0;
        let (op, m) = match (back, self.violates_above()) {
            (true, true) => ("≤", self.violates_at),
            (true, false) => ("≥", self.violates_at),
            (false, true) => ("≥", self.violates_at),
            (false, false) => ("≤", self.violates_at),
        };
        format!("violates iff {what} {op} {}", self.unit.text(m))
    }
}

/// What one family did across its starts.
#[derive(Clone, Debug, Default)]
pub struct FamilySummary {
    /// Starts where the family was placed.
    pub starts: u64,
    /// Starts where the verdict flips at least once in the declared range.
    pub flipping: u64,
    /// Starts where every magnitude tried violated, and where every one held.
    pub always_violates: u64,
    pub always_holds: u64,
    /// Starts where a run was cut short by one of the model's budgets: they claim nothing.
    pub inconclusive: u64,
    /// The declared largest magnitude, as text.
    pub max_text: String,
}

/// The thresholds of one model and seed.
#[derive(Clone, Debug, Default)]
pub struct ThresholdReport {
    pub model: String,
    pub seed: u64,
    pub thresholds: Vec<Threshold>,
    /// Every start of every family the thresholds covered, flipping or not.
    pub pieces: Vec<Piece>,
    pub families: BTreeMap<(String, String), FamilySummary>,
    /// Runs started (each from a clone at its start, to the model's duration).
    pub runs: u64,
    pub budget_hit: bool,
    /// Runs stopped by one of the model's budgets (events, history): their verdict is not a
    /// verdict, and a flip found next to one is not reported.
    pub inconclusive_runs: u64,
    /// Every flip's two replay commands (in the order of `thresholds`); each family's
    /// smallest is confirmed by running them from time 0.
    pub replays: Vec<Replay>,
}

/// A flip's two commands and what running them from time 0 gave.
#[derive(Clone, Debug)]
pub struct Replay {
    pub threshold: usize,
    pub holds_cmd: String,
    pub violates_cmd: String,
    /// Run from time 0 (each family's smallest flip): the command that should hold held and
    /// the one that should violate violated. `None`: not run again.
    pub confirmed: Option<bool>,
}

impl ThresholdReport {
    /// Some magnitude in the declared range breaks the model: a flip, or a start where
    /// every magnitude tried violates.
    pub fn violates(&self) -> bool {
        !self.thresholds.is_empty() || self.families.values().any(|f| f.always_violates > 0)
    }
    /// Not the whole range at every start: a budget stopped it, or a run was cut short.
    pub fn inconclusive(&self) -> bool {
        self.budget_hit || self.inconclusive_runs > 0
    }
}

/// A family at one start: its representative faults, the magnitudes the menu offers, the
/// largest declared.
struct Family {
    faults: Vec<Fault>,
    unit: Unit,
    menu: Vec<i64>,
    max: i64,
}

/// `faults` (a threshold's `holds` or `violates`, a piece's `faults`) with their magnitude
/// (`Fault::magnitude`'s) set to `m`: every fault of an item, as a crash and the cut declared
/// with it share their window.
pub fn at_magnitude(faults: &[Fault], m: i64) -> Vec<Fault> {
    faults.iter().map(|f| f.with_magnitude(m)).collect()
}

/// The families of a start's menu, by (kind, target, sign of a step).
fn families(
    s: &Search<'_>,
    menu: &[Item],
    name: &dyn Fn(ProcId) -> String,
) -> BTreeMap<(String, String), Family> {
    let mut out: BTreeMap<(String, String), Family> = BTreeMap::new();
    for (_, faults) in menu {
        let Some(max) = s.ctx.declared_max(faults) else {
            continue;
        };
        let last = faults.last().expect("a menu item has a fault");
        let (kind, target, _) = coverage_key(last, name, faults.len());
        let Some((unit, m)) = last.magnitude() else {
            continue;
        };
        // A step (a drift) forward and back are two families: each has its own edge.
        let kind = match (unit, m > 0) {
            (Unit::Step, true) => format!("{kind} forward"),
            (Unit::Step, false) => format!("{kind} back"),
            (Unit::Drift, true) => format!("{kind} fast"),
            (Unit::Drift, false) => format!("{kind} slow"),
            (Unit::Window | Unit::Latency, _) => kind,
        };
        let key = (kind, target);
        let fam = out.entry(key).or_insert_with(|| Family {
            faults: faults.clone(),
            unit,
            menu: Vec::new(),
            max,
        });
        fam.menu.push(m);
    }
    out
}

/// Verdicts of one family at one start: runs each magnitude from a clone of `cursor`.
struct Probe<'s, 'a> {
    s: &'s Search<'a>,
    cursor: &'s World,
    faults: &'s [Fault],
    report: &'s mut ThresholdReport,
    /// Magnitudes run so far at this start: verdict (the property broken), or `None` held;
    /// `Err` for a run cut short by a budget.
    seen: BTreeMap<i64, Result<Option<String>, ()>>,
    /// For a window: the run at this magnitude (the largest) also gives `marks`.
    mark_with: Option<i64>,
    /// When, after the start, that run's clients acquired, released or lost a lock, a key
    /// left a node, or the resource was written (ns after the start): the instants a
    /// shorter window's end can fall either side of.
    marks: Vec<i64>,
    /// When the fault opens (ns).
    start: i64,
}

/// The run ran out of the exploration's budget.
struct OutOfBudget;

impl Probe<'_, '_> {
    fn verdict(&mut self, m: i64) -> Result<Result<Option<String>, ()>, OutOfBudget> {
        if let Some(v) = self.seen.get(&m) {
            return Ok(v.clone());
        }
        if self.report.runs >= self.s.cfg.budget_runs {
            self.report.budget_hit = true;
            return Err(OutOfBudget);
        }
        self.report.runs += 1;
        let faults = at_magnitude(self.faults, m);
        let mut w = if self.s.cfg.prefix_sharing {
            let mut w = self.cursor.clone();
            w.schedule_all(faults);
            w
        } else {
            fresh(self.s, faults)
        };
        let marking = self.mark_with == Some(m);
        if marking {
            w.log_decisions();
        } else {
            w.stop_logging_decisions();
        }
        let from = w.history.records.len();
        let v = if Search::run_to(&mut w, self.s.sc.limits.max_time) {
            self.report.inconclusive_runs += 1;
            Err(())
        } else {
            Ok(self.s.check(&w).first().map(|v| v.property.to_string()))
        };
        if marking {
            let start = self.start;
            // What the window kept from its target: each event that reached a process it
            // stops (or was sent on a link it slows or cuts) while it was open. A shorter
            // window ends before or after each of them; between two, the world it leaves is
            // the same, only later.
            let missed: Vec<SimTime> = w
                .take_decisions()
                .into_iter()
                .filter(|d| d.kind == DecisionKind::Arrival)
                .filter(|d| self.faults.iter().any(|f| f.kind.affects(d.proc, d.peer)))
                .map(|d| d.at)
                .collect();
            let seen = w.history.records[from.min(w.history.records.len())..]
                .iter()
                .filter(|r| {
                    matches!(
                        r.obs,
                        Observation::Acquired { .. }
                            | Observation::Released { .. }
                            | Observation::Lost { .. }
                            | Observation::KeyRemoved { .. }
                            | Observation::ResourceWrite { .. }
                    )
                })
                .map(|r| r.at);
            self.marks = seen
                .chain(missed)
                .map(|at| at.0 as i64 - start)
                .filter(|&d| 0 < d && d < m)
                .collect();
            self.marks.sort_unstable();
            self.marks.dedup();
        }
        self.seen.insert(m, v.clone());
        Ok(v)
    }

    /// Between `a` (verdict `va`) and `b` (verdict differs), the two neighbours within the
    /// resolution where it flips: bisection, trying `guess` first.
    fn flip(
        &mut self,
        mut a: i64,
        mut b: i64,
        res: i64,
        guess: Option<i64>,
    ) -> Result<Option<(i64, i64)>, OutOfBudget> {
        let va = self.verdict(a)?;
        let violated = |v: &Result<Option<String>, ()>| matches!(v, Ok(Some(_)));
        // Try the guess and its neighbour towards `a`: two runs when it is right.
        if let Some(g) = guess {
            let toward_a = if a < b { g - res } else { g + res };
            let inside = |x: i64| (a.min(b) < x) && (x < a.max(b));
            if inside(g) && inside(toward_a) {
                for x in [toward_a, g] {
                    let v = self.verdict(x)?;
                    if v.is_err() {
                        return Ok(None);
                    }
                    if violated(&v) == violated(&va) {
                        a = x;
                    } else {
                        b = x;
                        break;
                    }
                }
            }
        }
        while (b - a).abs() > res {
            let mid = a + (b - a) / 2;
            let v = self.verdict(mid)?;
            if v.is_err() {
                return Ok(None);
            }
            if violated(&v) == violated(&va) {
                a = mid;
            } else {
                b = mid;
            }
        }
        Ok(Some((a, b)))
    }
}

/// The thresholds of `sc` at the one-fault level, from the base run of `cfg.seed`
/// (`original_text`: the model as the user's command read it, overrides applied, for the
/// replay commands). `program` begins the printed commands.
pub fn thresholds(
    sc: &Scenario,
    original_text: &str,
    cfg: &ExploreConfig,
    program: &str,
) -> Result<ThresholdReport, String> {
    search(sc, original_text, cfg, program, Scope::EveryFlip)
}

/// Per family, only the smallest magnitude that breaks the model at any start (`map
/// --thresholds`): the thresholds' grid and bisection, each start's range cut to below the
/// smallest flip found so far and its grid stopped at its first violating point. The claim
/// is the thresholds' own, for that one number: no start has a smaller violating magnitude
/// on its grid (a start cut to nothing holds nothing smaller to find). The report's
/// `thresholds` are the flips that lowered a family's smallest, its `pieces` the starts
/// that ran.
///
/// `every_event`: start before every event of a client, as the thresholds do; otherwise only
/// at the decision points (a lock acquired or granted, before a release, a command, a write:
/// where a fault inside a hold is placed), which is where the smallest fault that breaks a
/// lock is found in the catalogue's models and costs a tenth of the runs.
pub fn smallest(
    sc: &Scenario,
    original_text: &str,
    cfg: &ExploreConfig,
    program: &str,
    every_event: bool,
) -> Result<ThresholdReport, String> {
    search(
        sc,
        original_text,
        cfg,
        program,
        Scope::Smallest { every_event },
    )
}

/// What a thresholds search looks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Every flip at every start.
    EveryFlip,
    /// Per family, the smallest magnitude that violates; at every event's start, or only at
    /// the decision points.
    Smallest { every_event: bool },
}

/// The smallest magnitude of one family that violates (`smallest`'s answer): the flip that
/// found it (an index into `thresholds`), or `None` where the smallest the grid has (1 µs, a
/// step of 1 ms) already violates at some start.
#[derive(Clone, Debug)]
pub struct Least {
    pub kind: String,
    pub target: String,
    pub unit: Unit,
    /// Signed, as `Threshold::violates_at`.
    pub violates_at: i64,
    pub at: SimTime,
    pub threshold: Option<usize>,
}

impl ThresholdReport {
    /// Per family, the smallest violating magnitude found (by |magnitude|; the earliest
    /// start among equals).
    pub fn least(&self) -> Vec<Least> {
        let mut out: BTreeMap<(String, String), Least> = BTreeMap::new();
        let mut offer = |l: Least| {
            let e = out
                .entry((l.kind.clone(), l.target.clone()))
                .or_insert_with(|| l.clone());
            if l.violates_at.abs() < e.violates_at.abs() {
                *e = l;
            }
        };
        for (i, t) in self.thresholds.iter().enumerate() {
            offer(Least {
                kind: t.kind.clone(),
                target: t.target.clone(),
                unit: t.unit,
                violates_at: t.violates_at,
                at: t.at,
                threshold: Some(i),
            });
        }
        for p in self
            .pieces
            .iter()
            .filter(|p| p.violated_at_lo && !p.inconclusive)
        {
            offer(Least {
                kind: p.kind.clone(),
                target: p.target.clone(),
                unit: p.unit,
                violates_at: p.lo,
                at: p.at,
                threshold: None,
            });
        }
        out.into_values().collect()
    }
}

fn search(
    sc: &Scenario,
    original_text: &str,
    cfg: &ExploreConfig,
    program: &str,
    scope: Scope,
) -> Result<ThresholdReport, String> {
    let (s, base) = Search::new(sc, cfg, None)?;
    let mut report = ThresholdReport {
        model: sc.name.clone(),
        seed: cfg.seed,
        ..ThresholdReport::default()
    };
    // The starts, in passes: looking for the smallest at every event, the decision points
    // go first (on their own they find it in the catalogue's models, at a tenth of the
    // runs), so the every-event pass has its ranges cut to below what they found.
    let passes: &[bool] = match scope {
        Scope::EveryFlip => &[true],
        Scope::Smallest { every_event: false } => &[false],
        Scope::Smallest { every_event: true } => &[false, true],
    };
    let names = s.names.clone();
    let name = |p: ProcId| names[p.index()].clone();
    // Per family, the instant (or step) its last flip was found at: the next start's guess.
    let mut last: BTreeMap<(String, String), (SimTime, i64)> = BTreeMap::new();
    // `Scope::Smallest`: per family, the smallest violating magnitude so far (signed).
    let mut least: BTreeMap<(String, String), i64> = BTreeMap::new();
    // Starts an earlier pass ran.
    type StartId = (
        SimTime,
        &'static str,
        ProcId,
        crate::sim::decision::DecisionKind,
        Option<ProcId>,
    );
    let mut ran: std::collections::BTreeSet<StartId> = Default::default();
    'passes: for (pass, &arrivals) in passes.iter().enumerate() {
        let mut probe = base.clone();
        probe.log_decisions();
        let points = s.points(probe, None, sc.limits.max_time, arrivals);
        let mut cursor = base.clone();
        cursor.stop_logging_decisions();
        for (p, menu) in points {
            // One point of a run is one decision: the same start met again in a later pass.
            let id = (
                p.open_at,
                p.label,
                p.decision.proc,
                p.decision.kind,
                p.decision.peer,
            );
            if !ran.insert(id) && pass > 0 {
                continue;
            }
            let stop_at = SimTime(p.open_at.0 - 1);
            if cursor.now() < stop_at && cursor.run_until(stop_at).is_some() {
                break;
            }
            for (key, fam) in families(&s, &menu, &name) {
                let summary = report.families.entry(key.clone()).or_default();
                summary.starts += 1;
                summary.max_text = fam.unit.text(fam.max);
                let res = fam.unit.resolution();
                let lo = res * fam.max.signum();
                // Looking for the smallest only: nothing at or above the smallest found matters.
                let max = match least.get(&key) {
                    Some(&b) if scope != Scope::EveryFlip => {
                        if b.abs() <= lo.abs() {
                            continue;
                        }
                        b - res * b.signum()
                    }
                    _ => fam.max,
                };
                let mut grid: Vec<i64> = vec![lo, max];
                grid.extend(fam.menu.iter().copied());
                // A rate has no run to take marks from (its effect grows with the time it
                // runs): every decade of it, so that a flip between two is bracketed closer.
                if fam.unit == Unit::Drift {
                    grid.extend((1..7).map(|k| 10i64.pow(k) * max.signum()));
                }
                grid.retain(|m| m.abs() >= lo.abs() && m.abs() <= max.abs());
                grid.sort_by_key(|m| m.abs());
                grid.dedup();
                let mut pr = Probe {
                    s: &s,
                    cursor: &cursor,
                    faults: &fam.faults,
                    report: &mut report,
                    seen: BTreeMap::new(),
                    mark_with: matches!(fam.unit, Unit::Window | Unit::Latency).then_some(max),
                    start: p.open_at.0 as i64,
                    marks: Vec::new(),
                };
                // A window's run at its largest first: until the window ends, every shorter one
                // runs as it does, so the verdict can change only where the end passes one of the
                // things that run did (a client acquiring, a key leaving, a write): a grid point
                // just past each of them brackets every such change.
                if pr.verdict(max).is_err() {
                    break 'passes;
                }
                grid.extend(pr.marks.iter().map(|&d| d + res));
                grid.retain(|m| m.abs() >= lo.abs() && m.abs() <= max.abs());
                grid.sort_by_key(|m| m.abs());
                grid.dedup();
                let mut verdicts = Vec::new();
                for &m in &grid {
                    match pr.verdict(m) {
                        Ok(v) => {
                            let stop = scope != Scope::EveryFlip && matches!(v, Ok(Some(_)));
                            verdicts.push(v);
                            // Above the first violating point nothing smaller is to be found.
                            if stop {
                                break;
                            }
                        }
                        Err(OutOfBudget) => break 'passes,
                    }
                }
                grid.truncate(verdicts.len());
                let violated: Vec<bool> =
                    verdicts.iter().map(|v| matches!(v, Ok(Some(_)))).collect();
                let mut piece = Piece {
                    kind: key.0.clone(),
                    target: key.1.clone(),
                    point: p.label,
                    at: p.open_at,
                    unit: fam.unit,
                    lo,
                    max,
                    faults: at_magnitude(&fam.faults, lo),
                    violated_at_lo: violated[0],
                    inconclusive: verdicts.iter().any(Result::is_err),
                };
                let mut flips = Vec::new();
                for i in 1..grid.len() {
                    if piece.inconclusive {
                        break;
                    }
                    if violated[i] == violated[i - 1] {
                        continue;
                    }
                    // The guess: the same end instant as the last flip of this family (for a
                    // window), or the same step.
                    let guess = last.get(&key).map(|&(at, m)| match fam.unit {
                        Unit::Window | Unit::Latency => m + at.0 as i64 - p.open_at.0 as i64,
                        Unit::Step | Unit::Drift => m,
                    });
                    match pr.flip(grid[i - 1], grid[i], res, guess) {
                        Ok(Some(pair)) => flips.push(pair),
                        // A run of the bisection was cut short: where it flips is not known.
                        Ok(None) => piece.inconclusive = true,
                        Err(OutOfBudget) => break 'passes,
                    }
                }
                let seen = std::mem::take(&mut pr.seen);
                let summary = report.families.get_mut(&key).expect("entered above");
                let index = report.pieces.len();
                if piece.inconclusive {
                    summary.inconclusive += 1;
                    report.pieces.push(piece);
                    continue;
                }
                report.pieces.push(piece);
                if violated[0] {
                    least.insert(key.clone(), lo);
                }
                if flips.is_empty() {
                    if violated.iter().all(|&v| v) {
                        summary.always_violates += 1;
                    } else {
                        summary.always_holds += 1;
                    }
                    continue;
                }
                summary.flipping += 1;
                for (a, b) in flips {
                    let verdict = |m: i64| seen.get(&m).cloned().and_then(Result::ok).flatten();
                    let (holds_at, violates_at, property) = match (verdict(a), verdict(b)) {
                        (None, Some(prop)) => (a, b, prop),
                        (Some(prop), None) => (b, a, prop),
                        _ => unreachable!("a flip's two neighbours have two verdicts"),
                    };
                    last.insert(key.clone(), (p.open_at, violates_at));
                    let e = least.entry(key.clone()).or_insert(violates_at);
                    if violates_at.abs() < e.abs() {
                        *e = violates_at;
                    }
                    report.thresholds.push(Threshold {
                        kind: key.0.clone(),
                        target: key.1.clone(),
                        point: p.label,
                        at: p.open_at,
                        unit: fam.unit,
                        holds_at,
                        violates_at,
                        holds: at_magnitude(&fam.faults, holds_at),
                        violates: at_magnitude(&fam.faults, violates_at),
                        property,
                        piece: index,
                    });
                }
            }
        }
    }
    confirm(&s, &mut report, original_text, &name, program)?;
    Ok(report)
}

/// The `--set` words that turn the model's other fault sources off and script `faults`
/// (after the faults kept with `--keep-scripted`), as `explore`'s base run has them.
fn replay_sets(s: &Search<'_>, faults: &[Fault], name: &dyn Fn(ProcId) -> String) -> Vec<String> {
    let mut entries: Vec<String> = if s.cfg.keep_scripted {
        s.sc.model.faults.iter().map(fault_ron).collect()
    } else {
        Vec::new()
    };
    entries.extend(
        faults
            .iter()
            .map(|f| fault_ron(&FaultEntry::realised(f, name))),
    );
    let mut sets = vec![format!("faults=[{}]", entries.join(", "))];
    if !s.sc.model.random_faults.is_empty() {
        sets.push("random_faults=[]".into());
    }
    if s.sc.model.swarm.is_some() {
        sets.push("swarm=None".into());
    }
    if !s.sc.model.triggers.is_empty() {
        sets.push("triggers=[]".into());
    }
    sets
}

/// The command that runs `faults` alone from time 0, as `explore`'s base run has the model.
fn command(s: &Search<'_>, sets: &[String], program: &str) -> String {
    let words: String = sets
        .iter()
        .map(|a| format!(" --set {}", shell_word(a)))
        .collect();
    format!(
        "{} run {}{} --seed {}{words}",
        shell_word(program),
        shell_word(&s.sc.path),
        s.sc.replay_flags,
        s.cfg.seed
    )
}

/// Every flip's two replay commands; each family's smallest flip's commands are run again
/// from time 0, as the command would run them, to confirm them.
fn confirm(
    s: &Search<'_>,
    report: &mut ThresholdReport,
    original_text: &str,
    name: &dyn Fn(ProcId) -> String,
    program: &str,
) -> Result<(), String> {
    let mut smallest: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (i, t) in report.thresholds.iter().enumerate() {
        let e = smallest
            .entry((t.kind.clone(), t.target.clone()))
            .or_insert(i);
        if t.boundary().abs() < report.thresholds[*e].boundary().abs() {
            *e = i;
        }
    }
    let sc = s.sc;
    for (i, t) in report.thresholds.iter().enumerate() {
        let check = smallest.values().any(|&j| j == i);
        let mut pair = Vec::new();
        for faults in [&t.holds, &t.violates] {
            let sets = replay_sets(s, faults, name);
            let violated = if check {
                let parsed: Vec<crate::scenario::overrides::Override> = sets
                    .iter()
                    .map(|a| a.parse())
                    .collect::<Result<_, String>>()?;
                let (read, _) = crate::scenario::overrides::load_with(
                    &sc.name,
                    &sc.path,
                    original_text,
                    &parsed,
                )?;
                let run = crate::explore::run_world(&read, s.cfg.seed, crate::sim::TraceMode::Off);
                Some(run.0.violated())
            } else {
                None
            };
            pair.push((command(s, &sets, program), violated));
        }
        let (violates_cmd, v) = pair.pop().expect("two commands");
        let (holds_cmd, h) = pair.pop().expect("two commands");
        report.replays.push(Replay {
            threshold: i,
            holds_cmd,
            violates_cmd,
            confirmed: match (h, v) {
                (Some(h), Some(v)) => Some(!h && v),
                _ => None,
            },
        });
    }
    Ok(())
}

/// `faults` alone from time 0 on the search's seed, to the model's duration: the first
/// property broken, `Ok(None)` if it held, `Err(())` if one of the model's budgets cut the
/// run short.
fn run_from_zero(s: &Search<'_>, faults: Vec<Fault>) -> Result<Option<String>, ()> {
    let mut w = fresh(s, faults);
    w.stop_logging_decisions();
    if Search::run_to(&mut w, s.sc.limits.max_time) {
        Err(())
    } else {
        Ok(s.check(&w).first().map(|v| v.property.to_string()))
    }
}

/// The world at time 0 with `faults` scheduled (the model's other fault sources off).
fn fresh(s: &Search<'_>, faults: Vec<Fault>) -> World {
    let placed = crate::explore::systematic::Placed {
        point: "",
        point_at: SimTime::ZERO,
        item: String::new(),
        faults,
    };
    s.fresh(std::slice::from_ref(&placed))
}

/// Flips shown per family in the text report (the JSON lines have all of them).
const SHOWN_PER_FAMILY: usize = 5;

/// The report as text, after `explore`'s own.
pub fn report_text(r: &ThresholdReport) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "thresholds of seed {} (one fault; windows to 1 µs, clock steps to 1 ms; every run to the model's duration): {} runs",
        r.seed, r.runs
    );
    for ((kind, target), f) in &r.families {
        let _ = writeln!(
            t,
            "  {kind} of {target} (up to {}): {} starts; the verdict flips at {}, violates at every magnitude at {}, holds at every one at {}",
            f.max_text, f.starts, f.flipping, f.always_violates, f.always_holds
        );
        if f.inconclusive > 0 {
            let _ = writeln!(
                t,
                "    at {} starts a run was cut short by a budget of the model: they claim nothing",
                f.inconclusive
            );
        }
        let mut mine: Vec<(usize, &Threshold)> = r
            .thresholds
            .iter()
            .enumerate()
            .filter(|(_, x)| x.kind == *kind && x.target == *target)
            .collect();
        mine.sort_by_key(|(_, x)| (x.boundary().abs(), x.at));
        for (_, x) in mine.iter().take(SHOWN_PER_FAMILY) {
            let _ = writeln!(
                t,
                "    from {} ({}): {} ({})",
                fmt_duration_ns(x.at.0),
                x.point,
                x.sentence(),
                x.property
            );
        }
        if mine.len() > SHOWN_PER_FAMILY {
            let _ = writeln!(
                t,
                "    … and {} more flips (--json lists them all)",
                mine.len() - SHOWN_PER_FAMILY
            );
        }
        if let Some(rp) = r
            .replays
            .iter()
            .find(|rp| mine.first().is_some_and(|(i, _)| *i == rp.threshold))
        {
            let _ = writeln!(t, "    holds:    {}", rp.holds_cmd);
            let _ = writeln!(t, "    violates: {}", rp.violates_cmd);
            if rp.confirmed == Some(false) {
                let _ = writeln!(
                    t,
                    "    (run from time 0, these two commands do not hold and violate as the flip found: the run past the fault differs)"
                );
            }
        }
    }
    if r.budget_hit {
        let _ = writeln!(
            t,
            "thresholds: INCONCLUSIVE — the budget of runs stopped them after {} runs (--budget)",
            r.runs
        );
    }
    if r.inconclusive_runs > 0 {
        let _ = writeln!(
            t,
            "thresholds: {} runs stopped on a budget of the model; no flip next to one is reported",
            r.inconclusive_runs
        );
    }
    t
}

/// One JSON line per flip: `{"threshold": {...}}`.
pub fn report_json_lines(r: &ThresholdReport) -> Vec<serde_json::Value> {
    r.thresholds
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let rp = r.replays.iter().find(|rp| rp.threshold == i);
            // A step's magnitude is a delta in ms; in ns here, as every other time. A drift's
            // is a rate: no ns (`boundary` and `unit` give every magnitude as counted).
            let ns = |m: i64| match x.unit {
                Unit::Window | Unit::Latency => Some(m),
                Unit::Step => Some(m * crate::time::NS_PER_MS as i64),
                Unit::Drift => None,
            };
            let mut o = serde_json::json!({
                "kind": x.kind,
                "target": x.target,
                "point": x.point,
                "at_ns": x.at.0,
                "boundary_ns": ns(x.boundary()),
                "holds_ns": ns(x.holds_at),
                "boundary": x.boundary(),
                "unit": x.unit.name(),
                "violates": if x.violates_above() { "above" } else { "below" },
                "property": x.property,
                "sentence": x.sentence(),
            });
            if let Some(rp) = rp {
                o["replay_holds"] = rp.holds_cmd.clone().into();
                o["replay_violates"] = rp.violates_cmd.clone().into();
                o["replay_confirmed"] = rp.confirmed.into();
            }
            serde_json::json!({ "threshold": o })
        })
        .collect()
}

/// The last JSON line: what the thresholds covered.
pub fn summary_json(r: &ThresholdReport) -> serde_json::Value {
    serde_json::json!({ "thresholds_summary": {
        "model": r.model,
        "seed": r.seed,
        "runs": r.runs,
        "flips": r.thresholds.len(),
        "budget_hit": r.budget_hit,
        "inconclusive_runs": r.inconclusive_runs,
        "families": r.families.iter().map(|((kind, target), f)| serde_json::json!({
            "kind": kind, "target": target, "max": f.max_text, "starts": f.starts,
            "flipping": f.flipping, "always_violates": f.always_violates,
            "always_holds": f.always_holds, "inconclusive": f.inconclusive,
        })).collect::<Vec<_>>(),
    }})
}

/// The verdict of each list of faults run alone from time 0 on `cfg.seed`, as the thresholds
/// judge a run (the model's other fault sources off, its scripted faults kept with
/// `--keep-scripted`): the first property broken, `Ok(None)` if it held, `Err(())` if one of
/// the model's budgets cut the run short. For checking the thresholds against runs of
/// magnitudes they did not try (tests/thresholds.rs).
pub fn verdicts_from_zero(
    sc: &Scenario,
    cfg: &ExploreConfig,
    runs: &[Vec<Fault>],
) -> Result<Vec<Result<Option<String>, ()>>, String> {
    let (s, _) = Search::new(sc, cfg, None)?;
    Ok(runs
        .iter()
        .map(|faults| run_from_zero(&s, faults.clone()))
        .collect())
}

/// How much smaller one fault of a violating run would have to be for the run to hold, the
/// others kept as they were (`replay --format html` says it beside the violation).
#[derive(Clone, Debug)]
pub struct Counterfactual {
    /// The fault as the timeline words it, and when it opened (the stepper's step there
    /// says the sentence too).
    pub fault: String,
    pub at: SimTime,
    pub unit: Unit,
    /// Its magnitude in the run.
    pub actual: i64,
    /// The largest magnitude below it at which the run holds (the smallest that still
    /// violates is within the unit's resolution above it); `None`: even the smallest
    /// violates — shrinking this fault alone does not save the run.
    pub holds_at: Option<i64>,
}

impl Counterfactual {
    /// "pause c1 for 11.2s: 3.945312s shorter and the run holds".
    pub fn sentence(&self) -> String {
        let (smaller, what) = match self.unit {
            Unit::Window => ("shorter", "no shorter window"),
            Unit::Step => ("smaller", "no smaller step"),
            Unit::Drift => ("smaller", "no smaller drift"),
            Unit::Latency => ("smaller", "no smaller extra latency"),
        };
        match self.holds_at {
            Some(h) => {
                let by = (self.actual - h).abs();
                let by = match self.unit {
                    Unit::Window | Unit::Latency => fmt_duration_us(by as u64),
                    Unit::Step => format!("{by}ms"),
                    Unit::Drift => format!("{by}ppm"),
                };
                format!("{}: {by} {smaller} and the run holds", self.fault)
            }
            None => format!(
                "{}: {what} of it alone makes the run hold (at its smallest, {}, the run still violates)",
                self.fault,
                self.unit
                    .text(self.unit.resolution() * self.actual.signum())
            ),
        }
    }
}

/// Most runs the counterfactuals of one run may start (each fault's bisection takes about
/// 25 to 35).
const COUNTERFACTUAL_RUNS: usize = 400;

/// For each fault of `faults` (a violating run's realised schedule) that has a magnitude,
/// the largest smaller one at which the run, run again from time 0 with the others as they
/// were, holds — found by bisection to 1 µs (a clock step to 1 ms). Empty when the faults
/// alone do not replay a violation (the model's triggers or swarm made it), or when the
/// model cannot be re-run that way.
pub fn counterfactuals(
    sc: &Scenario,
    seed: u64,
    faults: &[Fault],
    name: &dyn Fn(ProcId) -> String,
) -> Vec<Counterfactual> {
    let cfg = ExploreConfig {
        faults: 1,
        seed,
        ..ExploreConfig::default()
    };
    let Ok((s, _)) = Search::new(sc, &cfg, None) else {
        return Vec::new();
    };
    let mut runs = 0usize;
    let mut violates = |fs: Vec<Fault>| -> Option<bool> {
        runs += 1;
        if runs > COUNTERFACTUAL_RUNS {
            return None;
        }
        run_from_zero(&s, fs).ok().map(|v| v.is_some())
    };
    // The faults alone must give the violation, or what follows is about another run.
    if violates(faults.to_vec()) != Some(true) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, f) in faults.iter().enumerate() {
        let Some((unit, actual)) = f.magnitude() else {
            continue;
        };
        let res = unit.resolution();
        let at = |m: i64| {
            let mut fs = faults.to_vec();
            fs[i] = at_magnitude(std::slice::from_ref(&faults[i]), m).remove(0);
            fs
        };
        let lo = res * actual.signum();
        if lo.abs() >= actual.abs() {
            continue;
        }
        let holds_at = match violates(at(lo)) {
            None => break,
            Some(true) => None,
            Some(false) => {
                // Invariant: `a` holds, `b` violates.
                let (mut a, mut b) = (lo, actual);
                let mut cut = false;
                while (b - a).abs() > res {
                    let mid = a + (b - a) / 2;
                    match violates(at(mid)) {
                        None => {
                            cut = true;
                            break;
                        }
                        Some(true) => b = mid,
                        Some(false) => a = mid,
                    }
                }
                if cut {
                    break;
                }
                Some(a)
            }
        };
        out.push(Counterfactual {
            fault: f.describe(name),
            at: f.at,
            unit,
            actual,
            holds_at,
        });
    }
    out
}
