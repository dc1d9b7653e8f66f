//! Seeded randomness with independent named sub-streams and an integer-only API.
//!
//! One run has one seed. Every concern (the network, each fault kind, each client's jitter,
//! token generation) draws from its own *stream*: a ChaCha8 generator keyed by the run's seed,
//! with the ChaCha stream number derived from the stream's name. Streams never share state, so
//! adding a consumer of one stream (a new client, a removed fault) does not change what any
//! other stream draws. That property is what makes minimisation and side-by-side comparisons
//! of two algorithms on "the same" schedule possible.
//!
//! No floats: ranges use Lemire's widening multiply with rejection, probabilities are
//! integer ratios.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

/// The seed of a run plus a way to open its named streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seed(pub u64);

impl Seed {
    /// Opens the stream `name` (optionally indexed, e.g. one per client) of this seed.
    pub fn stream(self, name: &str, index: u64) -> Prng {
        Prng::new(self.0, stream_id(name, index))
    }
}

/// FNV-1a of the stream name, mixed with the index: stable across platforms and releases,
/// unlike `std::hash`.
pub fn stream_id(name: &str, index: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    for b in index.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A probability as an integer ratio `num / den`.
/// Invariant: `den > 0` and `num <= den` (checked at construction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ratio {
    num: u32,
    den: u32,
}

impl Ratio {
    pub const NEVER: Ratio = Ratio { num: 0, den: 1 };
    pub const ALWAYS: Ratio = Ratio { num: 1, den: 1 };

    pub fn new(num: u32, den: u32) -> Option<Ratio> {
        (den > 0 && num <= den).then_some(Ratio { num, den })
    }
    /// Parts per million, the unit models use for loss rates.
    pub fn per_million(ppm: u32) -> Option<Ratio> {
        Ratio::new(ppm, 1_000_000)
    }
    pub fn num(self) -> u32 {
        self.num
    }
    pub fn den(self) -> u32 {
        self.den
    }
    pub fn is_never(self) -> bool {
        self.num == 0
    }
}

/// One named stream. Integer-only.
#[derive(Clone, Debug)]
pub struct Prng {
    inner: ChaCha8Rng,
}

impl Prng {
    pub fn new(seed: u64, stream: u64) -> Prng {
        let mut inner = ChaCha8Rng::seed_from_u64(seed);
        inner.set_stream(stream);
        Prng { inner }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform in `[0, n)`; `n == 0` gives 0 (an empty range has one honest answer: nothing).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Lemire's multiply-shift, rejecting the biased low zone. The threshold needs a
        // division, computed only when the low half could fall in that zone (`l < n`);
        // accepting iff `l >= threshold` either way, so the draws are the same.
        let x = self.next_u64();
        let m = u128::from(x) * u128::from(n);
        if (m as u64) >= n {
            return (m >> 64) as u64;
        }
        let threshold = n.wrapping_neg() % n;
        let mut m = m;
        while (m as u64) < threshold {
            m = u128::from(self.next_u64()) * u128::from(n);
        }
        (m >> 64) as u64
    }

    /// Uniform in the closed range `[lo, hi]`; `hi < lo` gives `lo`.
    #[inline]
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let span = hi - lo;
        if span == u64::MAX {
            return self.next_u64();
        }
        lo + self.below(span + 1)
    }

    /// Uniform signed value in `[lo, hi]`.
    pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let span = hi.abs_diff(lo);
        let off = if span == u64::MAX {
            self.next_u64()
        } else {
            self.below(span + 1)
        };
        lo.wrapping_add(off as i64)
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: Ratio) -> bool {
        if p.num == 0 {
            return false;
        }
        if p.num == p.den {
            return true;
        }
        self.below(u64::from(p.den)) < u64::from(p.num)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_independent_of_each_other() {
        let seed = Seed(7);
        let a: Vec<u64> = {
            let mut s = seed.stream("net", 0);
            (0..8).map(|_| s.next_u64()).collect()
        };
        // Drawing heavily from another stream in between changes nothing.
        let mut other = seed.stream("client", 3);
        for _ in 0..1000 {
            other.next_u64();
        }
        let mut s = seed.stream("net", 0);
        let b: Vec<u64> = (0..8).map(|_| s.next_u64()).collect();
        assert_eq!(a, b);
        assert_ne!(
            seed.stream("net", 0).next_u64(),
            seed.stream("net", 1).next_u64()
        );
    }

    #[test]
    fn ranges_stay_in_bounds() {
        let mut s = Seed(1).stream("t", 0);
        for _ in 0..10_000 {
            let v = s.range_inclusive(100, 110);
            assert!((100..=110).contains(&v));
            let w = s.range_i64(-5, 5);
            assert!((-5..=5).contains(&w));
        }
        assert_eq!(s.below(0), 0);
        assert_eq!(s.range_inclusive(5, 5), 5);
        assert!(!s.chance(Ratio::NEVER));
        assert!(s.chance(Ratio::ALWAYS));
        assert!(Ratio::new(2, 1).is_none());
        assert!(Ratio::new(0, 0).is_none());
    }
}
