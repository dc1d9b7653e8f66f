//! Systematic exploration (`distlock-sim explore`): every placement of up to K faults at the
//! protocol's decision points of one run, breadth-first by number of faults, so the first
//! violation found is a shortest one; and a PCT-style random mode with a stated bound.
//!
//! How (docs/explore.md has the full account):
//! - the model's world for seed N runs with every fault source off (random, swarm,
//!   triggers; scripted too unless kept) and records its decision points (`sim::decision`);
//! - each point has a small fault menu derived from the model (TTLs, nodes, replicas);
//! - level L (0, 1, …, K) runs every schedule of exactly L faults, each resumed from a clone
//!   of the world taken just before its last fault opens — a cursor walks each run once and
//!   is cloned at every point, so no prefix is simulated twice for its children;
//! - a schedule whose world, right after its last fault opened, has the fingerprint of one
//!   already explored with as many faults left (or more) is skipped (`World::fingerprint`);
//! - a schedule runs to a horizon after its last fault (`horizon_ns`), long enough for every
//!   key, lease and belief set before it to end, and is checked there.

use std::collections::BTreeMap;

use crate::check::{Property, Violation};
use crate::explore::minimize::scripted_text;
use crate::rng::Seed;
use crate::scenario::clients::AlgorithmSpec;
use crate::scenario::clients::{ClientFactory, ClientKind};
use crate::scenario::faults::{FaultEntry, HostSpec, crash_host_up};
use crate::scenario::{ProcKind, Scenario};
use crate::sim::decision::{Decision, DecisionKind};
use crate::sim::{Fault, FaultKind, TraceMode, World};
use crate::time::{NS_PER_MS, NS_PER_S, ProcId, SimTime, fmt_duration_ns};

/// Runs an exploration may start (schedules and the probes that collect their points), by
/// default: the bound that keeps `explore` finite on any model; reaching it is reported as
/// inconclusive.
pub const DEFAULT_BUDGET_RUNS: u64 = 20_000;
/// Most faults per schedule `explore` accepts (the search grows as points^K).
pub const MAX_FAULTS: usize = 4;

/// What to explore.
#[derive(Clone, Debug)]
pub struct ExploreConfig {
    /// K: most faults per schedule.
    pub faults: usize,
    pub seed: u64,
    /// Most runs (schedules and probes) to start; then the search stops, inconclusive.
    pub budget_runs: u64,
    /// Resume every schedule from a clone of the world at its fault point (the default);
    /// `false` re-simulates each from time 0 with its faults scripted (to measure what
    /// sharing saves; also what happens when a custom process cannot be cloned).
    pub prefix_sharing: bool,
    /// Keep the model's own scripted faults as part of the world explored.
    pub keep_scripted: bool,
    /// A schedule of one fault opens a server's fault (a node's crash, clock step, pause)
    /// before each of the server's events too, not only at the decision points. A client's
    /// faults always go before each of its events.
    pub every_offset: bool,
}

impl Default for ExploreConfig {
    fn default() -> ExploreConfig {
        ExploreConfig {
            faults: 2,
            seed: 0,
            budget_runs: DEFAULT_BUDGET_RUNS,
            prefix_sharing: true,
            keep_scripted: false,
            every_offset: false,
        }
    }
}

/// A decision point as `explore` uses it: where it is, what it is, when its faults open.
#[derive(Clone, Debug)]
pub struct Point {
    pub decision: Decision,
    /// `quorum-reached`, `acquired`, `granted`, `reply-before-replication`, `before-del`,
    /// `before-resource-write`.
    pub label: &'static str,
    /// When its faults open: 1 ns after the event (after the client acquired, after the node
    /// replied) or 1 ns before it (before the client's message leaves: the pause parks the
    /// event that would send it).
    pub open_at: SimTime,
}

/// One fault of the menu placed at a point (one menu item may be two faults: a crash with
/// its replication cut).
#[derive(Clone, Debug)]
pub struct Placed {
    pub point: &'static str,
    pub point_at: SimTime,
    pub item: String,
    pub faults: Vec<Fault>,
}

/// A violating schedule.
#[derive(Clone, Debug)]
pub struct Found {
    /// Faults placed (menu items), the level it was found at.
    pub placed: Vec<Placed>,
    pub violations: Vec<Violation>,
    /// The schedule as a scripted model's `faults` (the model's kept faults first).
    pub scripted: Vec<FaultEntry>,
    pub model_text: String,
    /// Whether the scripted model, run from the start for its whole duration, violates the
    /// same property (it should: `false` is reported, never hidden).
    pub replay_confirms: bool,
}

/// The placements of one fault family at the one-fault level.
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    /// Offsets before an event of its target where the family was placed.
    pub at_events: u64,
    /// Decision points where it was placed.
    pub at_decisions: u64,
    /// Schedules of one fault of this family (offsets × magnitudes).
    pub placements: u64,
    /// The magnitudes placed (durations, downtimes, clock deltas), by size, with their text.
    pub magnitudes: std::collections::BTreeSet<(i64, String)>,
}

/// What an exploration did and found.
#[derive(Clone, Debug, Default)]
pub struct ExploreReport {
    pub model: String,
    pub seed: u64,
    pub faults: usize,
    /// The base run's decision points, by label.
    pub points_by_kind: BTreeMap<&'static str, u64>,
    pub points: usize,
    /// Schedules simulated to their horizon and checked (level 0 included).
    pub schedules: u64,
    /// Runs started in all: schedules and the probes that collect their points.
    pub runs: u64,
    /// Schedules skipped because their state had been explored.
    pub duplicates: u64,
    pub distinct_states: u64,
    /// Levels (fault counts) searched in full.
    pub levels_done: usize,
    /// Schedules whose run stopped on a budget of the model (events, history).
    pub inconclusive_runs: u64,
    pub budget_hit: bool,
    pub horizon_ns: u64,
    /// Fault kinds the model declares that no menu item places.
    pub not_placed: Vec<&'static str>,
    /// Points before an event of a process where the one-fault level placed a fault (every
    /// offset at which a fault of that process first acts).
    pub event_points: u64,
    /// Whether servers' faults were placed at every event too (`ExploreConfig::every_offset`).
    pub every_offset: bool,
    /// What the one-fault level placed, by (fault kind, target): the exact extent of a
    /// "no violation with 1 fault".
    pub coverage: BTreeMap<(String, String), Coverage>,
    pub prefix_sharing: bool,
    /// Wall time, filled in by the caller (the library reads no host clock).
    pub wall_s: f64,
    pub found: Option<Found>,
}

impl ExploreReport {
    pub fn schedules_per_s(&self) -> f64 {
        // Not timed (a library caller that did not fill `wall_s` in): no rate.
        if self.wall_s <= 0.0 {
            return 0.0;
        }
        self.schedules as f64 / self.wall_s
    }
    /// No violation, but the claim covers less than asked (budget, or a run cut short).
    pub fn inconclusive(&self) -> bool {
        self.found.is_none() && (self.budget_hit || self.inconclusive_runs > 0)
    }
    /// No decision point at all: "no placement breaks it" would claim nothing.
    pub fn vacuous(&self) -> bool {
        self.found.is_none() && self.points == 0
    }
}

/// What the menus need to know of the model.
pub(super) struct Ctx {
    /// TTL (lease, session timeout) per client.
    ttl_ns: BTreeMap<ProcId, u64>,
    redlock: Vec<ProcId>,
    clients: Vec<ProcId>,
    /// Replicas of each master.
    replicas: BTreeMap<ProcId, Vec<ProcId>>,
    /// With sentinels: how long a crashed master stays down so that they promote a replica.
    failover_down_ns: Option<u64>,
    /// How long a schedule runs on after its last fault has ended (`settle_ns`).
    settle_ns: u64,
    /// Place the servers' faults before each of their events too, not only at the decision
    /// points (`ExploreConfig::every_offset`).
    every_offset: bool,
    allowed: Allowed,
}

/// A crash as a model entry means it: (data kept, host up).
type CrashHow = (bool, bool);

/// The faults the model itself declares (scripted, random, swarm, triggers), by kind and
/// target, with the magnitudes it allows: the menu offers only these, of the shapes declared,
/// so that a model that holds against its own faults is not "broken" by faults it never
/// claimed to survive. Ranges are (min, max); a scripted fault's is its one value.
#[derive(Debug, Default)]
struct Allowed {
    pause_ns: BTreeMap<ProcId, (u64, u64)>,
    /// (keep_data, host_up) -> downtime range; `None` for a crash never restarted.
    crash: BTreeMap<ProcId, BTreeMap<CrashHow, Option<(u64, u64)>>>,
    step_ms: BTreeMap<ProcId, (i64, i64)>,
    /// Cuts as declared: an isolation of one process, or a partition with its own sides,
    /// with the range of its duration (`None`: never healed).
    cuts: Vec<(FaultKind, Option<(u64, u64)>)>,
    /// A cut declared only together with a crash of its node (`crash_after_grant`'s
    /// `isolate_from`): placed with that crash, never alone.
    crash_cuts: BTreeMap<ProcId, FaultKind>,
    /// Drift windows of a process's clock: the rates (ppm, signed) and how long a window
    /// lasts at most (`None`: a scripted rate that holds from its instant on).
    drift: BTreeMap<ProcId, ((i64, i64), Option<u64>)>,
    /// Latency spikes as declared, on the links from each member of the first list to each of
    /// the second: the range of the extra latency and the longest window.
    spikes: Vec<Spike>,
    /// Kinds declared that no menu item places (loss, delayed replies): named in the report.
    not_placed: std::collections::BTreeSet<&'static str>,
}

/// A latency spike the model declares: on the links from each of `from` to each of `to`.
#[derive(Debug)]
struct Spike {
    from: Vec<ProcId>,
    to: Vec<ProcId>,
    /// The range of the extra latency (min, max).
    extra_ns: (u64, u64),
    /// The longest window declared.
    max_window_ns: u64,
}

fn widen<T: Copy + Ord>(m: &mut BTreeMap<ProcId, (T, T)>, p: ProcId, r: (T, T)) {
    let e = m.entry(p).or_insert(r);
    *e = (e.0.min(r.0), e.1.max(r.1));
}

impl Allowed {
    fn of(sc: &Scenario) -> Allowed {
        use crate::scenario::faults::{Event, KindSpec, Span, Target, When};
        use crate::scenario::units::DurRange;
        let mut a = Allowed::default();
        let kind_of = |i: usize| sc.procs[i].1;
        let all = |k: ProcKind| -> Vec<ProcId> {
            (0..sc.procs.len())
                .filter(|&i| kind_of(i) == k)
                .map(|i| ProcId(i as u32))
                .collect()
        };
        let ids = |v: &[crate::scenario::units::Name]| -> Vec<ProcId> {
            v.iter().map(|n| sc.proc_id(&n.0)).collect()
        };
        let target = |t: &Target| -> Vec<ProcId> {
            match t {
                Target::Proc(n) => vec![sc.proc_id(&n.0)],
                Target::Holder(_) => all(ProcKind::Client),
                Target::Master(_) => all(ProcKind::Redis),
            }
        };
        // The crash as the model's entry means it: data kept or not, the host up (a refused
        // connection) or down (silence), with the loader's defaults.
        let how = |keep: Option<bool>, host: Option<HostSpec>| {
            (keep.unwrap_or(false), crash_host_up(keep, host))
        };
        let crash = |a: &mut Allowed, p: ProcId, keep: (bool, bool), down: Option<(u64, u64)>| {
            let e = a.crash.entry(p).or_default().entry(keep).or_insert(down);
            *e = match (*e, down) {
                (Some(x), Some(y)) => Some((x.0.min(y.0), x.1.max(y.1))),
                (x, y) => x.or(y),
            };
        };
        let cut = |a: &mut Allowed, kind: FaultKind, r: Option<(u64, u64)>| match a
            .cuts
            .iter_mut()
            .find(|(k, _)| *k == kind)
        {
            Some((_, e)) => {
                *e = match (*e, r) {
                    (Some(x), Some(y)) => Some((x.0.min(y.0), x.1.max(y.1))),
                    _ => None,
                }
            }
            None => a.cuts.push((kind, r)),
        };
        // A drift window: its rates widened, its longest window kept (a rate set for good
        // outlasts any window).
        let drift = |a: &mut Allowed, p: ProcId, r: (i64, i64), dur: Option<u64>| {
            let e = a.drift.entry(p).or_insert((r, dur));
            e.0 = (e.0.0.min(r.0), e.0.1.max(r.1));
            e.1 = match (e.1, dur) {
                (Some(x), Some(y)) => Some(x.max(y)),
                _ => None,
            };
        };
        let spike =
            |a: &mut Allowed, from: Vec<ProcId>, to: Vec<ProcId>, r: (u64, u64), dur| match a
                .spikes
                .iter_mut()
                .find(|s| s.from == from && s.to == to)
            {
                Some(e) => {
                    e.extra_ns = (e.extra_ns.0.min(r.0), e.extra_ns.1.max(r.1));
                    e.max_window_ns = e.max_window_ns.max(dur);
                }
                None => a.spikes.push(Spike {
                    from,
                    to,
                    extra_ns: r,
                    max_window_ns: dur,
                }),
            };
        let swarm = sc.model.swarm.iter().flat_map(|sw| sw.faults.iter());
        let entries = (sc.model.faults.iter())
            .chain(&sc.model.random_faults)
            .chain(swarm)
            .chain(&sc.model.triggers);
        let range = |d: &DurRange| (d.min.ns(), d.max.ns());
        for f in entries {
            // Who it falls on: a scripted role on every process that can hold it.
            let procs = match &f.span {
                Span::One(t) => target(t),
                Span::Each(v) => ids(v),
                Span::Links { from, .. } => ids(from),
            };
            let on = match &f.when {
                When::On(on) => Some(&on.event),
                When::At(_) | When::Every { .. } => None,
            };
            match (&f.kind, &f.span) {
                // A spike that starts with each attempt: no point of its own places it.
                (_, _) if on == Some(&Event::AfterAttempt) => {
                    a.not_placed.insert("delayed replies");
                }
                (KindSpec::Pause { duration }, _) => {
                    for p in procs {
                        widen(&mut a.pause_ns, p, range(duration));
                    }
                }
                (
                    KindSpec::Crash {
                        down,
                        keep_data,
                        host,
                    },
                    _,
                ) => {
                    for p in procs {
                        // A triggered crash cuts the node from `isolate_from` as it crashes
                        // it (the stream in flight is lost): a second fault, declared with
                        // the first.
                        if let Some(Event::AfterGrant { isolate_from, .. }) = on
                            && !isolate_from.is_empty()
                        {
                            a.crash_cuts.insert(
                                p,
                                FaultKind::Partition {
                                    from: vec![p],
                                    to: ids(isolate_from),
                                    both_ways: false,
                                },
                            );
                        }
                        crash(&mut a, p, how(*keep_data, *host), down.as_ref().map(range));
                    }
                }
                (KindSpec::ClockStep { delta }, _) => {
                    for p in procs {
                        widen(&mut a.step_ms, p, (delta.min.ms(), delta.max.ms()));
                    }
                }
                // A random partition and a triggered one isolate each target, as a scripted
                // `isolate` does (`scenario::faults` reads them so).
                (KindSpec::Isolate { duration }, _) => {
                    for p in procs {
                        cut(&mut a, FaultKind::Isolate(p), duration.as_ref().map(range));
                    }
                }
                (KindSpec::Partition { duration, one_way }, Span::Links { from, to }) => {
                    let kind = FaultKind::Partition {
                        from: ids(from),
                        to: ids(to),
                        both_ways: !one_way,
                    };
                    cut(&mut a, kind, duration.as_ref().map(range));
                }
                (KindSpec::Drift { ppm, duration }, _) => {
                    let (lo, hi) = (ppm.0.0, ppm.1.0);
                    for p in procs {
                        let window = duration.map(|d| d.max.ns());
                        drift(&mut a, p, (lo.min(hi), lo.max(hi)), window);
                    }
                }
                (KindSpec::LatencySpike { extra, duration }, Span::Links { from, to }) => {
                    spike(&mut a, ids(from), ids(to), range(extra), duration.max.ns())
                }
                (KindSpec::Loss { .. }, _) => {
                    a.not_placed.insert("loss");
                }
                (KindSpec::Partition { .. } | KindSpec::LatencySpike { .. }, _) => {
                    unreachable!("a link fault spans links (`scenario::faults`)")
                }
            }
        }
        a
    }
}

/// The canonical magnitudes `want`, each brought into `range`, without repeats.
fn fit<T: Copy + Ord>(want: &[T], range: (T, T)) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for &w in want {
        let v = w.clamp(range.0, range.1);
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// How long one request of a client of this algorithm may wait for its reply and its
/// retry: the request timeout (the loader's default of one second where none is given) and
/// the longest retry delay; `ttl_ns` is the group's `ttl`.
fn request_wait_ns(spec: &AlgorithmSpec, ttl_ns: u64) -> u64 {
    let retrying = |r: &crate::scenario::clients::Retrying| {
        r.request_timeout.map_or(NS_PER_S, |d| d.ns()) + r.retry.max.ns()
    };
    match spec {
        AlgorithmSpec::Single { retrying: r, .. }
        | AlgorithmSpec::Watchdog { retrying: r, .. }
        | AlgorithmSpec::Redisson { retrying: r, .. }
        | AlgorithmSpec::Consensus { retrying: r, .. } => retrying(r),
        AlgorithmSpec::RedisPy {
            request_timeout, ..
        } => request_timeout.map_or(NS_PER_S, |d| d.ns()),
        // No socket timeout: a waiter's longest request is its BLPOP, `timeout or expire`
        // (:229); with neither it blocks until a release, counted here as one `ttl`.
        AlgorithmSpec::PythonRedisLock {
            python_redis_lock, ..
        } => python_redis_lock
            .timeout
            .map_or(ttl_ns, |d| d.ns())
            .max(NS_PER_S),
        AlgorithmSpec::Redlock { redlock, .. } => {
            let r = &**redlock;
            r.per_node_timeout.map_or(NS_PER_S, |d| d.0)
                + r.retry_delay.map_or(0, |d| d.0)
                + r.retry_jitter.map_or(0, |d| d.0)
        }
    }
}

/// A menu item: what it is called, and its faults (a crash with the declared cut of its
/// replication stream is two).
pub(super) type Item = (String, Vec<Fault>);

impl Ctx {
    fn new(sc: &Scenario) -> Ctx {
        let mut ttl_ns = BTreeMap::new();
        let mut redlock = Vec::new();
        let mut client_wait_ns = 0u64;
        for g in sc.model.clients.iter() {
            // How long a client may be busy after a fault: its hold, its request timeout
            // (or the one-second default), its retry delay.
            client_wait_ns =
                client_wait_ns.max(g.hold.max.ns() + request_wait_ns(&g.spec, g.ttl.ns()));
            for m in g.members() {
                let id = sc.proc_id(&m.0);
                ttl_ns.insert(id, g.ttl.ns());
                if g.kind() == ClientKind::Redlock {
                    redlock.push(id);
                }
            }
        }
        let of = |k: ProcKind| -> Vec<ProcId> {
            (0..sc.procs.len())
                .filter(|&i| sc.procs[i].1 == k)
                .map(|i| ProcId(i as u32))
                .collect()
        };
        let mut replicas: BTreeMap<ProcId, Vec<ProcId>> = BTreeMap::new();
        for n in sc.model.nodes.iter() {
            if let Some(m) = &n.replica_of {
                replicas
                    .entry(sc.proc_id(&m.0))
                    .or_default()
                    .push(sc.proc_id(&n.name.0));
            }
        }
        let failover_down_ns = sc
            .model
            .sentinels
            .as_ref()
            .map(|s| s.down_after.map_or(30 * NS_PER_S, |d| d.ns()) + 5 * NS_PER_S);
        let max_ttl = ttl_ns.values().copied().max().unwrap_or(NS_PER_S);
        // Every key, lease and belief set before the last fault ended runs out within two
        // TTLs of it; a client busy with a hold or a request when it ended is done within its
        // wait; a second more for the replies and the cron.
        let settle_ns = 2 * max_ttl + client_wait_ns + NS_PER_S;
        Ctx {
            ttl_ns,
            redlock,
            clients: of(ProcKind::Client),
            replicas,
            failover_down_ns,
            settle_ns,
            every_offset: false,
            allowed: Allowed::of(sc),
        }
    }

    /// The largest magnitude the model declares for the fault family of a menu item (its
    /// last fault: the crash of a crash with its replication cut), in the family's unit — a
    /// window's duration in ns, a clock step's delta in ms, on the side of the item's own
    /// sign. `None` for a fault with no magnitude to vary (a crash never restarted, a cut
    /// never healed, a step the model declares only of the other sign).
    pub(super) fn declared_max(&self, faults: &[Fault]) -> Option<i64> {
        let f = faults.last()?;
        let window = |r: Option<(u64, u64)>| r.map(|r| r.1 as i64);
        match &f.kind {
            FaultKind::Pause(p) => self.allowed.pause_ns.get(p).map(|r| r.1 as i64),
            FaultKind::Crash {
                proc,
                keep_data,
                host_up,
            } => {
                f.duration_ns?;
                window(*self.allowed.crash.get(proc)?.get(&(*keep_data, *host_up))?)
            }
            FaultKind::ClockStep { proc, delta_ms } => {
                let &(lo, hi) = self.allowed.step_ms.get(proc)?;
                let side = if *delta_ms > 0 { hi } else { lo };
                (side.signum() == delta_ms.signum()).then_some(side)
            }
            FaultKind::Drift { proc, drift_ppm } => {
                let &((lo, hi), _) = self.allowed.drift.get(proc)?;
                let side = if *drift_ppm > 0 { hi } else { lo };
                (side.signum() == drift_ppm.signum()).then_some(side)
            }
            FaultKind::LatencySpike { from, to, .. } => {
                let s = self
                    .allowed
                    .spikes
                    .iter()
                    .find(|s| s.from == *from && s.to == *to)?;
                Some(s.extra_ns.1 as i64)
            }
            kind @ (FaultKind::Partition { .. }
            | FaultKind::Isolate(_)
            | FaultKind::Loss { .. }) => {
                f.duration_ns?;
                let (_, r) = self.allowed.cuts.iter().find(|(k, _)| k == kind)?;
                window(*r)
            }
        }
    }

    fn max_ttl_ns(&self) -> u64 {
        self.ttl_ns.values().copied().max().unwrap_or(NS_PER_S)
    }

    fn ttl_of(&self, p: ProcId) -> u64 {
        self.ttl_ns
            .get(&p)
            .copied()
            .unwrap_or_else(|| self.max_ttl_ns())
    }

    /// The point a decision is, if `explore` places faults there.
    fn point(&self, d: &Decision) -> Option<Point> {
        let (label, open_at) = match d.kind {
            DecisionKind::Acquired if self.redlock.contains(&d.proc) => {
                ("quorum-reached", d.at.plus_ns(1))
            }
            DecisionKind::Acquired => ("acquired", d.at.plus_ns(1)),
            // A write by a master streaming to its replica is not a grant.
            DecisionKind::Granted if !d.peer.is_some_and(|c| self.clients.contains(&c)) => {
                return None;
            }
            DecisionKind::Granted if self.replicas.contains_key(&d.proc) => {
                ("reply-before-replication", d.at.plus_ns(1))
            }
            DecisionKind::Granted => ("granted", d.at.plus_ns(1)),
            DecisionKind::BeforeDel => ("before-del", SimTime(d.at.0.saturating_sub(1))),
            DecisionKind::BeforeResourceWrite => {
                ("before-resource-write", SimTime(d.at.0.saturating_sub(1)))
            }
            DecisionKind::Arrival => ("before-event", SimTime(d.at.0.saturating_sub(1))),
        };
        // A fault before time 1 cannot be placed before its event.
        (open_at.0 >= 1).then(|| Point {
            decision: d.clone(),
            label,
            open_at,
        })
    }

    fn pause_items(&self, p: ProcId, at: SimTime, left_ns: Option<u64>) -> Vec<Item> {
        let Some(&range) = self.allowed.pause_ns.get(&p) else {
            return Vec::new();
        };
        let ttl = self.ttl_of(p);
        // Just past what is left of its lock (its belief if it has one, else the TTL), and
        // 2 x TTL.
        let left = left_ns.unwrap_or(ttl).max(1);
        fit(&[left + NS_PER_MS, 2 * ttl], range)
            .into_iter()
            .map(|dur| {
                (
                    format!("pause {}", fmt_duration_ns(dur)),
                    vec![Fault::new(at, Some(dur), FaultKind::Pause(p))],
                )
            })
            .collect()
    }

    fn step_items(&self, p: ProcId, at: SimTime, ttl: u64) -> Vec<Item> {
        let Some(&range) = self.allowed.step_ms.get(&p) else {
            return Vec::new();
        };
        let t = (ttl / NS_PER_MS) as i64;
        fit(&[t, -t], range)
            .into_iter()
            .map(|delta_ms| {
                (
                    format!("wall-clock step {delta_ms:+}ms"),
                    vec![Fault::new(
                        at,
                        None,
                        FaultKind::ClockStep { proc: p, delta_ms },
                    )],
                )
            })
            .collect()
    }

    /// Drift windows of `p`'s clock as the model declares them: the fastest and the slowest
    /// rate it allows (one of each sign it has), for its longest window.
    fn drift_items(&self, p: ProcId, at: SimTime) -> Vec<Item> {
        let Some(&((lo, hi), dur)) = self.allowed.drift.get(&p) else {
            return Vec::new();
        };
        let mut rates = Vec::new();
        rates.extend((hi > 0).then_some(hi));
        rates.extend((lo < 0).then_some(lo));
        rates
            .into_iter()
            .map(|drift_ppm| {
                let f = Fault::new(at, dur, FaultKind::Drift { proc: p, drift_ppm });
                let text = match dur {
                    Some(d) => format!("drift {drift_ppm:+}ppm for {}", fmt_duration_ns(d)),
                    None => format!("drift {drift_ppm:+}ppm from then on"),
                };
                (text, vec![f])
            })
            .collect()
    }

    /// The declared latency spikes that `pick` selects (by their links' two lists), for
    /// extra latencies `want_ns` in their ranges, each open for its longest window.
    fn spike_items(
        &self,
        at: SimTime,
        want_ns: &[u64],
        names: &[String],
        pick: impl Fn(&[ProcId], &[ProcId]) -> bool,
    ) -> Vec<Item> {
        let mut items = Vec::new();
        for s in &self.allowed.spikes {
            if !pick(&s.from, &s.to) {
                continue;
            }
            for extra_ns in fit(want_ns, s.extra_ns) {
                let kind = FaultKind::LatencySpike {
                    from: s.from.clone(),
                    to: s.to.clone(),
                    extra_ns,
                };
                let f = Fault::new(at, Some(s.max_window_ns), kind);
                let text = f.describe(&|p: ProcId| names[p.index()].clone());
                items.push((text, vec![f]));
            }
        }
        items
    }

    /// Crashes of `p` as the model declares them (data kept or not, host up or down), with
    /// downtimes `want_ns` brought into the declared range; `with_cut`: each together with a
    /// declared cut of `p`'s replication stream (two faults), instead of alone.
    fn crash_items(&self, p: ProcId, at: SimTime, want_ns: &[u64], with_cut: bool) -> Vec<Item> {
        let mut items = Vec::new();
        let repl_cut = if with_cut {
            match self.repl_cut(p) {
                Some(c) => Some(c),
                None => return items,
            }
        } else {
            None
        };
        for (&(keep_data, host_up), &down) in self.allowed.crash.get(&p).into_iter().flatten() {
            let downs: Vec<Option<u64>> = match down {
                Some(range) => fit(want_ns, range).into_iter().map(Some).collect(),
                None => vec![None],
            };
            for down in downs {
                let mut fs = Vec::new();
                // The cut first, so that the write in flight is lost with the node.
                if let Some(kind) = &repl_cut {
                    fs.push(Fault::new(at, down, kind.clone()));
                }
                fs.push(Fault::new(
                    at,
                    down,
                    FaultKind::Crash {
                        proc: p,
                        keep_data,
                        host_up,
                    },
                ));
                items.push((
                    format!(
                        "crash ({}), {}{}",
                        if keep_data { "data kept" } else { "empty" },
                        down.map_or("never restarted".to_string(), |d| format!(
                            "restarted after {}",
                            fmt_duration_ns(d)
                        )),
                        if repl_cut.is_some() {
                            ", replication cut (as declared)"
                        } else {
                            ""
                        }
                    ),
                    fs,
                ));
            }
        }
        items
    }

    /// A declared cut that severs master `m` from one of its replicas, if the model has one:
    /// the one declared with its crash, else a cut declared on its own.
    fn repl_cut(&self, m: ProcId) -> Option<FaultKind> {
        let replicas = self.replicas.get(&m)?;
        if let Some(k) = self.allowed.crash_cuts.get(&m) {
            return Some(k.clone());
        }
        self.allowed
            .cuts
            .iter()
            .find(|(k, _)| replicas.iter().any(|&r| k.cuts(m, r)))
            .map(|(k, _)| k.clone())
    }

    /// The declared cuts that `pick` selects, for durations `want_ns` in their ranges.
    fn cut_items(
        &self,
        at: SimTime,
        want_ns: &[u64],
        names: &[String],
        pick: impl Fn(&FaultKind) -> bool,
    ) -> Vec<Item> {
        let mut items = Vec::new();
        for (kind, range) in &self.allowed.cuts {
            if !pick(kind) {
                continue;
            }
            let durs: Vec<Option<u64>> = match range {
                Some(r) => fit(want_ns, *r).into_iter().map(Some).collect(),
                None => vec![None],
            };
            for dur in durs {
                let f = Fault::new(at, dur, kind.clone());
                let text = f.describe(&|p: ProcId| names[p.index()].clone());
                items.push((text, vec![f]));
            }
        }
        items
    }

    /// Faults of node `n` right after it served client `c` (the granted point, or the
    /// client's acquired point: after its WAIT or fencing INCR too).
    fn node_items(&self, n: ProcId, c: ProcId, at: SimTime, names: &[String]) -> Vec<Item> {
        let ttl = self.ttl_of(c);
        let mut items = self.step_items(n, at, ttl);
        let mut want = vec![NS_PER_MS, ttl];
        want.extend(self.failover_down_ns);
        items.extend(self.crash_items(n, at, &want, false));
        if self.replicas.contains_key(&n) {
            items.extend(self.crash_items(n, at, &want, true));
        }
        // A cut between the client and the node, or of the node from its replicas.
        let replicas = self.replicas.get(&n).cloned().unwrap_or_default();
        items.extend(self.cut_items(at, &[ttl], names, |k| {
            k.cuts(n, c) || k.cuts(c, n) || replicas.iter().any(|&r| k.cuts(n, r))
        }));
        // Its clock drifting from the write on (the key's expiry counted at its rate), and a
        // spike on its links to the client or to its replicas (the stream delayed).
        items.extend(self.drift_items(n, at));
        let link = |a: ProcId, b: ProcId, from: &[ProcId], to: &[ProcId]| {
            from.contains(&a) && to.contains(&b)
        };
        items.extend(self.spike_items(at, &[ttl], names, |from, to| {
            link(n, c, from, to)
                || link(c, n, from, to)
                || replicas.iter().any(|&r| link(n, r, from, to))
        }));
        items
    }

    /// The fault menu at a point (docs/explore.md, "The fault menu"): the canonical faults,
    /// of the kinds, shapes and targets the model declares, their magnitudes brought into the
    /// model's ranges. `left_ns`: what the process at the point believes is left of its lock.
    fn menu(&self, p: &Point, left_ns: Option<u64>, names: &[String]) -> Vec<Item> {
        let at = p.open_at;
        let d = &p.decision;
        let mut items = Vec::new();
        match d.kind {
            // Before any event of a client: each fault of that client, and each cut of a
            // client that would drop this delivery (also when it arrives at a server). The
            // servers' own faults go at the decision points, unless every offset is asked for
            // (`ExploreConfig::every_offset`).
            DecisionKind::Arrival => {
                let q = d.proc;
                let client = self.clients.contains(&q);
                let ttl = self.ttl_of(q);
                if client || self.every_offset {
                    items.extend(self.pause_items(q, at, left_ns));
                    let mut want = vec![NS_PER_MS, ttl];
                    want.extend(self.failover_down_ns);
                    items.extend(self.crash_items(q, at, &want, false));
                    items.extend(self.step_items(q, at, ttl));
                    items.extend(self.drift_items(q, at));
                    // A spike on a link from or to it: what it sends next, and the replies
                    // to it, are late.
                    items.extend(self.spike_items(at, &[ttl], names, |from, to| {
                        from.contains(&q) || to.contains(&q)
                    }));
                }
                if let Some(from) = d.peer {
                    let of_client = |k: &FaultKind| {
                        self.every_offset || self.clients.iter().any(|&c| k.cut_touches(c))
                    };
                    items.extend(
                        self.cut_items(at, &[ttl], names, |k| k.cuts(from, q) && of_client(k)),
                    );
                    // A spike on the way back to a client: the reply this event sends is late.
                    if !client && self.clients.contains(&from) {
                        items.extend(self.spike_items(at, &[ttl], names, |f, t| {
                            f.contains(&q) && t.contains(&from)
                        }));
                    }
                }
            }
            DecisionKind::Acquired
            | DecisionKind::BeforeDel
            | DecisionKind::BeforeResourceWrite => {
                let c = d.proc;
                let ttl = self.ttl_of(c);
                let left = d
                    .believed_until
                    .map(|u| u.0.saturating_sub(d.at.0))
                    .or(left_ns);
                items.extend(self.pause_items(c, at, left));
                if d.kind == DecisionKind::Acquired {
                    if let Some(n) = d.peer {
                        items.extend(self.node_items(n, c, at, names));
                    }
                    // A client that dies holding its lock (restarted as the model says).
                    items.extend(self.crash_items(c, at, &[NS_PER_MS, ttl], false));
                    items.extend(self.step_items(c, at, ttl));
                    items.extend(self.drift_items(c, at));
                    items.extend(self.cut_items(at, &[ttl], names, |k| k.cut_touches(c)));
                    items.extend(self.spike_items(at, &[ttl], names, |from, to| {
                        from.contains(&c) || to.contains(&c)
                    }));
                }
            }
            DecisionKind::Granted => {
                let n = d.proc;
                let c = d.peer.expect("a grant has a writer");
                items.extend(self.node_items(n, c, at, names));
            }
        }
        items
    }
}

/// How long a schedule runs on after its last fault has ended (closed, or opened if it
/// never closes): the settle time (2 x TTL, plus the longest client hold and request
/// timeout, plus 1 s), and past the liveness bound, so that a lock left unobtainable is
/// seen. `explore` runs each schedule to the last end plus this, capped at the model's
/// duration.
pub fn horizon_ns(sc: &Scenario) -> u64 {
    let ctx = Ctx::new(sc);
    ctx.settle_ns
        .max(sc.liveness_bound_ns.saturating_add(ctx.max_ttl_ns()))
}

pub(super) struct Search<'a> {
    pub(super) sc: &'a Scenario,
    /// Whether states are deduplicated (not for models checking liveness).
    dedup: bool,
    custom: Option<&'a ClientFactory>,
    base_sc: Scenario,
    pub(super) cfg: ExploreConfig,
    pub(super) ctx: Ctx,
    horizon_ns: u64,
    /// Fingerprint -> (fewest faults it was reached with, level it was reached at then).
    seen: BTreeMap<u64, (usize, usize)>,
    report: ExploreReport,
    pub(super) names: Vec<String>,
}

enum Stop {
    Found(Box<(Vec<Placed>, Vec<Violation>)>),
    Budget,
}

impl<'a> Search<'a> {
    /// The search of `sc` as `cfg` asks, and the base world it starts from (every fault
    /// source off, its decision points logged).
    pub(super) fn new(
        sc: &'a Scenario,
        cfg: &ExploreConfig,
        custom: Option<&'a ClientFactory>,
    ) -> Result<(Search<'a>, World), String> {
        let base_sc = base_scenario(sc, cfg.keep_scripted)?;
        let (mut base, _) = base_sc.build_with(cfg.seed, TraceMode::Off, custom);
        base.log_decisions();
        let mut ctx = Ctx::new(sc);
        ctx.every_offset = cfg.every_offset;
        let mut search = Search {
            sc,
            dedup: !sc.properties.contains(&Property::Liveness),
            custom,
            base_sc: base_sc.clone(),
            cfg: cfg.clone(),
            horizon_ns: horizon_ns(sc),
            ctx,
            seen: BTreeMap::new(),
            report: ExploreReport {
                model: sc.name.clone(),
                seed: cfg.seed,
                faults: cfg.faults,
                prefix_sharing: cfg.prefix_sharing,
                every_offset: cfg.every_offset,
                ..ExploreReport::default()
            },
            names: base.names(),
        };
        search.report.horizon_ns = search.horizon_ns;
        search.report.not_placed = search.ctx.allowed.not_placed.iter().copied().collect();
        if cfg.prefix_sharing && base.snapshot().is_none() {
            search.cfg.prefix_sharing = false;
            search.report.prefix_sharing = false;
        }
        Ok((search, base))
    }
}

impl Search<'_> {
    pub(super) fn fresh(&self, placed: &[Placed]) -> World {
        let (mut w, _) = self
            .base_sc
            .build_with(self.cfg.seed, TraceMode::Off, self.custom);
        w.log_decisions();
        let extra: Vec<Fault> = placed.iter().flat_map(|p| p.faults.clone()).collect();
        w.schedule_all(extra);
        w
    }

    pub(super) fn check(&self, w: &World) -> Vec<Violation> {
        self.sc.check(w)
    }

    fn spend(&mut self) -> Result<(), Stop> {
        if self.report.runs >= self.cfg.budget_runs {
            self.report.budget_hit = true;
            return Err(Stop::Budget);
        }
        self.report.runs += 1;
        Ok(())
    }

    /// Runs `w` to `until`; true if the run stopped on one of the model's budgets.
    pub(super) fn run_to(w: &mut World, until: SimTime) -> bool {
        matches!(w.run_until(until), Some(e) if e.is_inconclusive())
    }

    /// The points of `w`'s run after `after`, up to `until`, each with its menu (`w` is a
    /// probe, consumed). `arrivals`: also the points before every event of a process (the
    /// offsets of a schedule's only fault).
    pub(super) fn points(
        &self,
        mut w: World,
        after: Option<SimTime>,
        until: SimTime,
        arrivals: bool,
    ) -> Vec<(Point, Vec<Item>)> {
        Self::run_to(&mut w, until);
        // What each client believes is left of its lock at a point: from its last
        // acquisition's believed end, while that is ahead.
        let mut belief: BTreeMap<ProcId, SimTime> = BTreeMap::new();
        let mut ps = Vec::new();
        for d in with_granters(w.take_decisions()) {
            if d.kind == DecisionKind::Acquired
                && let Some(u) = d.believed_until
            {
                belief.insert(d.proc, u);
            }
            if d.kind == DecisionKind::Arrival && !arrivals {
                continue;
            }
            let Some(p) = self.ctx.point(&d) else {
                continue;
            };
            if after.is_some_and(|a| p.open_at <= a) || p.open_at > until {
                continue;
            }
            let left = belief
                .get(&d.proc)
                .filter(|u| **u > p.open_at)
                .map(|u| u.0 - p.open_at.0);
            let menu = self.ctx.menu(&p, left, &self.names);
            // A point where the model declares no fault is no place to put one.
            if !menu.is_empty() {
                ps.push((p, menu));
            }
        }
        ps.sort_by_key(|(p, _)| p.open_at);
        ps
    }

    /// Where a schedule with `placed` stops: the horizon after its last fault ended (or
    /// opened, for one that never ends), at most the model's duration.
    fn end_of(&self, placed: &[Placed]) -> SimTime {
        let max = self.sc.limits.max_time;
        let last = placed
            .iter()
            .flat_map(|p| &p.faults)
            .map(|f| f.end().unwrap_or(f.at))
            .max();
        match last {
            None => max,
            Some(t) => t.plus_ns(self.horizon_ns).min(max),
        }
    }

    /// The schedules of exactly `level` faults below `node` (a world with `placed`
    /// scheduled, at or before the last one's opening). A schedule's faults are counted one
    /// by one: a menu item of two (a crash with the declared cut of its replication) takes
    /// two of them.
    fn walk(
        &mut self,
        node: World,
        placed: &mut Vec<Placed>,
        last_open: Option<SimTime>,
        level: usize,
    ) -> Result<(), Stop> {
        let until = self.end_of(placed);
        let used: usize = placed.iter().map(|p| p.faults.len()).sum();
        if used == level {
            self.spend()?;
            let mut w = node;
            // Nobody reads this run's points: it is only checked.
            w.stop_logging_decisions();
            if Self::run_to(&mut w, until) {
                self.report.inconclusive_runs += 1;
            }
            self.report.schedules += 1;
            let v = self.check(&w);
            if !v.is_empty() {
                return Err(Stop::Found(Box::new((placed.clone(), v))));
            }
            return Ok(());
        }
        self.spend()?;
        let mut probe = node.clone();
        probe.log_decisions();
        // A schedule's only fault goes before every event of its target (every offset at
        // which it first acts); a schedule of several, at the decision points.
        let single = level == 1;
        // The horizon of the deepest schedule below: what the probe must see points up to.
        let probe_until = match last_open {
            None => self.sc.limits.max_time,
            Some(_) => until,
        };
        let points = self.points(probe, last_open, probe_until, single);
        if single && placed.is_empty() {
            self.note_coverage(&points);
        }
        // The cursor's points are the probe's: it records none of its own.
        let mut cursor = node;
        cursor.stop_logging_decisions();
        for (p, menu) in points {
            let stop_at = SimTime(p.open_at.0 - 1);
            if cursor.now() < stop_at && cursor.run_until(stop_at).is_some() {
                break;
            }
            for (item, faults) in menu {
                if used + faults.len() > level {
                    continue;
                }
                placed.push(Placed {
                    point: p.label,
                    point_at: p.decision.at,
                    item,
                    faults: faults.clone(),
                });
                let mut w = if self.cfg.prefix_sharing {
                    let mut w = cursor.clone();
                    w.schedule_all(faults);
                    w
                } else {
                    self.fresh(placed)
                };
                w.run_until(p.open_at);
                let depth = used + placed.last().map_or(0, |p| p.faults.len());
                // Liveness looks back (how long the lock has been wanted and free), which the
                // fingerprint leaves out: models checking it are not deduplicated.
                let fingerprint = if self.dedup { w.fingerprint() } else { None };
                let fresh_state = match fingerprint {
                    Some(fp) => match self.seen.get(&fp) {
                        Some(&(d, l)) if d < depth || (d == depth && l == level) => false,
                        _ => {
                            if !self.seen.contains_key(&fp) {
                                self.report.distinct_states += 1;
                            }
                            self.seen.insert(fp, (depth, level));
                            true
                        }
                    },
                    None => true,
                };
                let r = if fresh_state {
                    self.walk(w, placed, Some(p.open_at), level)
                } else {
                    self.report.duplicates += 1;
                    Ok(())
                };
                placed.pop();
                r?;
            }
        }
        Ok(())
    }

    /// What the one-fault level places, by fault kind and target: how many offsets, which
    /// magnitudes (the report's exact statement of what "no violation" covered).
    fn note_coverage(&mut self, points: &[(Point, Vec<Item>)]) {
        for (p, menu) in points {
            if p.decision.kind == DecisionKind::Arrival {
                self.report.event_points += 1;
            }
            let mut families = std::collections::BTreeSet::new();
            for (_, faults) in menu {
                let Some(f) = faults.last() else { continue };
                let name = |q: ProcId| self.names[q.index()].clone();
                let (kind, target, magnitude) = coverage_key(f, &name, faults.len());
                let c = self
                    .report
                    .coverage
                    .entry((kind.clone(), target.clone()))
                    .or_default();
                c.placements += 1;
                c.magnitudes.insert(magnitude);
                if families.insert((kind, target)) {
                    if p.decision.kind == DecisionKind::Arrival {
                        c.at_events += 1;
                    } else {
                        c.at_decisions += 1;
                    }
                }
            }
        }
    }
}

/// A fault's family in the coverage table (kind, target) and its magnitude's text.
pub(super) fn coverage_key(
    f: &Fault,
    name: &dyn Fn(ProcId) -> String,
    n: usize,
) -> (String, String, (i64, String)) {
    let window = || match f.duration_ns {
        Some(d) => (d as i64, fmt_duration_ns(d)),
        None => (i64::MAX, "never ends".to_string()),
    };
    match &f.kind {
        FaultKind::Pause(p) => ("pause".into(), name(*p), window()),
        FaultKind::Crash {
            proc,
            keep_data,
            host_up,
        } => (
            format!(
                "crash ({}, host {}{})",
                if *keep_data { "data kept" } else { "empty" },
                if *host_up { "up" } else { "down" },
                if n > 1 { ", replication cut" } else { "" }
            ),
            name(*proc),
            window(),
        ),
        FaultKind::ClockStep { proc, delta_ms } => (
            "wall-clock step".into(),
            name(*proc),
            (*delta_ms, format!("{delta_ms:+}ms")),
        ),
        FaultKind::Drift { proc, drift_ppm } => (
            "drift".into(),
            name(*proc),
            (*drift_ppm, format!("{drift_ppm:+}ppm")),
        ),
        FaultKind::LatencySpike { from, to, extra_ns } => {
            let list = |v: &[ProcId]| v.iter().map(|p| name(*p)).collect::<Vec<_>>().join(",");
            (
                "latency spike".into(),
                format!("[{}] -> [{}]", list(from), list(to)),
                (*extra_ns as i64, format!("+{}", fmt_duration_ns(*extra_ns))),
            )
        }
        other @ (FaultKind::Partition { .. } | FaultKind::Isolate(_) | FaultKind::Loss { .. }) => {
            let described = Fault::new(SimTime::ZERO, None, other.clone()).describe(name);
            ("cut".into(), described, window())
        }
    }
}

/// Each `Acquired` decision with, as its peer, the node that last stored a write of that
/// client (its lock's node; for Redlock, the last of its quorum to answer).
fn with_granters(mut ds: Vec<Decision>) -> Vec<Decision> {
    let mut last: BTreeMap<ProcId, ProcId> = BTreeMap::new();
    for d in &mut ds {
        match d.kind {
            DecisionKind::Granted => {
                if let Some(c) = d.peer {
                    last.insert(c, d.proc);
                }
            }
            DecisionKind::Acquired => d.peer = last.get(&d.proc).copied(),
            _ => {}
        }
    }
    ds
}

/// The base scenario `explore` searches: the model with every fault source off (its scripted
/// faults kept if asked).
fn base_scenario(sc: &Scenario, keep_scripted: bool) -> Result<Scenario, String> {
    let faults = if keep_scripted {
        sc.model.faults.clone()
    } else {
        Vec::new()
    };
    sc.with_scripted_faults(faults).map_err(|e| e.message)
}

/// Explores `sc` (whose text is `original_text`, for the scripted model of a violation).
pub fn explore(
    sc: &Scenario,
    original_text: &str,
    cfg: &ExploreConfig,
) -> Result<ExploreReport, String> {
    explore_with(sc, original_text, cfg, None)
}

/// `explore` with the model's clients made by `custom` (`Scenario::build_with`): your own
/// algorithm in the model's world. Its processes are cloned through `Process::clone_box`;
/// without it every schedule is re-simulated from time 0 (same results, slower) and no
/// state is deduplicated.
pub fn explore_with(
    sc: &Scenario,
    original_text: &str,
    cfg: &ExploreConfig,
    custom: Option<&ClientFactory>,
) -> Result<ExploreReport, String> {
    let (mut search, base) = Search::new(sc, cfg, custom)?;
    let all = search.points(base.clone(), None, sc.limits.max_time, false);
    search.report.points = all.len();
    for (p, _) in &all {
        *search.report.points_by_kind.entry(p.label).or_default() += 1;
    }
    let mut outcome = None;
    for level in 0..=cfg.faults {
        match search.walk(base.clone(), &mut Vec::new(), None, level) {
            Ok(()) => search.report.levels_done = level + 1,
            Err(Stop::Budget) => break,
            Err(Stop::Found(f)) => {
                outcome = Some(*f);
                search.report.levels_done = level;
                break;
            }
        }
    }
    if let Some((placed, violations)) = outcome {
        search.report.found = Some(found(&search, original_text, placed, violations)?);
    }
    Ok(search.report)
}

fn found(
    s: &Search<'_>,
    original_text: &str,
    placed: Vec<Placed>,
    violations: Vec<Violation>,
) -> Result<Found, String> {
    let name = |p: ProcId| s.names[p.index()].clone();
    let mut scripted: Vec<FaultEntry> = if s.cfg.keep_scripted {
        s.sc.model.faults.clone()
    } else {
        Vec::new()
    };
    for p in &placed {
        for f in &p.faults {
            scripted.push(FaultEntry::realised(f, &name));
        }
    }
    let property = violations[0].property;
    let header = format!(
        "// {model}-explored — {property} with {k} fault{plural} at decision points of seed {seed} of {path}:\n// the shortest schedule `distlock-sim explore {path} --seed {seed}` found.\n",
        model = s.sc.name,
        k = placed.len(),
        plural = if placed.len() == 1 { "" } else { "s" },
        seed = s.cfg.seed,
        path = s.sc.path,
    );
    let model_text = scripted_text(original_text, &scripted, &header);
    // The scripted model, from the start and for its whole duration, must show it too.
    let replay_confirms = match crate::scenario::load_str(&s.sc.name, &s.sc.path, &model_text) {
        Ok(read) => crate::explore::run_world(&read, s.cfg.seed, TraceMode::Off)
            .0
            .violations
            .iter()
            .any(|v| v.property == property),
        Err(e) => {
            return Err(format!(
                "explored schedule does not read back as a model: {e}\n{model_text}"
            ));
        }
    };
    Ok(Found {
        placed,
        violations,
        scripted,
        model_text,
        replay_confirms,
    })
}

/// The PCT-style random mode: `runs` runs, each with `depth` faults placed at distinct
/// decision points of the base run, drawn uniformly (points and menu items), all scripted
/// from time 0.
#[derive(Clone, Debug, Default)]
pub struct PctReport {
    pub model: String,
    pub seed: u64,
    pub depth: usize,
    pub points: usize,
    /// Largest menu at any point: the bound uses it.
    pub max_menu: usize,
    /// Lower bound on one run finding a bug that needs a given placement of `depth` faults
    /// at base-run points: 1 / (C(n, d) · m^d).
    pub p_per_run: f64,
    /// Runs for 99 % confidence at that bound.
    pub runs_needed_99: f64,
    pub runs: u64,
    pub violating_runs: u64,
    /// 1 - (1 - p)^runs.
    pub confidence: f64,
    pub first: Option<(Vec<String>, Vec<Property>)>,
    /// Wall time, filled in by the caller (the library reads no host clock).
    pub wall_s: f64,
}

fn choose(n: usize, k: usize) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// PCT-style random placement (see `PctReport`).
pub fn pct(sc: &Scenario, seed: u64, depth: usize, runs: u64) -> Result<PctReport, String> {
    let base_sc = base_scenario(sc, false)?;
    let ctx = Ctx::new(sc);
    let (mut base, _) = base_sc.build(seed, TraceMode::Off);
    base.log_decisions();
    base.run();
    let names = base.names();
    // PCT draws among the protocol's decision points (not every event: its bound is over
    // the points of the base run).
    let points: Vec<Point> = with_granters(base.take_decisions())
        .iter()
        .filter(|d| d.kind != DecisionKind::Arrival)
        .filter_map(|d| ctx.point(d))
        .filter(|p| !ctx.menu(p, None, &names).is_empty())
        .collect();
    let menus: Vec<Vec<(String, Vec<Fault>)>> =
        points.iter().map(|p| ctx.menu(p, None, &names)).collect();
    let max_menu = menus.iter().map(Vec::len).max().unwrap_or(0);
    let n = points.len();
    let p = if n >= depth && max_menu > 0 {
        1.0 / (choose(n, depth) * (max_menu as f64).powi(depth as i32))
    } else {
        0.0
    };
    let runs_needed_99 = if p > 0.0 {
        (0.01f64.ln() / (1.0 - p).ln()).ceil()
    } else {
        f64::INFINITY
    };
    let mut rng = Seed(seed).stream("explore-pct", depth as u64);
    let mut report = PctReport {
        model: sc.name.clone(),
        seed,
        depth,
        points: n,
        max_menu,
        p_per_run: p,
        runs_needed_99,
        ..PctReport::default()
    };
    if n < depth || max_menu == 0 {
        return Ok(report);
    }
    for _ in 0..runs {
        // d distinct points, uniformly (a partial Fisher-Yates over indices).
        let mut idx: Vec<usize> = (0..n).collect();
        for i in 0..depth {
            let j = i + rng.below((n - i) as u64) as usize;
            idx.swap(i, j);
        }
        let mut chosen: Vec<usize> = idx[..depth].to_vec();
        chosen.sort_unstable();
        let mut faults = Vec::new();
        let mut what = Vec::new();
        for &i in &chosen {
            let menu = &menus[i];
            let item = &menu[rng.below(menu.len() as u64) as usize];
            faults.extend(item.1.clone());
            what.push(format!(
                "{} at {}: {}",
                points[i].label, points[i].decision.at, item.0
            ));
        }
        let (mut w, _) = base_sc.build(seed, TraceMode::Off);
        w.schedule_all(faults);
        w.run();
        report.runs += 1;
        let v = sc.check(&w);
        if !v.is_empty() {
            report.violating_runs += 1;
            if report.first.is_none() {
                report.first = Some((what, v.iter().map(|x| x.property).collect()));
            }
        }
    }
    report.confidence = 1.0 - (1.0 - p).powf(report.runs as f64);
    Ok(report)
}
