//! The event queue: a 4-ary min-heap of `u128` keys (`time << 64 | seq << 24 | slot`).
//!
//! Measured against `BinaryHeap<Reverse<u128>>` on the loop-core bench (benches/w2.rs): a
//! wider, shallower heap halves the levels a pop sifts through, and the sift moves a "hole"
//! instead of swapping. Keys are unique (the sequence number), so the order is total.

#[derive(Debug, Default)]
pub struct EventQueue {
    // Invariant: heap order — every key is <= the keys of its (up to four) children.
    keys: Vec<u128>,
}

impl EventQueue {
    pub fn new() -> EventQueue {
        EventQueue { keys: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    #[inline]
    pub fn peek(&self) -> Option<u128> {
        self.keys.first().copied()
    }

    #[inline]
    pub fn push(&mut self, key: u128) {
        let mut i = self.keys.len();
        self.keys.push(key);
        // Sift up: move parents down into the hole until the key fits.
        while i > 0 {
            let parent = (i - 1) / 4;
            let pk = self.keys[parent];
            if pk <= key {
                break;
            }
            self.keys[i] = pk;
            i = parent;
        }
        self.keys[i] = key;
    }

    #[inline]
    pub fn pop(&mut self) -> Option<u128> {
        let top = *self.keys.first()?;
        let last = self.keys.pop().expect("non-empty");
        if !self.keys.is_empty() {
            self.sift_down(last);
        }
        Some(top)
    }

    /// Replaces the smallest key by `key`: a pop and a push in one sift, for the common step
    /// that handles the earliest event and schedules one.
    #[inline]
    pub fn replace_top(&mut self, key: u128) {
        assert!(!self.keys.is_empty(), "replace_top on an empty queue");
        self.sift_down(key);
    }

    /// Fills the hole at the root with `key`, moving smaller children up.
    #[inline]
    fn sift_down(&mut self, key: u128) {
        let keys = &mut self.keys[..];
        let n = keys.len();
        let mut i = 0;
        loop {
            let first = 4 * i + 1;
            if first >= n {
                break;
            }
            let (m, mk) = if let Some(&[a, b, c, d]) = keys.get(first..first + 4) {
                // All four children: a tournament, two rounds of independent comparisons.
                let (ab, abk) = if b < a { (1, b) } else { (0, a) };
                let (cd, cdk) = if d < c { (3, d) } else { (2, c) };
                if cdk < abk { (cd, cdk) } else { (ab, abk) }
            } else {
                let children = &keys[first..n];
                let (mut m, mut mk) = (0, children[0]);
                for (c, &k) in children.iter().enumerate().skip(1) {
                    if k < mk {
                        (m, mk) = (c, k);
                    }
                }
                (m, mk)
            };
            if mk >= key {
                break;
            }
            keys[i] = mk;
            i = first + m;
        }
        keys[i] = key;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Seed;

    #[test]
    fn pops_in_key_order() {
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeSet::new();
        let mut rng = Seed(5).stream("test", 0);
        for step in 0..50_000u128 {
            if rng.below(4) == 0 && !q.is_empty() {
                let key = (u128::from(rng.below(1 << 20)) << 64) | step;
                q.replace_top(key);
                reference.pop_first();
                reference.insert(key);
            } else if rng.below(3) > 0 || q.is_empty() {
                let key = (u128::from(rng.below(1 << 20)) << 64) | step;
                q.push(key);
                reference.insert(key);
            } else {
                assert_eq!(q.pop(), reference.pop_first());
            }
            assert_eq!(q.peek(), reference.first().copied());
        }
        while let Some(k) = q.pop() {
            assert_eq!(Some(k), reference.pop_first());
        }
        assert!(reference.is_empty());
    }
}
