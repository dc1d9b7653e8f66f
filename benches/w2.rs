//! W2: a Redlock sweep — the bundled model `bench-w2` (five masters,
//! three Redlock clients, swarm faults, 60 s per seed). Throughput is seeds per second
//! (criterion's "elem/s"), with one and two worker threads: their ratio is the scaling figure.
//! Also the bare event-loop core: processes that only bounce messages, no Redis, no history.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use distlock_sim::clock::NodeClock;
use distlock_sim::explore::{Shard, sweep};
use distlock_sim::net::LinkSpec;
use distlock_sim::process::{Cx, Process};
use distlock_sim::proto::{Msg, Reply};
use distlock_sim::rng::{Ratio, Seed};
use distlock_sim::scenario;
use distlock_sim::sim::{Actor, Limits, ProcSpec, TraceMode, World};
use distlock_sim::time::{NS_PER_MS, NS_PER_S, ProcId, SimTime};

const SEEDS: u64 = 40;

fn w2(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/bench-w2.ron");
    let sc = scenario::load(&path).expect("bundled model loads");
    let mut g = c.benchmark_group("w2");
    g.sample_size(10);
    g.throughput(Throughput::Elements(SEEDS));
    let mut start = 0u64;
    for jobs in [1usize, 2] {
        g.bench_function(format!("sweep_{SEEDS}_seeds_jobs_{jobs}"), |b| {
            b.iter(|| {
                start += SEEDS;
                let s = sweep(
                    &sc,
                    black_box(start)..start + SEEDS,
                    Shard::WHOLE,
                    jobs,
                    &|| {},
                );
                s.seeds_run
            })
        });
    }
    g.finish();
}

/// Bounces a message to its peer after a random 0-1 ms delay: the loop's own cost per event.
struct Bouncer {
    peer: ProcId,
}

impl Process for Bouncer {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        cx.send(
            self.peer,
            Msg::Reply {
                id: 0,
                reply: Reply::Ok,
            },
        );
    }
    fn on_message(&mut self, cx: &mut Cx<'_>, _from: ProcId, _msg: Msg) {
        let d = cx.rng.range_inclusive(0, NS_PER_MS);
        cx.set_timer(d, 0);
    }
    fn on_timer(&mut self, cx: &mut Cx<'_>, _tag: u64) {
        cx.send(
            self.peer,
            Msg::Reply {
                id: 0,
                reply: Reply::Ok,
            },
        );
    }
    fn on_restart(&mut self, _keep_data: bool) {}
}

fn loop_core(c: &mut Criterion) {
    let build = |seed: u64| {
        let procs = (0..16u32)
            .map(|i| ProcSpec {
                name: format!("p{i}"),
                actor: Actor::Custom(Box::new(Bouncer {
                    peer: ProcId(i ^ 1),
                })),
                clock: NodeClock::perfect(0),
                start_at: distlock_sim::time::SimTime::ZERO,
            })
            .collect();
        let limits = Limits {
            max_time: SimTime(10 * NS_PER_S),
            max_events: u64::MAX,
        };
        World::new(
            Seed(seed),
            limits,
            LinkSpec::new(100_000, NS_PER_MS, Ratio::NEVER),
            procs,
            TraceMode::Off,
        )
    };
    let events = {
        let mut w = build(0);
        w.run();
        w.events_handled()
    };
    let mut g = c.benchmark_group("loop_core");
    g.sample_size(10);
    g.throughput(Throughput::Elements(events));
    let mut seed = 0;
    g.bench_function("bounce_16_procs_10s", |b| {
        b.iter(|| {
            seed += 1;
            let mut w = build(black_box(seed % 2));
            w.run();
            w.events_handled()
        })
    });
    g.finish();
}

criterion_group!(benches, w2, loop_core);
criterion_main!(benches);
