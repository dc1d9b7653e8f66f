//! W1 (../shared/workloads.md): one node, 8 clients contending with SET NX PX 30 + the unlock
//! script over 0.1-1 ms links, 10 s of virtual time — the bundled model `bench-w1`, with all
//! of its checkers on. Throughput is reported in *simulated seconds per wall second*
//! (criterion's "elem/s"), the figure to put next to `../shared/yardstick/w1-bare`.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use distlock_sim::explore::run_seed;
use distlock_sim::scenario;

fn w1(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("models/bench-w1.ron");
    let sc = scenario::load(&path).expect("bundled model loads");
    let sim_s = sc.limits.max_time.0 / 1_000_000_000;
    let mut g = c.benchmark_group("w1");
    g.sample_size(20);
    g.throughput(Throughput::Elements(sim_s));
    let mut seed = 0u64;
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
