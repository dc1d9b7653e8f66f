//! W1: one node, 8 clients contending with SET NX PX 30 + the unlock
//! script over 0.1-1 ms links, 10 s of virtual time. Throughput is reported in *simulated
//! seconds per wall second* (criterion's "elem/s"), the figure to put next to
//! the bare-loop yardstick `w1-bare` (not in this repository; README's table quotes it).
//!
//! Two measurements:
//! - `engine_fixture_clients`: the engine — event loop, network, clocks, the real Redis node
//!   executing every command and script — driven by minimal W1 fixture clients, no history or
//!   checkers (issue 2's setting: what the yardstick measures);
//! - `run_10s_all_checkers`: the bundled model `bench-w1` end to end — real lock clients,
//!   history, every checker, overlap and safety margins (the product as users run it).

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use distlock_sim::clock::NodeClock;
use distlock_sim::explore::run_seed;
use distlock_sim::net::LinkSpec;
use distlock_sim::process::{Cx, Process};
use distlock_sim::proto::command::{ScriptRef, SetCond, SetExpiry};
use distlock_sim::proto::scripts::UNLOCK_SRC;
use distlock_sim::proto::{Bytes, Command, Msg, Reply, Script};
use distlock_sim::redis::{RedisConfig, RedisProcess};
use distlock_sim::rng::{Ratio, Seed};
use distlock_sim::scenario;
use distlock_sim::sim::{Actor, Limits, ProcSpec, TraceMode, World};
use distlock_sim::time::{NS_PER_MS, NS_PER_S, ProcId, SimTime};

/// W1's client exactly: SET NX PX 30; OK → hold 5 ms, unlock script, next attempt on its
/// reply; nil → wait U[0, 2 ms], next attempt.
struct W1Client {
    id: u64,
    token_base: u64,
    holding: bool,
    token: Bytes,
    unlock: Script,
}

const TIMER_NEXT: u64 = 0;
const TIMER_RELEASE: u64 = 1;

impl W1Client {
    fn attempt(&mut self, cx: &mut Cx<'_>) {
        self.id += 1;
        self.token = Bytes::from((self.token_base + self.id).to_string().as_str());
        let cmd = Command::Set {
            key: Bytes::from("lock"),
            value: self.token.clone(),
            cond: Some(SetCond::Nx),
            get: false,
            expiry: Some(SetExpiry::Px(30)),
        };
        cx.send(ProcId(0), Msg::Request { id: self.id, cmd });
    }
}

impl Process for W1Client {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        self.attempt(cx);
    }
    fn on_message(&mut self, cx: &mut Cx<'_>, _from: ProcId, msg: Msg) {
        let Msg::Reply { reply, .. } = msg else {
            return;
        };
        if self.holding {
            self.holding = false;
            self.attempt(cx);
        } else if reply == Reply::Ok {
            self.holding = true;
            cx.set_timer(5 * NS_PER_MS, TIMER_RELEASE);
        } else {
            let d = cx.rng.range_inclusive(0, 2 * NS_PER_MS);
            cx.set_timer(d, TIMER_NEXT);
        }
    }
    fn on_timer(&mut self, cx: &mut Cx<'_>, tag: u64) {
        if tag == TIMER_RELEASE {
            self.id += 1;
            let cmd = Command::Eval {
                script: ScriptRef::Source(self.unlock.clone()),
                keys: [Bytes::from("lock")].into(),
                args: [self.token.clone()].into(),
                read_only: false,
            };
            cx.send(ProcId(0), Msg::Request { id: self.id, cmd });
        } else {
            self.attempt(cx);
        }
    }
    fn on_restart(&mut self, _keep_data: bool) {}
}

fn w1_fixture_world(seed: u64) -> World {
    let epoch = 1_700_000_000_000;
    let mut procs = vec![ProcSpec {
        name: "redis".into(),
        actor: Actor::Redis(Box::new(RedisProcess::new(RedisConfig {
            observe_keys: false,
            ..RedisConfig::default()
        }))),
        clock: NodeClock::perfect(epoch),
        start_at: distlock_sim::time::SimTime::ZERO,
    }];
    let unlock = Script::new(UNLOCK_SRC.as_bytes());
    for i in 0..8u64 {
        procs.push(ProcSpec {
            name: format!("c{i}"),
            actor: Actor::Custom(Box::new(W1Client {
                id: 0,
                token_base: i << 40,
                holding: false,
                token: Bytes::new(),
                unlock: unlock.clone(),
            })),
            clock: NodeClock::perfect(epoch),
            start_at: distlock_sim::time::SimTime::ZERO,
        });
    }
    let link = LinkSpec::new(100_000, NS_PER_MS, Ratio::NEVER);
    let limits = Limits {
        max_time: SimTime(10 * NS_PER_S),
        max_events: 10_000_000,
    };
    World::new(Seed(seed), limits, link, procs, TraceMode::Off)
}

fn w1(c: &mut Criterion) {
    let mut g = c.benchmark_group("w1");
    g.sample_size(20);
    g.throughput(Throughput::Elements(10));
    let mut seed = 0u64;
    g.bench_function("engine_fixture_clients", |b| {
        b.iter(|| {
            seed += 1;
            let mut w = w1_fixture_world(black_box(seed % 64));
            w.run();
            w.events_handled()
        })
    });
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/bench-w1.ron");
    let sc = scenario::load(&path).expect("bundled model loads");
    assert_eq!(sc.limits.max_time.0, 10 * NS_PER_S);
    g.bench_function("run_10s_all_checkers", |b| {
        b.iter(|| {
            // A different seed each iteration: the figure is an average over schedules.
            seed += 1;
            let o = run_seed(&sc, black_box(seed % 64));
            assert!(o.violations.is_empty(), "W1 must not violate");
            o.events
        })
    });
    g.finish();
}

criterion_group!(benches, w1);
criterion_main!(benches);
