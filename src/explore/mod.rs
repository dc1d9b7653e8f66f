//! Running models and searching them: one seed, sweeps over many seeds in parallel with
//! their rates, minimisation, the steered search, systematic exploration, thresholds and
//! safety maps. What a person reads of a run (timelines, pages, the stepper, the site,
//! `serve`, exports, the pitfall guide) is `view`, one layer up.

pub mod determinism;
pub mod map;
pub mod minimize;
pub mod rate;
pub mod search;
pub mod stopping;
pub mod systematic;
pub mod threshold;
pub mod variants;

use std::collections::BTreeMap;
use std::ops::Range;

use rayon::prelude::*;

use crate::check::witness::{Hazard, Hazards};
use crate::check::{Property, Violation};
use crate::scenario::Scenario;
use crate::sim::{Fault, RunEnd, TraceMode, World};
use crate::time::SimTime;
use rate::ClusterRatio;

/// The result of one seed.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub seed: u64,
    pub end: RunEnd,
    /// True time at which the run stopped (the duration, or earlier on a budget).
    pub ended_at: SimTime,
    pub violations: Vec<Violation>,
    pub events: u64,
    pub acquisitions: u64,
    /// The fault schedule realised by this seed (scripted and drawn).
    pub faults: Vec<Fault>,
    /// Digest of the trace (0 when tracing was off).
    pub trace_digest: u64,
    /// Longest time two clients believed they held the same lock at once (ns).
    pub longest_overlap_ns: u64,
    /// Total time with two or more holders (ns).
    pub total_overlap_ns: u64,
    /// Safety margins of acquisitions whose key was lost (see `check::margin`): the smallest,
    /// and a histogram over `MARGIN_BUCKETS`.
    pub min_margin_ns: Option<i64>,
    /// When the key of the smallest margin first left a node.
    pub min_margin_at: Option<SimTime>,
    pub margin_histogram: [u64; 6],
    /// The hazards this seed reached (`check::witness`).
    pub witnesses: Hazards,
    /// Per checked property, the acquisitions that took part in a violation of it
    /// (`Checks::occurrences`).
    /// (`None` for liveness, which is judged per lock, not per acquisition.)
    pub occurrences: Vec<(Property, Option<u64>)>,
    /// The closest handover between two clients' holdings: (ns the lock stood free, when
    /// the second began).
    pub closest_handover: Option<(u64, SimTime)>,
}

impl RunOutcome {
    pub fn violated(&self) -> bool {
        !self.violations.is_empty()
    }

    /// Stopped on a budget before the model's duration (see `RunEnd::is_inconclusive`).
    pub fn inconclusive(&self) -> bool {
        self.end.is_inconclusive()
    }

    /// The hazards the model requires that this seed did not reach.
    pub fn missing_witnesses(&self, sc: &Scenario) -> Vec<Hazard> {
        sc.model
            .witness
            .iter()
            .map(|h| h.0)
            .filter(|h| !self.witnesses.contains(*h))
            .collect()
    }
}

/// Runs one seed and checks it. The world is returned for rendering, with its history kept
/// whole.
pub fn run_world(sc: &Scenario, seed: u64, trace: TraceMode) -> (RunOutcome, World) {
    run_world_with(sc, seed, trace, None)
}

/// `create_dir_all`, its error saying the real problem: the OS says "File exists" when the
/// directory is a file, and "Not a directory" for one under a file; here the message names
/// the file in the way (`out/x: out is a file, not a directory`).
pub fn create_dir_all(dir: &std::path::Path) -> Result<(), String> {
    let Err(e) = std::fs::create_dir_all(dir) else {
        return Ok(());
    };
    let in_the_way = dir
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .find(|a| a.exists() && !a.is_dir());
    Err(match in_the_way {
        Some(f) if f == dir => format!("{}: a file, not a directory", dir.display()),
        Some(f) => format!(
            "{}: {} is a file, not a directory",
            dir.display(),
            f.display()
        ),
        None => format!("{}: {e}", dir.display()),
    })
}

/// Events between two calls of `run_world_while`'s `go_on`: often enough that a stop is
/// noticed within milliseconds, rarely enough that the call costs nothing.
pub const GO_ON_EVERY_EVENTS: u64 = 4096;

/// `run_world`, asking `go_on` every [`GO_ON_EVERY_EVENTS`] events whether to go on; `None`
/// when it said no (`serve`: the client left, or the request spent its budget). The run
/// itself is the same: `go_on` only decides whether it is finished or dropped.
pub fn run_world_while(
    sc: &Scenario,
    seed: u64,
    trace: TraceMode,
    go_on: &mut dyn FnMut() -> bool,
) -> Option<(RunOutcome, World)> {
    let (mut world, faults) = sc.build_with(seed, trace, None);
    world.start();
    let mut n = 0u64;
    let end = loop {
        if let Some(end) = world.step() {
            break end;
        }
        n += 1;
        if n.is_multiple_of(GO_ON_EVERY_EVENTS) && !go_on() {
            return None;
        }
    };
    let mut monitor = sc.monitor();
    monitor.observe_all(&world.history);
    Some((outcome(sc, seed, end, faults, &world, monitor), world))
}

/// Runs one seed with the model's clients replaced by the user's (`Scenario::build_with`).
/// The history is kept whole (for rendering) and judged once the run is over.
pub fn run_world_with(
    sc: &Scenario,
    seed: u64,
    trace: TraceMode,
    custom: Option<&crate::scenario::clients::ClientFactory>,
) -> (RunOutcome, World) {
    let (mut world, faults) = sc.build_with(seed, trace, custom);
    let end = world.run();
    let mut monitor = sc.monitor();
    monitor.observe_all(&world.history);
    (outcome(sc, seed, end, faults, &world, monitor), world)
}

/// Runs one seed without a trace, judging its history as it is produced and keeping none of
/// it (what sweeps do): memory is what the checkers keep, not the records. The outcome is
/// the one `run_world` gives (the same monitor, fed the same records; a run whose monitor
/// fell into doubt is judged again from a kept history — see `check::monitor`).
pub fn run_seed(sc: &Scenario, seed: u64) -> RunOutcome {
    run_seed_retiring(sc, seed, crate::check::monitor::RETIRE_FROM_ENTRIES)
}

/// `run_seed`, retiring tokens from `retire_from` token-keyed entries (tests make it small
/// to retire often).
pub(crate) fn run_seed_retiring(sc: &Scenario, seed: u64, retire_from: usize) -> RunOutcome {
    match stream_seed(sc, seed, retire_from).0 {
        Some(o) => o,
        None => run_world(sc, seed, TraceMode::Off).0,
    }
}

/// One seed judged as it runs: its outcome (`None` when the monitor fell into doubt), and
/// the monitor's `retirement_stats`.
pub(crate) fn stream_seed(
    sc: &Scenario,
    seed: u64,
    retire_from: usize,
) -> (Option<RunOutcome>, (u64, usize)) {
    let (mut world, faults) = sc.build_with(seed, TraceMode::Off, None);
    world
        .history
        .stream_into(sc.monitor().retiring(retire_from).into_sink());
    let end = world.run();
    let sink = world
        .history
        .take_sink()
        .expect("a streamed history keeps its sink");
    let monitor = crate::check::monitor::Monitor::from_sink(sink);
    let stats = monitor.retirement_stats();
    if monitor.in_doubt() {
        return (None, stats);
    }
    (Some(outcome(sc, seed, end, faults, &world, monitor)), stats)
}

/// The outcome of a finished run, from what its monitor saw.
fn outcome(
    sc: &Scenario,
    seed: u64,
    end: RunEnd,
    faults: Vec<Fault>,
    world: &World,
    monitor: crate::check::monitor::Monitor,
) -> RunOutcome {
    let judged = monitor.finish();
    let (longest, total) = judged.overlaps_ns;
    assert!(!judged.doubt, "a monitor in doubt judged a run");
    let mut outcome = RunOutcome {
        seed,
        end,
        ended_at: world.now(),
        violations: sc.violations(&judged, world),
        events: world.events_handled(),
        acquisitions: judged.acquisitions,
        faults,
        trace_digest: world.trace.digest(),
        longest_overlap_ns: longest,
        total_overlap_ns: total,
        min_margin_ns: None,
        min_margin_at: None,
        margin_histogram: [0; 6],
        witnesses: judged.hazards,
        occurrences: judged.checks.occurrences(),
        closest_handover: judged.checks.closest_handover(),
    };
    outcome.margin_histogram = judged.margins.histogram;
    outcome.min_margin_ns = judged.margins.min_ns;
    outcome.min_margin_at = judged.margins.min_at;
    outcome
}

/// Which seeds of a range this shard runs: `index` of `count`, by seed modulo `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };
    pub fn contains(self, seed: u64) -> bool {
        seed % self.count == self.index
    }

    /// How many seeds of `seeds` this shard runs, without walking the range (a sweep may
    /// span a billion seeds).
    pub fn count_in(self, seeds: &Range<u64>) -> u64 {
        // Seeds below `x` with seed % count == index.
        let below = |x: u64| x / self.count + u64::from(x % self.count > self.index);
        below(seeds.end).saturating_sub(below(seeds.start))
    }

    /// The `k`-th seed of `seeds` this shard runs (`k < count_in(seeds)`).
    pub fn nth_in(self, seeds: &Range<u64>, k: u64) -> u64 {
        let r = seeds.start % self.count;
        // Written so that nothing overflows, whatever the count.
        let offset = if self.index >= r {
            self.index - r
        } else {
            self.count - r + self.index
        };
        seeds.start + offset + k * self.count
    }

    /// This shard's seeds of `seeds` in chunks of at most `CHUNK`, each as the range of
    /// their ranks (`nth_in`): a sparse shard of a huge range is not walked seed by seed.
    pub(crate) fn chunks(self, seeds: &Range<u64>) -> impl Iterator<Item = Range<u64>> {
        self.chunks_of(seeds, CHUNK)
    }

    /// `chunks`, of at most `size` seeds each.
    pub(crate) fn chunks_of(
        self,
        seeds: &Range<u64>,
        size: u64,
    ) -> impl Iterator<Item = Range<u64>> {
        let n = self.count_in(seeds);
        (0..n.div_ceil(size)).map(move |c| c * size..n.min((c + 1) * size))
    }
}

/// What a sweep found. Identical for any number of jobs (results are gathered in seed order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepSummary {
    pub seeds_run: u64,
    /// Seeds that violated each property.
    pub violations_per_property: BTreeMap<Property, u64>,
    pub first_violating_seed: Option<u64>,
    /// The first violating seed's violations (first per property).
    pub first_violations: Vec<Violation>,
    /// Seeds that violated at least one property. Only counts are kept, so that memory stays
    /// flat in the number of seeds; `sweep_each` hands every violating seed to its caller.
    pub violating_seeds: u64,
    /// The first seed that violated each property.
    pub first_seed_per_property: BTreeMap<Property, u64>,
    /// Seeds that hit the event limit before their duration (inconclusive).
    pub event_limit_seeds: u64,
    /// Seeds that stopped on any budget before their duration (`RunEnd::is_inconclusive`):
    /// what held in them held only as far as they ran.
    pub inconclusive_seeds: u64,
    /// The first inconclusive seed, how it ended and when.
    pub first_inconclusive: Option<(u64, RunEnd, SimTime)>,
    /// Seeds whose history outgrew its memory budget before their duration (inconclusive).
    pub history_limit_seeds: u64,
    pub events: u64,
    pub acquisitions: u64,
    /// The longest two-holder overlap of any seed, and that seed (the first, on ties).
    pub longest_overlap: Option<(u64, u64)>,
    /// Two-holder time summed over all seeds (ns), for the mean per seed.
    pub total_overlap_ns: u64,
    /// The smallest safety margin of any seed, and that seed.
    pub min_margin: Option<(i64, u64)>,
    /// When, in `min_margin`'s seed, the key first left a node.
    pub min_margin_at: Option<SimTime>,
    pub margin_histogram: [u64; 6],
    /// Per hazard reached by at least one seed: (seeds that reached it, the first of them).
    pub witnesses: BTreeMap<Hazard, (u64, u64)>,
    /// Per checked property, the seeds that decided it: ran to their end, or violated it
    /// before a budget stopped them (the denominator of its per-seed rate).
    pub decided_per_property: BTreeMap<Property, u64>,
    /// Per checked property, acquisitions that took part in a violation over acquisitions,
    /// per seed (`rate::ClusterRatio`).
    pub per_acquisition: BTreeMap<Property, ClusterRatio>,
    /// Two-holder time (ns) over acquisitions, per seed that ran to its end (a seed cut short
    /// by a budget would count its time short).
    pub overlap_per_acquisition: ClusterRatio,
    /// The closest handover of any seed: (ns free, seed, when the second holding began).
    pub closest_handover: Option<(u64, u64, SimTime)>,
    /// Some shard merged in was written by a build that kept none of the rate figures above:
    /// they cover only part of the seeds, and are not reported.
    pub rates_missing: bool,
}

impl SweepSummary {
    fn add(&mut self, o: RunOutcome) {
        self.seeds_run += 1;
        for &(p, k) in &o.occurrences {
            let violated = o.violations.iter().any(|v| v.property == p);
            // Inconclusive seeds decide a property only by violating it.
            if !o.inconclusive() || violated {
                *self.decided_per_property.entry(p).or_default() += 1;
                if let Some(k) = k {
                    self.per_acquisition
                        .entry(p)
                        .or_default()
                        .add(k.min(o.acquisitions), o.acquisitions);
                }
            }
        }
        if !o.inconclusive() {
            self.overlap_per_acquisition
                .add(o.total_overlap_ns, o.acquisitions);
        }
        if let Some((gap, at)) = o.closest_handover
            && self.closest_handover.is_none_or(|(g, _, _)| gap < g)
        {
            self.closest_handover = Some((gap, o.seed, at));
        }
        for h in o.witnesses.iter() {
            let e = self.witnesses.entry(h).or_insert((0, o.seed));
            e.0 += 1;
        }
        self.total_overlap_ns += o.total_overlap_ns;
        for (a, b) in self.margin_histogram.iter_mut().zip(o.margin_histogram) {
            *a += b;
        }
        if let Some(m) = o.min_margin_ns
            && self.min_margin.is_none_or(|(x, _)| m < x)
        {
            self.min_margin = Some((m, o.seed));
            self.min_margin_at = o.min_margin_at;
        }
        if o.longest_overlap_ns > 0
            && self
                .longest_overlap
                .is_none_or(|(ns, _)| o.longest_overlap_ns > ns)
        {
            self.longest_overlap = Some((o.longest_overlap_ns, o.seed));
        }
        self.events += o.events;
        self.acquisitions += o.acquisitions;
        match o.end {
            RunEnd::EventLimit => self.event_limit_seeds += 1,
            RunEnd::HistoryLimit => self.history_limit_seeds += 1,
            RunEnd::TimeLimit | RunEnd::Quiescent => {}
        }
        if o.inconclusive() {
            self.inconclusive_seeds += 1;
            self.first_inconclusive
                .get_or_insert((o.seed, o.end, o.ended_at));
        }
        if o.violated() {
            self.violating_seeds += 1;
            for v in &o.violations {
                *self.violations_per_property.entry(v.property).or_default() += 1;
                self.first_seed_per_property
                    .entry(v.property)
                    .or_insert(o.seed);
            }
            if self.first_violating_seed.is_none() {
                self.first_violating_seed = Some(o.seed);
                self.first_violations = o.violations;
            }
        }
    }

    /// Folds in the summary of other seeds (another shard of the same sweep), as if `add`
    /// had seen them too: counts add up, and each "first" is the lowest seed. `add` sees
    /// seeds in increasing order within a shard, so the earliest seed wins ties there; the
    /// same rule here makes the merge of any sharding equal the whole sweep.
    pub fn merge(&mut self, o: SweepSummary) {
        self.seeds_run += o.seeds_run;
        for (p, n) in o.violations_per_property {
            *self.violations_per_property.entry(p).or_default() += n;
        }
        for (p, s) in o.first_seed_per_property {
            let e = self.first_seed_per_property.entry(p).or_insert(s);
            *e = (*e).min(s);
        }
        if let Some(s) = o.first_violating_seed
            && self.first_violating_seed.is_none_or(|x| s < x)
        {
            self.first_violating_seed = Some(s);
            self.first_violations = o.first_violations;
        }
        self.violating_seeds += o.violating_seeds;
        self.event_limit_seeds += o.event_limit_seeds;
        self.inconclusive_seeds += o.inconclusive_seeds;
        if let Some(f) = o.first_inconclusive
            && self.first_inconclusive.is_none_or(|x| f.0 < x.0)
        {
            self.first_inconclusive = Some(f);
        }
        self.history_limit_seeds += o.history_limit_seeds;
        self.events += o.events;
        self.acquisitions += o.acquisitions;
        // The longest overlap: more ns wins, and on a tie the lower seed (as `add` keeps the
        // first of equals).
        if let Some((ns, seed)) = o.longest_overlap
            && self
                .longest_overlap
                .is_none_or(|(x, xs)| ns > x || (ns == x && seed < xs))
        {
            self.longest_overlap = Some((ns, seed));
        }
        self.total_overlap_ns += o.total_overlap_ns;
        if let Some((m, seed)) = o.min_margin
            && self
                .min_margin
                .is_none_or(|(x, xs)| m < x || (m == x && seed < xs))
        {
            self.min_margin = Some((m, seed));
            self.min_margin_at = o.min_margin_at;
        }
        for (p, n) in o.decided_per_property {
            *self.decided_per_property.entry(p).or_default() += n;
        }
        for (p, r) in o.per_acquisition {
            self.per_acquisition.entry(p).or_default().merge(r);
        }
        self.overlap_per_acquisition
            .merge(o.overlap_per_acquisition);
        if let Some((gap, seed, at)) = o.closest_handover
            && self
                .closest_handover
                .is_none_or(|(g, s, _)| gap < g || (gap == g && seed < s))
        {
            self.closest_handover = Some((gap, seed, at));
        }
        self.rates_missing |= o.rates_missing;
        for (a, b) in self.margin_histogram.iter_mut().zip(o.margin_histogram) {
            *a += b;
        }
        for (h, (n, first)) in o.witnesses {
            let e = self.witnesses.entry(h).or_insert((0, first));
            e.0 += n;
            e.1 = e.1.min(first);
        }
    }

    /// Seeds that ran to their end: where "held" is a verdict.
    pub fn conclusive_seeds(&self) -> u64 {
        self.seeds_run - self.inconclusive_seeds
    }

    /// The hazards the model requires that no seed reached. Non-empty with no violation:
    /// the sweep is vacuous (it never went through the danger it is about).
    pub fn missing_witnesses(&self, sc: &Scenario) -> Vec<Hazard> {
        sc.model
            .witness
            .iter()
            .map(|h| h.0)
            .filter(|h| !self.witnesses.contains_key(h))
            .collect()
    }

    /// No seed violated a property, but a required hazard was never reached.
    pub fn vacuous(&self, sc: &Scenario) -> bool {
        self.violating_seeds == 0 && !self.missing_witnesses(sc).is_empty()
    }

    /// A property's per-seed count: the seeds that violated it of those that decided it.
    pub fn per_seed(&self, p: Property) -> rate::Proportion {
        let n = self.decided_per_property.get(&p).copied().unwrap_or(0);
        rate::Proportion {
            // A property the model lists twice is counted twice per seed; its rate, once.
            k: self
                .violations_per_property
                .get(&p)
                .copied()
                .unwrap_or(0)
                .min(n),
            n,
        }
    }

    /// The widest per-seed half-width over the checked properties (`None`: some property
    /// not decided by any seed yet).
    pub fn widest_half_width(&self, sc: &Scenario) -> Option<f64> {
        let mut widest: f64 = 0.0;
        for p in &sc.properties {
            let r = self.per_seed(*p);
            if r.n == 0 {
                return None;
            }
            widest = widest.max(r.half_width());
        }
        Some(widest)
    }

    /// What a stopping rule reads of this summary.
    fn standing(&self, sc: &Scenario) -> stopping::Standing {
        stopping::Standing {
            seeds_run: self.seeds_run,
            widest_half_width: self.widest_half_width(sc),
            requires_witness: !sc.model.witness.is_empty(),
            witnesses_reached: self.missing_witnesses(sc).is_empty(),
        }
    }

    /// Properties violated by at least one seed.
    pub fn violated_properties(&self) -> Vec<Property> {
        self.violations_per_property.keys().copied().collect()
    }
}

/// Seeds a sweep hands to its workers at once: results are gathered (in seed order) and
/// folded per chunk, so memory stays flat in the number of seeds.
pub(crate) const CHUNK: u64 = 4096;

/// Sweeps `seeds` (restricted to `shard`) on `jobs` threads. `on_done` is called once per
/// finished seed (progress bars); results do not depend on `jobs`.
pub fn sweep(
    sc: &Scenario,
    seeds: Range<u64>,
    shard: Shard,
    jobs: usize,
    on_done: &(dyn Fn() + Sync),
) -> SweepSummary {
    sweep_each(sc, seeds, shard, jobs, on_done, &mut |_, _| {})
}

/// `sweep`, handing each violating seed and its violations to `on_violating` in seed order
/// as the sweep goes (`--json` streams them), instead of keeping them.
pub fn sweep_each(
    sc: &Scenario,
    seeds: Range<u64>,
    shard: Shard,
    jobs: usize,
    on_done: &(dyn Fn() + Sync),
    on_violating: &mut dyn FnMut(u64, &[Violation]),
) -> SweepSummary {
    sweep_until(sc, seeds, shard, jobs, None, on_done, on_violating).0
}

/// `sweep_each`, stopping early under `rule` (see `stopping`): the rule is decided on whole
/// batches of seeds in seed order, so where it stops does not depend on `jobs`. Returns the
/// summary of the seeds run, and why it stopped (`None`: no rule, or the range ran out
/// first — the `Stop` then says so).
pub fn sweep_until(
    sc: &Scenario,
    seeds: Range<u64>,
    shard: Shard,
    jobs: usize,
    rule: Option<stopping::StopRule>,
    on_done: &(dyn Fn() + Sync),
    on_violating: &mut dyn FnMut(u64, &[Violation]),
) -> (SweepSummary, Option<stopping::Stop>) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .expect("thread pool");
    let mut summary = SweepSummary::default();
    let mut watch = rule.map(stopping::Watch::new);
    let batch = if rule.is_some() {
        stopping::BATCH
    } else {
        CHUNK
    };
    // Chunks keep memory flat in the number of seeds: only violating seeds are kept.
    for ranks in shard.chunks_of(&seeds, batch) {
        let outcomes: Vec<(RunOutcome, stopping::Signature)> = pool.install(|| {
            ranks
                .into_par_iter()
                .map(|k| {
                    let s = shard.nth_in(&seeds, k);
                    let mut o = run_seed(sc, s);
                    // What saturation reads of the faults, before they go.
                    let sig = if watch.is_some() {
                        stopping::Signature::of(&o.faults, &o.witnesses, &o.violations)
                    } else {
                        stopping::Signature::default()
                    };
                    // Dropped, not cleared: a chunk holds thousands of outcomes.
                    o.faults = Vec::new();
                    on_done();
                    (o, sig)
                })
                .collect()
        });
        for (o, sig) in outcomes {
            if o.violated() {
                on_violating(o.seed, &o.violations);
            }
            if let Some(w) = &mut watch {
                w.seen(sig);
            }
            summary.add(o);
        }
        if let Some(w) = &mut watch
            && w.decide(&summary.standing(sc))
        {
            break;
        }
    }
    let stop = watch.map(|w| w.finish(&summary.standing(sc)));
    (summary, stop)
}

/// Result of hunting for a first violation from one starting seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HuntResult {
    pub start: u64,
    /// Seeds run until (and including) the first violating one; `None`: none within the bound.
    pub seeds_to_violation: Option<u64>,
    pub first_violating_seed: Option<u64>,
}

/// Runs seeds `start, start+1, ...` (at most `max_seeds`) until one violates.
pub fn hunt(sc: &Scenario, start: u64, max_seeds: u64) -> HuntResult {
    for i in 0..max_seeds {
        let seed = start.saturating_add(i);
        if run_seed(sc, seed).violated() {
            return HuntResult {
                start,
                seeds_to_violation: Some(i + 1),
                first_violating_seed: Some(seed),
            };
        }
    }
    HuntResult {
        start,
        seeds_to_violation: None,
        first_violating_seed: None,
    }
}

#[cfg(test)]
mod tests;
