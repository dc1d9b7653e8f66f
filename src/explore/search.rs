//! `search MODEL`: a search for a violation steered by how close each run came to one.
//!
//! A random sweep draws every seed's faults afresh and learns nothing from a run that nearly
//! broke. This search keeps the runs that came closest and moves their faults:
//!
//! 1. **Closeness.** A run's closeness is the smaller of its smallest safety margin (a lost
//!    key: when it left its node minus when its holder believed it would, `check::margin`)
//!    and its smallest release slack (a key released in time: the holder's believed end minus
//!    its release, `margin::release_slack`). Both are nanoseconds on the same axis: the lower,
//!    the nearer a holder came to acting past its lock.
//! 2. **Start.** Seeds `0..start_seeds` run as a sweep runs them; their realised fault
//!    schedules are the starting points, best first.
//! 3. **Climb.** From the best schedule, one fault at a time moves its start by a step drawn
//!    from ±σ (σ from a second down to a millisecond, halved after failures, grown after a
//!    gain), the same seed otherwise (network and client randomness). A move is kept when it
//!    lowers the closeness. After a stretch without gain the climb restarts from the next
//!    starting point (round-robin over the best few).
//!    A model that draws no fault has nothing to move: its budget runs further seeds.
//! 4. **Stop** at the first violating run, which is then replayed from time 0 as a scripted
//!    model to confirm it, or when the budget of runs is spent (the closest run is reported).
//!
//! Only the drawn faults' start times move, within the model's duration; durations,
//! magnitudes and targets are the realised ones (they were drawn from the model's declared
//! ranges), and the model's scripted faults (its scenario) stay where they are. Every draw comes from
//! the named stream `search` of the search's seed: the same model and seed give the same
//! search.

use crate::check::margin::release_slack;
use crate::explore::minimize::scripted_text;
use crate::explore::{RunOutcome, run_world};
use crate::rng::{Prng, Seed};
use crate::scenario::Scenario;
use crate::scenario::faults::FaultEntry;
use crate::sim::{Fault, TraceMode};
use crate::time::{NS_PER_MS, ProcId, SimTime};

/// Runs a search starts unless told otherwise.
pub const DEFAULT_BUDGET_RUNS: u64 = 2_000;

#[derive(Clone, Debug)]
pub struct SearchConfig {
    pub budget_runs: u64,
    /// Seeds run first, as a sweep runs them: the starting points.
    pub start_seeds: u64,
    /// Seed of the search's own draws (not of the runs).
    pub seed: u64,
}

impl Default for SearchConfig {
    fn default() -> SearchConfig {
        SearchConfig {
            budget_runs: DEFAULT_BUDGET_RUNS,
            start_seeds: 32,
            seed: 0,
        }
    }
}

/// A run's schedule: the seed it runs (network and clients) and its faults.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub seed: u64,
    pub faults: Vec<Fault>,
    /// Closeness in ns (`i64::MAX`: no holding to measure).
    pub closeness_ns: i64,
    /// When the closest holding's key left or was released.
    pub closeness_at: Option<SimTime>,
    /// The run (1-based, in the order the search ran them) that measured it.
    pub run: u64,
    /// Whether it is a seed's own schedule (a starting point) or a moved one.
    pub moved: bool,
}

/// A violating schedule.
#[derive(Clone, Debug)]
pub struct Found {
    pub candidate: Candidate,
    pub property: String,
    pub message: String,
    pub at: SimTime,
    pub specs: Vec<FaultEntry>,
    /// The scripted model of the schedule.
    pub model_text: String,
    /// Replaying the scripted model from time 0 violated the same property.
    pub replay_confirms: bool,
}

#[derive(Clone, Debug)]
pub struct SearchReport {
    pub model: String,
    pub runs: u64,
    pub budget_runs: u64,
    pub start_seeds: u64,
    pub found: Option<Found>,
    /// The closest run that did not violate.
    pub closest: Option<Candidate>,
    /// Moves kept, of those tried.
    pub moves_kept: u64,
    pub moves_tried: u64,
    /// Runs that stopped on a budget (events, history) before the model's duration: what
    /// held in them held only as far as they ran.
    pub inconclusive_runs: u64,
    pub wall_s: f64,
}

/// Closeness of one run: the smaller of its smallest margin and its smallest release slack.
fn closeness(o: &RunOutcome, w: &crate::sim::World) -> (i64, Option<SimTime>) {
    let slack = release_slack(&w.history);
    let mut best = (i64::MAX, None);
    if let Some(m) = o.min_margin_ns {
        best = (m, o.min_margin_at);
    }
    if let Some((s, at)) = slack
        && s < best.0
    {
        best = (s, Some(at));
    }
    best
}

struct Searcher<'a> {
    sc: &'a Scenario,
    text: &'a str,
    cfg: &'a SearchConfig,
    rng: Prng,
    report: SearchReport,
    names: Vec<String>,
    /// The model's scripted faults as the loop runs them: the scenario, never moved.
    scripted: Vec<Fault>,
}

impl Searcher<'_> {
    fn spent(&self) -> bool {
        self.report.runs >= self.cfg.budget_runs
    }

    fn specs(&self, faults: &[Fault]) -> Vec<FaultEntry> {
        let name = |p: ProcId| self.names[p.index()].clone();
        faults
            .iter()
            .map(|f| FaultEntry::realised(f, &name))
            .collect()
    }

    /// Runs `seed` with `faults` (None: the seed's own draw), noting the closest run. `None`
    /// once a run violated: the search is over, its `found` set.
    fn run(&mut self, seed: u64, faults: Option<&[Fault]>) -> Result<Option<Candidate>, String> {
        self.report.runs += 1;
        let run = self.report.runs;
        let scripted;
        let sc = match faults {
            None => self.sc,
            Some(fs) => {
                scripted = self
                    .sc
                    .with_scripted_faults(self.specs(fs))
                    .map_err(|e| format!("a moved schedule is not a valid model: {e:?}"))?;
                &scripted
            }
        };
        let (o, w) = run_world(sc, seed, TraceMode::Off);
        self.report.inconclusive_runs += u64::from(o.inconclusive());
        if self.names.is_empty() {
            self.names = w.names();
        }
        let (c, at) = closeness(&o, &w);
        let cand = Candidate {
            seed,
            faults: o.faults.clone(),
            closeness_ns: c,
            closeness_at: at,
            run,
            moved: faults.is_some(),
        };
        if let Some(v) = o.violations.first() {
            self.report.found = Some(self.found(cand, v)?);
            return Ok(None);
        }
        self.note_closest(&cand);
        Ok(Some(cand))
    }

    /// A violating schedule, as a scripted model replayed from time 0 to confirm it.
    fn found(&self, cand: Candidate, v: &crate::check::Violation) -> Result<Found, String> {
        let specs = self.specs(&cand.faults);
        let header = format!(
            "// Found by `distlock-sim search` after {} runs: seed {}'s schedule{}, as scripted faults.\n",
            cand.run,
            cand.seed,
            if cand.moved {
                " with fault starts moved"
            } else {
                ""
            }
        );
        let model_text = scripted_text(self.text, &specs, &header);
        let scripted = self
            .sc
            .with_scripted_faults(specs.clone())
            .map_err(|e| format!("the found schedule is not a valid model: {e:?}"))?;
        let (again, _) = run_world(&scripted, cand.seed, TraceMode::Off);
        let replay_confirms = again.violations.iter().any(|x| x.property == v.property);
        Ok(Found {
            property: v.property.name().to_string(),
            message: v.message.clone(),
            at: v.at,
            candidate: cand,
            specs,
            model_text,
            replay_confirms,
        })
    }

    fn note_closest(&mut self, c: &Candidate) {
        if self
            .report
            .closest
            .as_ref()
            .is_none_or(|b| c.closeness_ns < b.closeness_ns)
        {
            self.report.closest = Some(c.clone());
        }
    }

    /// The faults of a schedule the search may move: those drawn, not the model's scripted
    /// ones.
    fn movable(&self, faults: &[Fault]) -> Vec<usize> {
        (0..faults.len())
            .filter(|&i| !self.scripted.contains(&faults[i]))
            .collect()
    }

    /// `faults` with one drawn fault's start moved by a step drawn from ±σ, kept inside the
    /// run.
    fn moved(&mut self, faults: &[Fault], sigma_ns: u64) -> Vec<Fault> {
        let mut out = faults.to_vec();
        let movable = self.movable(faults);
        let i = movable[self.rng.below(movable.len() as u64) as usize];
        let max_ns = self.sc.limits.max_time.0.saturating_sub(1) as i64;
        let step = self.rng.range_i64(-(sigma_ns as i64), sigma_ns as i64);
        let at = (out[i].at.0 as i64 + step).clamp(0, max_ns);
        out[i].at = SimTime(at as u64);
        out
    }

    fn search(mut self) -> Result<SearchReport, String> {
        // Starting points: the schedules of seeds 0..start_seeds as drawn. A model that
        // draws no fault has nothing to move: the rest of its budget runs further seeds, as a
        // sweep would.
        let mut starts: Vec<Candidate> = Vec::new();
        let mut seed = 0;
        while !self.spent() && (seed < self.cfg.start_seeds || starts.is_empty()) {
            let Some(c) = self.run(seed, None)? else {
                return Ok(self.report);
            };
            if seed < self.cfg.start_seeds
                && !self.movable(&c.faults).is_empty()
                && c.closeness_ns < i64::MAX
            {
                starts.push(c);
            }
            seed += 1;
        }
        starts.sort_by_key(|c| (c.closeness_ns, c.seed));
        starts.truncate(4);
        let mut next_start = 0;
        while !self.spent() && !starts.is_empty() {
            let mut current = starts[next_start % starts.len()].clone();
            next_start += 1;
            let mut sigma_ns: u64 = 1_000 * NS_PER_MS;
            let (mut fails, mut since_gain) = (0u32, 0u32);
            while !self.spent() && sigma_ns >= NS_PER_MS && since_gain < 60 {
                let faults = self.moved(&current.faults, sigma_ns);
                self.report.moves_tried += 1;
                let Some(c) = self.run(current.seed, Some(&faults))? else {
                    return Ok(self.report);
                };
                if c.closeness_ns < current.closeness_ns {
                    self.report.moves_kept += 1;
                    current = c;
                    sigma_ns = sigma_ns.saturating_mul(3) / 2;
                    (fails, since_gain) = (0, 0);
                } else {
                    fails += 1;
                    since_gain += 1;
                    if fails >= 8 {
                        sigma_ns /= 2;
                        fails = 0;
                    }
                }
            }
        }
        Ok(self.report)
    }
}

/// Searches `sc` (whose model text is `text`) for a violation within `cfg.budget_runs` runs.
pub fn search(sc: &Scenario, text: &str, cfg: &SearchConfig) -> Result<SearchReport, String> {
    if cfg.budget_runs == 0 {
        return Err("search: a budget of 0 runs searches nothing".into());
    }
    let s = Searcher {
        sc,
        text,
        cfg,
        rng: Seed(cfg.seed).stream("search", 0),
        report: SearchReport {
            model: sc.name.clone(),
            runs: 0,
            budget_runs: cfg.budget_runs,
            start_seeds: cfg.start_seeds,
            found: None,
            closest: None,
            moves_kept: 0,
            moves_tried: 0,
            inconclusive_runs: 0,
            wall_s: 0.0,
        },
        names: Vec::new(),
        scripted: sc.model.faults.iter().map(|f| sc.scripted(f)).collect(),
    };
    s.search()
}

fn closeness_text(c: &Candidate) -> String {
    if c.closeness_ns == i64::MAX {
        return "no holding to measure".into();
    }
    let at = c
        .closeness_at
        .map(|t| format!(" at {t}"))
        .unwrap_or_default();
    format!(
        "{}{at} (seed {}, run {}{})",
        crate::time::fmt_signed_ns(c.closeness_ns),
        c.seed,
        c.run,
        if c.moved { ", faults moved" } else { "" }
    )
}

/// The report as text; `saved`: where the scripted model was written.
pub fn report_text(r: &SearchReport, saved: Option<&str>, program: &str) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "search {}: {} runs of a budget of {} (starting points: seeds 0..{}; then fault starts moved toward the closest approach)",
        r.model, r.runs, r.budget_runs, r.start_seeds
    );
    let _ = writeln!(
        s,
        "closeness: the smaller of a run's smallest safety margin and its smallest release slack (believed end - release); moves kept {} of {}",
        r.moves_kept, r.moves_tried
    );
    match &r.found {
        Some(f) => {
            let _ = writeln!(
                s,
                "VIOLATED after {} runs: {} at {}: {}",
                f.candidate.run, f.property, f.at, f.message
            );
            let _ = writeln!(
                s,
                "  seed {}'s schedule{}; replayed from time 0 as a scripted model: {}",
                f.candidate.seed,
                if f.candidate.moved {
                    " with fault starts moved"
                } else {
                    " as drawn"
                },
                if f.replay_confirms {
                    "violates again"
                } else {
                    "DOES NOT violate (report this)"
                }
            );
            match saved {
                Some(p) => {
                    let _ = writeln!(s, "scripted model written to {p}");
                    let _ = writeln!(
                        s,
                        "replay: {program} replay {p} --seed {}",
                        f.candidate.seed
                    );
                }
                None => {
                    let _ = writeln!(s, "as a scripted model:\n{}", f.model_text);
                    let _ = writeln!(
                        s,
                        "replay: {program} replay SEARCHED.ron --seed {} (the model above saved as SEARCHED.ron, or --out FILE)",
                        f.candidate.seed
                    );
                }
            }
        }
        None => {
            let closest = r
                .closest
                .as_ref()
                .map_or_else(|| "none measured".to_string(), closeness_text);
            let _ = writeln!(
                s,
                "no violation in {} runs; closest approach: {closest}",
                r.runs
            );
        }
    }
    if r.inconclusive_runs > 0 {
        let _ = writeln!(
            s,
            "inconclusive: {} of the runs stopped on a budget before the model's duration (held only as far as they ran)",
            r.inconclusive_runs
        );
    }
    s
}

/// The report as one JSON object.
pub fn report_json(r: &SearchReport) -> serde_json::Value {
    let cand = |c: &Candidate| {
        serde_json::json!({
            "seed": c.seed,
            "run": c.run,
            "moved": c.moved,
            "closeness_ns": (c.closeness_ns != i64::MAX).then_some(c.closeness_ns),
            "closeness_at_ns": c.closeness_at.map(|t| t.0),
        })
    };
    serde_json::json!({
        "model": r.model,
        "runs": r.runs,
        "budget_runs": r.budget_runs,
        "start_seeds": r.start_seeds,
        "moves_kept": r.moves_kept,
        "moves_tried": r.moves_tried,
        "inconclusive_runs": r.inconclusive_runs,
        "found": r.found.as_ref().map(|f| serde_json::json!({
            "run": f.candidate.run,
            "seed": f.candidate.seed,
            "moved": f.candidate.moved,
            "property": f.property,
            "at_ns": f.at.0,
            "message": f.message,
            "replay_confirms": f.replay_confirms,
            "model_text": f.model_text,
        })),
        "closest": r.closest.as_ref().map(cand),
        "wall_s": (r.wall_s * 1000.0).round() / 1000.0,
    })
}
