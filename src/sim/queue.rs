//! The event queue: the keys (`time << 64 | seq << 24 | slot`) of pending events, smallest
//! first. Keys are unique (the sequence number), so the order is total.
//!
//! Two layouts of one array, by size:
//! - up to `SORTED_MAX` keys, **sorted**, the smallest last. Most events a handler schedules
//!   are due sooner than most pending ones (a reply, a short timer, against timeouts, cron
//!   ticks and a swarm's faults scheduled far ahead), so a new key slots in a few places from
//!   the end and the next event is popped off the end;
//! - beyond that, a **4-ary min-heap** (wider and shallower than `BinaryHeap`, sifting a
//!   hole instead of swapping): inserting into a long sorted array moves much of it when
//!   keys land mid-array (hundreds of clients with timers spread over seconds) or all of it
//!   (a long fault schedule arriving in increasing order); a heap never does. Below
//!   `SORTED_AGAIN` keys the heap is sorted back.
//!
//! Measured (`docs/benchmarks.md`): on W2 the sorted layout costs 5 % fewer instructions and
//! 12 % less wall time than the heap alone, the catalogue sweeps 8 % faster; on W1 they are
//! even.

use crate::time::SimTime;

/// Queue entry, one `u128`: `time << 64 | seq << 24 | slot`. Ordering by it is ordering by
/// (time, seq) — the loop's total order, since `seq` is unique — and the slot index rides in
/// the low bits, so the heap moves and compares 16 bytes per entry.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct QueueEntry(pub(crate) u128);

/// Bits of the slot index; the slab never holds more than 2^24 pending events.
const SLOT_BITS: u32 = 24;
/// Bits of the sequence number: 2^40 events is far beyond any `max_events`.
const SEQ_BITS: u32 = 40;

impl QueueEntry {
    #[inline]
    pub(crate) fn new(at: SimTime, seq: u64, idx: u32) -> QueueEntry {
        assert!(
            seq < 1 << SEQ_BITS && idx < 1 << SLOT_BITS,
            "event queue beyond its bounds"
        );
        QueueEntry((u128::from(at.0) << 64) | (u128::from(seq) << SLOT_BITS) | u128::from(idx))
    }
    pub(crate) fn time(self) -> SimTime {
        SimTime((self.0 >> 64) as u64)
    }
    pub(crate) fn idx(self) -> u32 {
        (self.0 as u32) & ((1 << SLOT_BITS) - 1)
    }
}

/// Most keys kept sorted; one more turns the array into a heap. A 256-client model keeps
/// ~500 events pending, spread over seconds: sorted, it spent 17 % more instructions.
const SORTED_MAX: usize = 128;
/// A heap that shrinks below this many keys is sorted again (hysteresis: no flapping).
const SORTED_AGAIN: usize = 32;

#[derive(Clone, Debug, Default)]
pub struct EventQueue {
    // Invariant: if `heap`, 4-ary heap order (every key <= its children's); otherwise
    // strictly descending and at most SORTED_MAX keys.
    keys: Vec<u128>,
    heap: bool,
    /// The low half of every key pushed from now on must be at least this: the loop's
    /// sequence number sits there, so a new key is later than every pending key of its time,
    /// and placing it needs only the times (the high halves) compared — one comparison
    /// instead of a 128-bit one at each step of an insertion.
    // Invariant: greater than the low half of every key pushed so far.
    next_low: u64,
}

impl EventQueue {
    pub fn new() -> EventQueue {
        EventQueue::default()
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Every pending key, in no particular order (state fingerprints sort them).
    pub fn keys_unordered(&self) -> &[u128] {
        &self.keys
    }

    #[inline]
    pub fn peek(&self) -> Option<u128> {
        if self.heap {
            self.keys.first().copied()
        } else {
            self.keys.last().copied()
        }
    }

    #[inline(always)]
    pub fn push(&mut self, key: u128) {
        self.note_pushed(key);
        if self.heap {
            self.heap_push(key);
        } else if self.keys.len() < SORTED_MAX {
            self.keys.push(key);
            self.sorted_fill_last(key);
        } else {
            // Ascending order is heap order: reversing the sorted array makes the heap.
            self.keys.reverse();
            self.heap = true;
            self.heap_push(key);
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<u128> {
        if !self.heap {
            return self.keys.pop();
        }
        let top = *self.keys.first()?;
        let last = self.keys.pop().expect("non-empty");
        if !self.keys.is_empty() {
            self.sift_down(last);
        }
        if self.keys.len() < SORTED_AGAIN {
            self.keys.sort_unstable_by(|a, b| b.cmp(a));
            self.heap = false;
        }
        Some(top)
    }

    /// Replaces the smallest key by `key`: for the common step that handles the earliest
    /// event and schedules one (in a heap, one sift instead of a pop and a push).
    #[inline(always)]
    pub fn replace_top(&mut self, key: u128) {
        assert!(!self.keys.is_empty(), "replace_top on an empty queue");
        self.note_pushed(key);
        if self.heap {
            self.sift_down(key);
        } else {
            // The top's place, at the end, is the hole the new key starts from.
            self.sorted_fill_last(key);
        }
    }

    /// Checks that `key` comes after every key pushed before it among those of its time (see
    /// `next_low`).
    #[inline(always)]
    fn note_pushed(&mut self, key: u128) {
        let low = key as u64;
        assert!(low >= self.next_low, "a key pushed out of sequence");
        self.next_low = low + 1;
    }

    /// Sorted layout: puts `key` in order, starting from a hole at the end (where new keys
    /// usually belong) whose old content is void.
    #[inline(always)]
    fn sorted_fill_last(&mut self, key: u128) {
        let keys = &mut self.keys[..];
        let mut i = keys.len() - 1;
        // `k > key` is `time(k) > time(key)`: of equal times, `key` is the later (`next_low`).
        let t = time_of(key);
        // A few steps of insertion sort (the keys due before `key` move one place toward the
        // end), then, for a key due far ahead, a bisection and one move of the rest. Eight
        // steps, measured against 4, 6 and 16 (docs/benchmarks.md, issue 32): fewer cost W1
        // (8 clients) more than they save, more make 32 clients pay for the walk.
        let stop = i.saturating_sub(8);
        while i > stop {
            let k = keys[i - 1];
            if time_of(k) > t {
                keys[i] = key;
                return;
            }
            keys[i] = k;
            i -= 1;
        }
        if i > 0 && time_of(keys[i - 1]) <= t {
            let j = keys[..i].partition_point(|&k| time_of(k) > t);
            keys.copy_within(j..i, j + 1);
            i = j;
        }
        keys[i] = key;
    }

    #[inline]
    fn heap_push(&mut self, key: u128) {
        let mut i = self.keys.len();
        self.keys.push(key);
        let t = time_of(key);
        // Sift up: move parents down into the hole until the key fits (a parent of `key`'s
        // time is earlier in sequence: `next_low`).
        while i > 0 {
            let parent = (i - 1) / 4;
            let pk = self.keys[parent];
            if time_of(pk) <= t {
                break;
            }
            self.keys[i] = pk;
            i = parent;
        }
        self.keys[i] = key;
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

/// The high half of a key: its time.
#[inline(always)]
fn time_of(key: u128) -> u64 {
    (key >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Seed;

    /// Random pushes, pops and replacements against a `BTreeSet`: time spreads that keep
    /// every key near or scatter them, and push rates that keep the queue short (sorted)
    /// or let it grow past `SORTED_MAX` (heap) and drain back.
    #[test]
    fn pops_in_key_order() {
        let mut case = 0;
        for spread in [1u64 << 4, 1 << 20, 1 << 40] {
            for push_in_3 in [1u64, 2] {
                case += 1;
                let mut q = EventQueue::new();
                let mut reference = std::collections::BTreeSet::new();
                let mut rng = Seed(5).stream("test", case);
                let mut now = 0u64;
                let mut was_heap = false;
                for step in 0..30_000u128 {
                    // Mostly soon after the current minimum, sometimes anywhere.
                    let at = if rng.below(8) == 0 {
                        rng.below(spread)
                    } else {
                        now + rng.below(64)
                    };
                    let key = (u128::from(at) << 64) | step;
                    if rng.below(4) == 0 && !q.is_empty() {
                        q.replace_top(key);
                        reference.pop_first();
                        reference.insert(key);
                    } else if q.is_empty()
                        || (rng.below(3) < push_in_3
                            && (push_in_3 == 2 || q.len() < SORTED_MAX / 2))
                    {
                        q.push(key);
                        reference.insert(key);
                    } else {
                        assert_eq!(q.pop(), reference.pop_first());
                    }
                    assert_eq!(q.peek(), reference.first().copied());
                    assert_eq!(q.len(), reference.len());
                    was_heap |= q.heap;
                    now = q.peek().map_or(0, |k| (k >> 64) as u64);
                }
                assert_eq!(was_heap, push_in_3 == 2, "case {case}");
                while let Some(k) = q.pop() {
                    assert_eq!(Some(k), reference.pop_first());
                }
                assert!(reference.is_empty());
                assert!(!q.heap, "a drained queue is sorted again");
            }
        }
    }

    /// Keys of one time come out in the order they were pushed, in either layout: placing a
    /// key compares times only, which is right because a later push is a later sequence.
    #[test]
    fn keys_of_one_time_pop_in_push_order_in_both_layouts() {
        for n in [10u128, 1_000] {
            let mut q = EventQueue::new();
            for seq in 0..n {
                // Two times, interleaved, so that each insertion passes keys of both.
                let at = 5 + (seq % 2);
                q.push(at << 64 | seq);
            }
            let popped: Vec<u128> = std::iter::from_fn(|| q.pop()).collect();
            let mut expected: Vec<u128> = (0..n).map(|seq| (5 + (seq % 2)) << 64 | seq).collect();
            expected.sort_unstable();
            assert_eq!(popped, expected, "{n} keys");
        }
    }

    /// A key whose sequence is not the newest would be misplaced among keys of its time:
    /// refused at once rather than popped out of order.
    #[test]
    #[should_panic(expected = "a key pushed out of sequence")]
    fn a_key_pushed_out_of_sequence_is_refused() {
        let mut q = EventQueue::new();
        q.push(7 << 64 | 5);
        q.push(7 << 64 | 4);
    }

    /// A long schedule pushed in increasing order (a model's fault list) turns the array
    /// into a heap instead of shifting it once per key.
    #[test]
    fn a_long_increasing_schedule_becomes_a_heap() {
        let mut q = EventQueue::new();
        for k in 0..100_000u128 {
            q.push(k << 64 | k);
        }
        assert!(q.heap);
        for k in 0..100_000u128 {
            assert_eq!(q.pop(), Some(k << 64 | k));
            assert_eq!(q.heap, q.len() >= SORTED_AGAIN);
        }
        assert!(q.is_empty());
    }
}
