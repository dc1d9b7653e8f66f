//! How likely, measured: rates with exact intervals, from a sweep's counts.
//!
//! Two kinds of rate, per checked property:
//! - **per seed**: seeds that violated it, out of the seeds that decided it (ran to their end,
//!   or violated it before a budget stopped them). Seeds are independent draws of the model,
//!   so the count is binomial and the two-sided 95 % Clopper–Pearson interval is exact
//!   (conservative: it covers at least 95 % for every true rate).
//! - **per acquisition**: acquisitions that took part in a violation (see
//!   `check::Checks::occurrences`), out of all acquisitions. Acquisitions of one seed are not
//!   independent (one pause can spoil several), so the Clopper–Pearson interval, which treats
//!   them as independent, is widened to the delta-method interval of the ratio estimator with
//!   seeds as clusters: the union of the two. Every figure a shard needs to merge is a sum.
//!
//! The overlap time per million acquisitions is the same cluster ratio (ns of two-holder time
//! over acquisitions), with its delta-method interval.

use special::Beta as _;

/// The two-sided confidence level of every interval here.
pub const CONFIDENCE: f64 = 0.95;

/// z for a two-sided 95 % normal interval.
const Z95: f64 = 1.959_963_984_540_054;

/// The exact two-sided `CONFIDENCE` interval for a binomial rate with `k` successes in `n`
/// trials (Clopper–Pearson): each bound is where the tail beyond `k` holds 2.5 %.
/// `n == 0` says nothing: `[0, 1]`.
pub fn clopper_pearson(k: u64, n: u64) -> (f64, f64) {
    assert!(k <= n, "{k} successes in {n} trials");
    if n == 0 {
        return (0.0, 1.0);
    }
    let alpha = 1.0 - CONFIDENCE;
    let (kf, nf) = (k as f64, n as f64);
    // P(X >= k | p) = I_p(k, n - k + 1), and P(X <= k | p) = 1 - I_p(k + 1, n - k).
    let lo = if k == 0 {
        0.0
    } else {
        let (a, b) = (kf, nf - kf + 1.0);
        (alpha / 2.0).inv_inc_beta(a, b, a.ln_beta(b))
    };
    let hi = if k == n {
        1.0
    } else {
        let (a, b) = (kf + 1.0, nf - kf);
        (1.0 - alpha / 2.0).inv_inc_beta(a, b, a.ln_beta(b))
    };
    (lo, hi)
}

/// A binomial count: `k` of `n`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Proportion {
    pub k: u64,
    pub n: u64,
}

impl Proportion {
    pub fn estimate(self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.k as f64 / self.n as f64
        }
    }

    pub fn ci95(self) -> (f64, f64) {
        clopper_pearson(self.k, self.n)
    }

    /// Half the width of the interval: what `sweep --until-ci` compares.
    pub fn half_width(self) -> f64 {
        let (lo, hi) = self.ci95();
        (hi - lo) / 2.0
    }
}

/// A ratio of two per-seed counts summed over seeds (occurrences over acquisitions, overlap
/// ns over acquisitions), with the sums of squares and products the cluster interval needs.
/// Merging two is adding: a shard's figures fold into the whole sweep's exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterRatio {
    /// Seeds (clusters) folded in.
    pub seeds: u64,
    pub sum_x: u128,
    pub sum_n: u128,
    pub sum_xx: u128,
    pub sum_nn: u128,
    pub sum_xn: u128,
}

impl ClusterRatio {
    /// One seed's numerator `x` and denominator `n`.
    pub fn add(&mut self, x: u64, n: u64) {
        let (x, n) = (u128::from(x), u128::from(n));
        self.seeds += 1;
        self.sum_x += x;
        self.sum_n += n;
        self.sum_xx += x * x;
        self.sum_nn += n * n;
        self.sum_xn += x * n;
    }

    pub fn merge(&mut self, o: ClusterRatio) {
        self.seeds += o.seeds;
        self.sum_x += o.sum_x;
        self.sum_n += o.sum_n;
        self.sum_xx += o.sum_xx;
        self.sum_nn += o.sum_nn;
        self.sum_xn += o.sum_xn;
    }

    /// Σx / Σn (0 when nothing was counted).
    pub fn estimate(&self) -> f64 {
        if self.sum_n == 0 {
            0.0
        } else {
            self.sum_x as f64 / self.sum_n as f64
        }
    }

    /// The delta-method 95 % interval of the ratio with seeds as clusters:
    /// r ± z · sqrt(m / (m − 1) · Σ(xᵢ − r·nᵢ)²) / Σn, cut at 0. With fewer than two seeds,
    /// or nothing counted, there is no spread to measure: `None`.
    pub fn delta_ci95(&self) -> Option<(f64, f64)> {
        if self.seeds < 2 || self.sum_n == 0 {
            return None;
        }
        let r = self.estimate();
        let m = self.seeds as f64;
        // Σ(x − r n)² = Σx² − 2rΣxn + r²Σn²; exact sums, so only this step rounds.
        let ss = (self.sum_xx as f64 - 2.0 * r * self.sum_xn as f64 + r * r * self.sum_nn as f64)
            .max(0.0);
        let se = (m / (m - 1.0) * ss).sqrt() / self.sum_n as f64;
        Some(((r - Z95 * se).max(0.0), r + Z95 * se))
    }

    /// For a rate (x ≤ n in every seed): the Clopper–Pearson interval of Σx in Σn trials,
    /// widened to the cluster interval. Counts past u64 saturate (a sweep of 2⁶⁴
    /// acquisitions is not one this machine runs).
    pub fn rate_ci95(&self) -> (f64, f64) {
        let n = u64::try_from(self.sum_n).unwrap_or(u64::MAX);
        let k = u64::try_from(self.sum_x).unwrap_or(u64::MAX).min(n);
        let (lo, hi) = clopper_pearson(k, n);
        match self.delta_ci95() {
            Some((dlo, dhi)) => (lo.min(dlo), hi.max(dhi).min(1.0)),
            None => (lo, hi),
        }
    }
}

/// A rate as people read it: "0.37 %", "1.2e-5 %" for the very small, "0 %".
pub fn percent(p: f64) -> String {
    let pc = p * 100.0;
    if pc == 0.0 {
        "0 %".into()
    } else if pc >= 0.1 {
        format!("{pc:.2} %")
    } else if pc >= 0.001 {
        format!("{pc:.4} %")
    } else {
        format!("{pc:.2e} %")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P(X <= k) for X ~ Binomial(n, p), summed term by term in logs.
    fn binom_cdf(k: u64, n: u64, p: f64) -> f64 {
        let mut ln_c = 0.0f64; // ln C(n, 0)
        let mut sum = 0.0;
        for i in 0..=k {
            if i > 0 {
                ln_c += ((n - i + 1) as f64).ln() - (i as f64).ln();
            }
            sum += (ln_c + i as f64 * p.ln() + (n - i) as f64 * (1.0 - p).ln()).exp();
        }
        sum
    }

    #[test]
    fn clopper_pearson_bounds_are_where_the_binomial_tails_hold_two_and_a_half_percent() {
        for &(k, n) in &[
            (1u64, 10u64),
            (3, 10),
            (9, 10),
            (1, 1000),
            (17, 1000),
            (500, 1000),
            (327, 400),
            (999, 1000),
            (2, 20_000),
        ] {
            let (lo, hi) = clopper_pearson(k, n);
            // Upper: P(X <= k | hi) = 2.5 %; lower: P(X >= k | lo) = 2.5 %.
            let upper_tail = binom_cdf(k, n, hi);
            let lower_tail = 1.0 - binom_cdf(k - 1, n, lo);
            assert!(
                (upper_tail - 0.025).abs() < 1e-6,
                "k={k} n={n} hi={hi}: {upper_tail}"
            );
            assert!(
                (lower_tail - 0.025).abs() < 1e-6,
                "k={k} n={n} lo={lo}: {lower_tail}"
            );
        }
    }

    #[test]
    fn held_in_every_seed_bounds_the_rate_by_the_rule_of_three() {
        let (lo, hi) = clopper_pearson(0, 1000);
        assert_eq!(lo, 0.0);
        // Exact: 1 - 0.025^(1/1000); about 3.69/n.
        let exact = 1.0 - 0.025f64.powf(1.0 / 1000.0);
        assert!((hi - exact).abs() < 1e-12, "{hi} vs {exact}");
        assert_eq!(clopper_pearson(0, 0), (0.0, 1.0));
        assert_eq!(clopper_pearson(5, 5).1, 1.0);
    }

    #[test]
    fn the_interval_covers_the_true_rate_at_least_95_percent_of_the_time() {
        use rand_chacha::rand_core::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut uniform = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        for &p in &[0.002, 0.05, 0.3] {
            let (trials, n) = (2000, 400);
            let covered = (0..trials)
                .filter(|_| {
                    let k = (0..n).filter(|_| uniform() < p).count() as u64;
                    let (lo, hi) = clopper_pearson(k, n);
                    lo <= p && p <= hi
                })
                .count();
            assert!(covered as f64 / trials as f64 >= 0.94, "p={p}: {covered}");
        }
    }

    #[test]
    fn a_cluster_ratio_merged_from_parts_equals_the_whole() {
        let data = [(0u64, 5u64), (2, 7), (0, 3), (1, 4), (5, 9)];
        let mut whole = ClusterRatio::default();
        data.iter().for_each(|&(x, n)| whole.add(x, n));
        let (mut a, mut b) = (ClusterRatio::default(), ClusterRatio::default());
        data[..2].iter().for_each(|&(x, n)| a.add(x, n));
        data[2..].iter().for_each(|&(x, n)| b.add(x, n));
        a.merge(b);
        assert_eq!(a, whole);
        assert!((whole.estimate() - 8.0 / 28.0).abs() < 1e-15);
        // Against the residuals summed directly.
        let r = 8.0 / 28.0;
        let ss: f64 = data
            .iter()
            .map(|&(x, n)| (x as f64 - r * n as f64).powi(2))
            .sum();
        let se = (5.0 / 4.0 * ss).sqrt() / 28.0;
        let (lo, hi) = whole.delta_ci95().unwrap();
        assert!((hi - (r + Z95 * se)).abs() < 1e-12);
        assert!((lo - (r - Z95 * se).max(0.0)).abs() < 1e-12);
    }

    #[test]
    fn a_clustered_rate_is_never_narrower_than_the_exact_one() {
        // One seed with every occurrence: the clusters spread it far wider than binomial.
        let mut c = ClusterRatio::default();
        c.add(30, 40);
        for _ in 0..99 {
            c.add(0, 40);
        }
        let (lo, hi) = c.rate_ci95();
        let (blo, bhi) = clopper_pearson(30, 4000);
        assert!(lo <= blo && hi >= bhi);
        assert!(hi > bhi * 1.5, "{hi} vs {bhi}");
    }
}
