//! The sleeping cron (`CronMode::WhenDue`: a tick is an event only where a key is due)
//! against the cron that ticks at every point of its grid (`CronMode::EveryTick`, what the
//! loop did before): the same history, record for record and nanosecond for nanosecond,
//! and the same trace but for the skipped ticks.

use std::path::Path;

use distlock_sim::clock::NodeClock;
use distlock_sim::net::LinkSpec;
use distlock_sim::process::{Cx, Process};
use distlock_sim::proto::command::SetExpiry;
use distlock_sim::proto::{Bytes, Command, Msg};
use distlock_sim::redis::node::cron::CronMode;
use distlock_sim::redis::node::{Fsync, Persistence};
use distlock_sim::redis::{RedisConfig, RedisProcess};
use distlock_sim::rng::{Ratio, Seed};
use distlock_sim::scenario::{self, Scenario};
use distlock_sim::sim::trace::TraceKind;
use distlock_sim::sim::{Actor, Fault, FaultKind, Limits, ProcSpec, TraceMode, World};
use distlock_sim::time::{NS_PER_MS, ProcId, SimTime};

/// The cron's timer tag (node.rs `TIMER_CRON`).
const CRON_TAG: u64 = 1;

fn with_mode(mut w: World, mode: CronMode) -> World {
    for p in 0..w.proc_count() {
        if let Some(r) = w.actor_mut(ProcId(p as u32)).as_redis_mut() {
            r.set_cron_mode(mode);
        }
    }
    w
}

fn run(sc: &Scenario, seed: u64, mode: CronMode) -> World {
    let (w, _) = sc.build(seed, TraceMode::Full);
    let mut w = with_mode(w, mode);
    w.run();
    w
}

/// Everything a run leaves behind but its cron ticks: every history record, every trace
/// entry other than a node's cron timer, the end time.
fn transcript(w: &World) -> String {
    let names = w.names();
    let mut text = String::new();
    for r in &w.history.records {
        text.push_str(&format!("{} {} {:?}\n", r.at, names[r.proc.index()], r.obs));
    }
    for e in &w.trace.entries {
        let cron = matches!(e.kind, TraceKind::Timer { tag: CRON_TAG })
            && w.actor(e.proc).as_redis().is_some();
        if !cron {
            text.push_str(&format!(
                "{} {} {} {:?}\n",
                e.at,
                names[e.proc.index()],
                e.wall_ms,
                e.kind
            ));
        }
    }
    text.push_str(&format!("end {}\n", w.now()));
    text
}

fn cron_ticks(w: &World) -> usize {
    w.trace
        .entries
        .iter()
        .filter(|e| {
            matches!(e.kind, TraceKind::Timer { tag: CRON_TAG })
                && w.actor(e.proc).as_redis().is_some()
        })
        .count()
}

/// Runs `sc` both ways over `seeds`; returns the ticks each way.
fn assert_same(sc: &Scenario, seeds: std::ops::Range<u64>) -> (usize, usize) {
    let (mut every, mut due) = (0, 0);
    for seed in seeds {
        let a = run(sc, seed, CronMode::EveryTick);
        let b = run(sc, seed, CronMode::WhenDue);
        let (ta, tb) = (transcript(&a), transcript(&b));
        if ta != tb {
            let first = ta
                .lines()
                .zip(tb.lines())
                .find(|(x, y)| x != y)
                .map(|(x, y)| format!("every tick: {x}\nwhen due:   {y}"));
            panic!("{} seed {seed}: the runs differ\n{first:?}", sc.name);
        }
        every += cron_ticks(&a);
        due += cron_ticks(&b);
    }
    (every, due)
}

fn load(text: &str) -> Scenario {
    scenario::load_str("cron", "cron.ron", text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_catalogue_model_runs_the_same_with_and_without_sleeping_crons() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    paths.sort();
    assert!(paths.len() > 40, "the catalogue is there");
    let (mut every, mut due) = (0, 0);
    for p in &paths {
        let sc = scenario::load(p).unwrap_or_else(|e| panic!("{e}"));
        let (a, b) = assert_same(&sc, 0..4);
        every += a;
        due += b;
    }
    assert!(due * 2 < every, "ticks: {every} every tick, {due} when due");
}

/// One node whose keys expire actively all the time (holds beyond the TTL), and `faults`
/// on it drawn per seed.
fn expiring_model(node: &str, faults: &str) -> Scenario {
    load(&format!(
        r#"(
        description: "cron",
        duration: "20s",
        nodes: [{node}],
        clients: [(name: "c", count: 3, algorithm: "set-px-cad", node: "redis", ttl: "150ms",
                   hold: ("10ms", "400ms"), think: ("0ms", "300ms"), retry: ("1ms", "50ms"))],
        network: (latency: ("100us", "2ms")),
        random_faults: [{faults}],
        check: ["mutual_exclusion"],
    )"#
    ))
}

#[test]
fn a_key_expires_actively_at_the_same_tick_with_and_without_sleeping_crons() {
    let sc = expiring_model(r#"(name: "redis")"#, "");
    let (every, due) = assert_same(&sc, 0..10);
    assert!(due < every, "{due} of {every}");
}

#[test]
fn a_wall_clock_step_makes_a_key_due_at_the_tick_it_does_when_every_tick_runs() {
    let sc = expiring_model(
        r#"(name: "redis")"#,
        r#"clock_step(targets: ["redis"], every: ("200ms", "2s"), delta: ("-3s", "+3s"))"#,
    );
    assert_same(&sc, 0..20);
}

#[test]
fn drift_changes_move_the_grid_of_a_sleeping_cron_as_they_move_a_ticking_one() {
    // A drifting clock from the start (timer conversions round), and windows that change
    // the rate while the node sleeps.
    let sc = expiring_model(
        r#"(name: "redis", clock: (drift_ppm: 123457))"#,
        r#"drift(targets: ["redis"], every: ("100ms", "2s"), duration: ("50ms", "3s"), ppm: (-400000, 300000))"#,
    );
    assert_same(&sc, 0..20);
}

#[test]
fn a_pause_of_a_sleeping_node_parks_its_tick_and_restarts_the_grid_at_the_resume() {
    let sc = expiring_model(
        r#"(name: "redis", clock: (drift_ppm: -77777))"#,
        r#"pause(targets: ["redis"], every: ("100ms", "2s"), duration: ("1ms", "900ms"))"#,
    );
    assert_same(&sc, 0..20);
}

#[test]
fn a_crash_ends_the_grid_and_a_restart_draws_a_new_one() {
    let sc = expiring_model(
        r#"(name: "redis", persistence: aof(fsync: everysec))"#,
        r#"crash(targets: ["redis"], every: ("300ms", "3s"), down: ("10ms", "500ms")),
           crash(targets: ["redis"], every: ("1s", "5s"), down: ("10ms", "300ms"), keep_data: false)"#,
    );
    assert_same(&sc, 0..20);
}

#[test]
fn every_fault_on_a_sleeping_node_at_once_changes_nothing_it_shows() {
    let sc = expiring_model(
        r#"(name: "redis", clock: (drift_ppm: 31337), persistence: rdb(every: "1s"))"#,
        r#"clock_step(targets: ["redis"], every: ("200ms", "2s"), delta: ("-2s", "+2s")),
           drift(targets: ["redis"], every: ("100ms", "2s"), duration: ("50ms", "3s"), ppm: (-300000, 300000)),
           pause(targets: ["redis"], every: ("100ms", "2s"), duration: ("1ms", "900ms")),
           crash(targets: ["redis"], every: ("1s", "4s"), down: ("10ms", "300ms")),
           pause(targets: ["c1", "c2"], every: ("100ms", "2s"), duration: ("1ms", "900ms"))"#,
    );
    assert_same(&sc, 0..30);
}

#[test]
fn a_node_with_no_volatile_key_arms_no_cron() {
    // A node alone: nothing is ever due, so after the first tick of its start no tick is an
    // event; ticking, it makes one every 100 ms.
    let build = |mode| {
        let procs = vec![ProcSpec {
            name: "redis".into(),
            actor: Actor::Redis(Box::new(
                RedisProcess::new(RedisConfig::default())
                    .with_cron_phase(Seed(1).stream("cron-phase", 0)),
            )),
            clock: NodeClock::new(1_700_000_000_000, 0, 0),
            start_at: SimTime::ZERO,
        }];
        let limits = Limits {
            max_time: SimTime::from_ms(10_000),
            max_events: 100_000,
        };
        let link = LinkSpec::new(0, 0, Ratio::new(0, 1).unwrap());
        let mut w = with_mode(
            World::new(Seed(0), limits, link, procs, TraceMode::Full),
            mode,
        );
        w.run();
        w
    };
    assert_eq!(build(CronMode::EveryTick).events_handled(), 100);
    assert_eq!(build(CronMode::WhenDue).events_handled(), 1);
}

#[test]
fn a_world_with_sleeping_crons_cloned_mid_run_continues_as_the_original() {
    let sc = expiring_model(
        r#"(name: "redis", clock: (drift_ppm: 5000))"#,
        r#"clock_step(targets: ["redis"], every: ("200ms", "2s"), delta: ("-2s", "+2s")),
           pause(targets: ["redis"], every: ("100ms", "2s"), duration: ("1ms", "900ms"))"#,
    );
    for seed in 0..5 {
        let (mut w, _) = sc.build(seed, TraceMode::Full);
        assert!(w.run_until(SimTime::from_ms(7_345)).is_none());
        let mut copy = w.snapshot().expect("clonable");
        w.run();
        copy.run();
        assert_eq!(transcript(&w), transcript(&copy));
        assert_eq!(w.events_handled(), copy.events_handled());
    }
}

/// Writes batches of keys to node 0: up to 1,010 at once with one deadline (the fill stop
/// leaves stragglers), keys without a deadline (the keys table), deletions of earlier
/// batches; at random moments, so that writes fall between and on the cron's ticks.
#[derive(Clone)]
struct Batches {
    next_id: u64,
    batch: u64,
}

impl Batches {
    fn send(&mut self, cx: &mut Cx<'_>, cmd: Command) {
        self.next_id += 1;
        cx.send(
            ProcId(0),
            Msg::Request {
                id: self.next_id,
                cmd,
            },
        );
    }
}

impl Process for Batches {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        let first = cx.rng.below(50 * NS_PER_MS);
        cx.set_timer(first, 0);
    }
    fn on_message(&mut self, _cx: &mut Cx<'_>, _from: ProcId, _msg: Msg) {}
    fn on_timer(&mut self, cx: &mut Cx<'_>, _tag: u64) {
        self.batch += 1;
        let b = self.batch;
        let n = match cx.rng.below(10) {
            0 => 1010,
            1..=3 => 30,
            _ => 1,
        };
        let ttl_ms = 50 + cx.rng.below(400);
        for i in 0..n {
            let expiry = (cx.rng.below(100) != 0).then_some(SetExpiry::Px(ttl_ms as i64));
            let cmd = Command::Set {
                key: Bytes::from(format!("b{b}-{i}").as_str()),
                value: Bytes::from("v"),
                cond: None,
                get: false,
                expiry,
            };
            self.send(cx, cmd);
        }
        if b > 2 && cx.rng.below(3) == 0 {
            let old = b - 1 - cx.rng.below(2);
            let keys = (0..30)
                .map(|i| Bytes::from(format!("b{old}-{i}").as_str()))
                .collect();
            self.send(cx, Command::Del(keys));
        }
        let next = 20 * NS_PER_MS + cx.rng.below(500 * NS_PER_MS);
        cx.set_timer(next, 0);
    }
    fn on_restart(&mut self, _keep_data: bool) {}
    fn clone_box(&self) -> Option<Box<dyn Process>> {
        Some(Box::new(self.clone()))
    }
}

fn batch_world(seed: u64, mode: CronMode) -> World {
    let redis = RedisProcess::new(RedisConfig {
        persistence: Persistence::Aof(Fsync::EverySec),
        ..RedisConfig::default()
    })
    .with_cron_phase(Seed(seed).stream("cron-phase", 0));
    let procs = vec![
        ProcSpec {
            name: "redis".into(),
            actor: Actor::Redis(Box::new(redis)),
            clock: NodeClock::new(1_700_000_000_000, 0, 3_001),
            start_at: SimTime::ZERO,
        },
        ProcSpec {
            name: "batches".into(),
            actor: Actor::Custom(Box::new(Batches {
                next_id: 0,
                batch: 0,
            })),
            clock: NodeClock::perfect(1_700_000_000_000),
            start_at: SimTime::ZERO,
        },
    ];
    let limits = Limits {
        max_time: SimTime::from_ms(20_000),
        max_events: 10_000_000,
    };
    let link = LinkSpec::new(100_000, 2 * NS_PER_MS, Ratio::new(0, 1).unwrap());
    let mut w = with_mode(
        World::new(Seed(seed), limits, link, procs, TraceMode::Full),
        mode,
    );
    // Faults on the node at times drawn per seed: every kind that moves or parks its grid.
    let mut rng = Seed(seed).stream("cron-test-faults", 0);
    let node = ProcId(0);
    for _ in 0..12 {
        let at = SimTime(rng.below(19_000 * NS_PER_MS));
        let kind = match rng.below(4) {
            0 => FaultKind::ClockStep {
                proc: node,
                delta_ms: rng.below(4_000) as i64 - 2_000,
            },
            1 => FaultKind::Drift {
                proc: node,
                drift_ppm: rng.below(600_000) as i64 - 300_000,
            },
            2 => FaultKind::Pause(node),
            _ => FaultKind::Crash {
                proc: node,
                keep_data: rng.below(2) == 0,
                host_up: true,
            },
        };
        let duration = match kind {
            FaultKind::ClockStep { .. } => None,
            _ => Some(NS_PER_MS + rng.below(700 * NS_PER_MS)),
        };
        w.schedule(Fault::new(at, duration, kind));
    }
    w.run();
    w
}

#[test]
fn batches_expire_with_the_same_stragglers_with_and_without_sleeping_crons() {
    let (mut every, mut due) = (0, 0);
    for seed in 0..12 {
        let a = batch_world(seed, CronMode::EveryTick);
        let b = batch_world(seed, CronMode::WhenDue);
        assert_eq!(transcript(&a), transcript(&b), "seed {seed}");
        every += cron_ticks(&a);
        due += cron_ticks(&b);
    }
    assert!(due < every, "{due} of {every}");
}

/// Clients that BLPOP keys `q0`..`q2` with timeouts of 0 to 900 ms (or none) and push to
/// them at random moments: each is a process of its own, so the node keeps one blocked
/// request per client.
#[derive(Clone)]
struct Poppers {
    next_id: u64,
}

impl Process for Poppers {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        let first = cx.rng.below(50 * NS_PER_MS);
        cx.set_timer(first, 0);
    }
    fn on_message(&mut self, _cx: &mut Cx<'_>, _from: ProcId, _msg: Msg) {}
    fn on_timer(&mut self, cx: &mut Cx<'_>, _tag: u64) {
        self.next_id += 1;
        let key = |cx: &mut Cx<'_>| Bytes::from(format!("q{}", cx.rng.below(3)).as_str());
        let cmd = if cx.rng.below(2) == 0 {
            let timeout = match cx.rng.below(5) {
                0 => "0".to_string(),
                _ => format!("0.{:03}", cx.rng.below(900)),
            };
            Command::BLPop {
                keys: vec![key(cx), key(cx)],
                timeout: Bytes::from(timeout.as_str()),
            }
        } else {
            Command::LPush(key(cx), vec![Bytes::from("x")])
        };
        cx.send(
            ProcId(0),
            Msg::Request {
                id: self.next_id,
                cmd,
            },
        );
        let next = 20 * NS_PER_MS + cx.rng.below(700 * NS_PER_MS);
        cx.set_timer(next, 0);
    }
    fn on_restart(&mut self, _keep_data: bool) {}
    fn clone_box(&self) -> Option<Box<dyn Process>> {
        Some(Box::new(self.clone()))
    }
}

fn popper_world(seed: u64, mode: CronMode) -> World {
    let redis = RedisProcess::new(RedisConfig::default())
        .with_cron_phase(Seed(seed).stream("cron-phase", 0));
    let mut procs = vec![ProcSpec {
        name: "redis".into(),
        actor: Actor::Redis(Box::new(redis)),
        clock: NodeClock::new(1_700_000_000_000, 0, 2_003),
        start_at: SimTime::ZERO,
    }];
    for i in 0..4 {
        procs.push(ProcSpec {
            name: format!("popper{i}"),
            actor: Actor::Custom(Box::new(Poppers { next_id: 0 })),
            clock: NodeClock::perfect(1_700_000_000_000),
            start_at: SimTime::ZERO,
        });
    }
    let limits = Limits {
        max_time: SimTime::from_ms(15_000),
        max_events: 10_000_000,
    };
    let link = LinkSpec::new(100_000, 2 * NS_PER_MS, Ratio::new(0, 1).unwrap());
    let mut w = with_mode(
        World::new(Seed(seed), limits, link, procs, TraceMode::Full),
        mode,
    );
    // Clock steps (deadlines are on the node's wall clock), pauses and crashes of the node.
    let mut rng = Seed(seed).stream("cron-test-faults", 0);
    let node = ProcId(0);
    for _ in 0..8 {
        let at = SimTime(rng.below(14_000 * NS_PER_MS));
        let (kind, duration) = match rng.below(3) {
            0 => (
                FaultKind::ClockStep {
                    proc: node,
                    delta_ms: rng.below(2_000) as i64 - 1_000,
                },
                None,
            ),
            1 => (
                FaultKind::Pause(node),
                Some(NS_PER_MS + rng.below(500 * NS_PER_MS)),
            ),
            _ => (
                FaultKind::Crash {
                    proc: node,
                    keep_data: true,
                    host_up: true,
                },
                Some(NS_PER_MS + rng.below(300 * NS_PER_MS)),
            ),
        };
        w.schedule(Fault::new(at, duration, kind));
    }
    w.run();
    w
}

/// The BLPOP replies the poppers got: (served, timed out).
fn popper_replies(w: &World) -> (usize, usize) {
    let mut served = (0, 0);
    for e in &w.trace.entries {
        if let TraceKind::Recv {
            msg: Msg::Reply { reply, .. },
            ..
        } = &e.kind
        {
            match reply {
                distlock_sim::proto::Reply::Array(_) => served.0 += 1,
                distlock_sim::proto::Reply::Nil => served.1 += 1,
                _ => {}
            }
        }
    }
    served
}

#[test]
fn blpop_clients_time_out_and_are_served_the_same_with_and_without_sleeping_crons() {
    let (mut every, mut due) = (0, 0);
    let (mut served, mut timed_out) = (0, 0);
    for seed in 0..12 {
        let a = popper_world(seed, CronMode::EveryTick);
        let b = popper_world(seed, CronMode::WhenDue);
        assert_eq!(transcript(&a), transcript(&b), "seed {seed}");
        every += cron_ticks(&a);
        due += cron_ticks(&b);
        let (s, t) = popper_replies(&b);
        served += s;
        timed_out += t;
    }
    assert!(due < every, "{due} of {every}");
    assert!(
        served > 100 && timed_out > 100,
        "{served} served, {timed_out} timed out"
    );
}
