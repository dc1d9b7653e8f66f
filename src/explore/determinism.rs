//! The determinism self-check: run a seed twice and report the first event where the two
//! runs diverge. A run is a pure function of model and seed; this is how a regression of
//! that promise is caught and located.

use std::ops::Range;

use rayon::prelude::*;

use crate::explore::{Shard, run_world};
use crate::scenario::Scenario;
use crate::sim::TraceMode;

/// Where two runs of the same seed first differed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    pub seed: u64,
    /// "trace" or "history", and the index of the first differing entry.
    pub stream: &'static str,
    pub index: usize,
    pub first: String,
    pub second: String,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seed {}: runs diverge at {} entry {}:\n  first run:  {}\n  second run: {}",
            self.seed, self.stream, self.index, self.first, self.second
        )
    }
}

fn first_difference(a: &[String], b: &[String]) -> Option<(usize, String, String)> {
    let n = a.len().max(b.len());
    (0..n).find_map(|i| {
        let (x, y) = (a.get(i), b.get(i));
        (x != y).then(|| {
            let show = |s: Option<&String>| s.cloned().unwrap_or_else(|| "(run ended)".into());
            (i, show(x), show(y))
        })
    })
}

/// Runs `seed` twice with full traces and compares them event by event.
pub fn check_seed(sc: &Scenario, seed: u64) -> Result<(), Divergence> {
    let runs: Vec<(Vec<String>, Vec<String>)> = (0..2)
        .map(|_| {
            let (_, w) = run_world(sc, seed, TraceMode::Full);
            let names = w.names();
            // The entries kept, and past the trace's cap their count and hash.
            let trace: Vec<String> = w.trace.lines(&|p| names[p.index()].clone());
            let history: Vec<String> = w
                .history
                .records
                .iter()
                .map(|r| format!("{} {} {:?}", r.at, names[r.proc.index()], r.obs))
                .collect();
            (trace, history)
        })
        .collect();
    if let Some((index, first, second)) = first_difference(&runs[0].0, &runs[1].0) {
        return Err(Divergence {
            seed,
            stream: "trace",
            index,
            first,
            second,
        });
    }
    if let Some((index, first, second)) = first_difference(&runs[0].1, &runs[1].1) {
        return Err(Divergence {
            seed,
            stream: "history",
            index,
            first,
            second,
        });
    }
    Ok(())
}

/// What `--check-determinism` found over a range of seeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeterminismSummary {
    pub seeds_run: u64,
    pub divergent_seeds: u64,
    /// The divergence of the lowest divergent seed.
    pub first: Option<Divergence>,
}

/// Runs every seed of `seeds` in `shard` twice on `jobs` threads. Seeds are handed out in
/// chunks and only the first divergence is kept, so memory stays flat however many seeds
/// the range holds (a range is never collected).
pub fn check_seeds(
    sc: &Scenario,
    seeds: Range<u64>,
    shard: Shard,
    jobs: usize,
) -> DeterminismSummary {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .expect("thread pool");
    let mut summary = DeterminismSummary::default();
    for ranks in shard.chunks(&seeds) {
        summary.seeds_run += ranks.end - ranks.start;
        let found: Vec<Divergence> = pool.install(|| {
            ranks
                .into_par_iter()
                .filter_map(|k| check_seed(sc, shard.nth_in(&seeds, k)).err())
                .collect()
        });
        summary.divergent_seeds += found.len() as u64;
        if summary.first.is_none() {
            summary.first = found.into_iter().next();
        }
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_counts_and_ranks_its_seeds_as_walking_the_range_would() {
        for count in 1..7u64 {
            for index in 0..count {
                let shard = Shard { index, count };
                for range in [0..0u64, 0..1, 3..4, 5..23, 7..8, 1..100] {
                    let walked: Vec<u64> = range.clone().filter(|s| shard.contains(*s)).collect();
                    assert_eq!(shard.count_in(&range), walked.len() as u64);
                    let ranked: Vec<u64> = (0..walked.len() as u64)
                        .map(|k| shard.nth_in(&range, k))
                        .collect();
                    assert_eq!(ranked, walked, "shard {index}/{count} of {range:?}");
                }
            }
        }
        let top = u64::MAX - 10..u64::MAX;
        let shard = Shard { index: 3, count: 4 };
        assert_eq!(
            shard.count_in(&top),
            top.clone().filter(|s| s % 4 == 3).count() as u64
        );
    }

    #[test]
    fn the_first_difference_is_located() {
        let a: Vec<String> = ["x", "y", "z"].iter().map(|s| s.to_string()).collect();
        let b: Vec<String> = ["x", "q"].iter().map(|s| s.to_string()).collect();
        assert_eq!(first_difference(&a, &b), Some((1, "y".into(), "q".into())));
        assert_eq!(first_difference(&a, &a), None);
    }
}
