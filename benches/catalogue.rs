//! Real models rather than workloads, in seeds per second (criterion's "elem/s"):
//!
//! - `catalogue/sweep_each_model_20_seeds`: every non-benchmark model of `models/`, 20 seeds
//!   each, one worker. The loop-core bench (benches/w2.rs) has one shape of queue — events
//!   spread evenly over the next millisecond — while real models keep most pending events due
//!   much later than a new one (timeouts, cron ticks, holds, scheduled faults). The queue's
//!   layout was chosen on this figure (docs/benchmarks.md).
//! - `scale/sweep_320_procs_10_seeds`: one large world, 64 nodes and 256 clients contending
//!   for 2 s: what grows with the number of processes (the n × n link matrix, the queue,
//!   per-process state) shows here first. It once spent most of its time allocating 37 MB
//!   of link state per seed.
//! - `scale/sweep_125_keys_10_seeds`: one node holding many keys, 125 locks with two clients
//!   each: what grows with the keyspace shows here. The sleeping cron once read every key's
//!   deadline after every event at the node (+33 % instructions on this model).

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use distlock_sim::explore::{Shard, sweep};
use distlock_sim::scenario::{self, Scenario};

const CATALOGUE_SEEDS: u64 = 20;
const SCALE_SEEDS: u64 = 10;

fn catalogue_models() -> Vec<Scenario> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("models/ is readable")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "ron")
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("bench-"))
        })
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| scenario::load(p).expect("bundled model loads"))
        .collect()
}

fn catalogue(c: &mut Criterion) {
    let models = catalogue_models();
    let mut g = c.benchmark_group("catalogue");
    g.sample_size(10);
    g.throughput(Throughput::Elements(models.len() as u64 * CATALOGUE_SEEDS));
    let mut start = 0u64;
    g.bench_function(format!("sweep_each_model_{CATALOGUE_SEEDS}_seeds"), |b| {
        b.iter(|| {
            start += CATALOGUE_SEEDS;
            models
                .iter()
                .map(|sc| {
                    sweep(
                        sc,
                        black_box(start)..start + CATALOGUE_SEEDS,
                        Shard::WHOLE,
                        1,
                        &|| {},
                    )
                    .seeds_run
                })
                .sum::<u64>()
        })
    });
    g.finish();
}

/// 64 masters and 256 `set-px-cad` clients on the first of them, 2 s.
fn scale_model() -> Scenario {
    let nodes: Vec<String> = (1..=64).map(|i| format!("(name: \"r{i}\")")).collect();
    let text = format!(
        r#"(
    description: "scale: 64 nodes, 256 clients",
    duration: "2s",
    nodes: [{}],
    clients: [(
        name: "c", count: 256, algorithm: "set-px-cad", node: "r1",
        ttl: "10s", hold: ("1ms", "3ms"), think: ("0ms", "500ms"), retry: ("50ms", "200ms"),
    )],
    network: (latency: ("100us", "1ms")),
    check: ["mutual_exclusion"],
)"#,
        nodes.join(", ")
    );
    scenario::load_str("scale-320", "benches/catalogue.rs", &text).expect("the scale model loads")
}

/// One node, 125 keys, two `set-px-cad` clients on each, 2 s.
fn many_keys_model() -> Scenario {
    let groups: Vec<String> = (0..125)
        .map(|i| {
            format!(
                "(name: \"c{i}-\", count: 2, algorithm: \"set-px-cad\", node: \"redis\", \
                 key: \"lock{i}\", ttl: \"10s\", hold: \"5ms\", think: (\"0ms\", \"2ms\"), \
                 retry: (\"0ms\", \"2ms\"))"
            )
        })
        .collect();
    let text = format!(
        r#"(
    description: "scale: 125 keys on one node, two clients each",
    duration: "2s",
    nodes: [(name: "redis")],
    clients: [{}],
    network: (latency: ("100us", "1ms")),
    check: ["mutual_exclusion"],
)"#,
        groups.join(", ")
    );
    scenario::load_str("many-keys", "benches/catalogue.rs", &text)
        .expect("the many-keys model loads")
}

fn scale(c: &mut Criterion) {
    let mut g = c.benchmark_group("scale");
    g.sample_size(10);
    g.throughput(Throughput::Elements(SCALE_SEEDS));
    let mut start = 0u64;
    for (name, sc) in [
        (
            format!("sweep_320_procs_{SCALE_SEEDS}_seeds"),
            scale_model(),
        ),
        (
            format!("sweep_125_keys_{SCALE_SEEDS}_seeds"),
            many_keys_model(),
        ),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                start += SCALE_SEEDS;
                sweep(
                    &sc,
                    black_box(start)..start + SCALE_SEEDS,
                    Shard::WHOLE,
                    1,
                    &|| {},
                )
                .seeds_run
            })
        });
    }
    g.finish();
}

criterion_group!(benches, catalogue, scale);
criterion_main!(benches);
