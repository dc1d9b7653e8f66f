//! `Bytes`: the byte strings of the model — keys, values, tokens.
//!
//! Lock keys and tokens are short, so they live inline (up to 30 bytes): a token travels from
//! the client to the command, the keyspace and the history without a heap allocation, and
//! cloning it is a copy of a few bytes. Longer values spill to the heap.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Inline capacity: 30 bytes keep `Bytes` at 32 (tag, length, buffer), as large as any
/// key or token of the models.
const INLINE: usize = 30;

enum Repr {
    /// The bytes are `buf[..len]`. A clone copies the fixed-size buffer: no length-dependent
    /// `memcpy` call and no spill check, which is what the hot path does with tokens.
    // Invariant: `buf[len..]` is all zero (made zero, and no edit shortens a string), so two
    // inline strings are equal exactly when their lengths and whole buffers are.
    Inline {
        len: u8,
        buf: [u8; INLINE],
    },
    Heap(Vec<u8>),
}

#[derive(Clone)]
pub struct Bytes(Repr);

impl Clone for Repr {
    /// The inline copy in place, the heap copy out of line: the derived `Clone` inlines the
    /// `Vec` clone (allocation and `memcpy`) at every clone of a key or token, and the
    /// registers that path needs spill the hot one's (W1 -1.1 %, W2 -0.6 % instructions).
    #[inline(always)]
    fn clone(&self) -> Repr {
        match self {
            Repr::Inline { len, buf } => Repr::Inline {
                len: *len,
                buf: *buf,
            },
            Repr::Heap(v) => clone_heap(v),
        }
    }
}

#[cold]
#[inline(never)]
fn clone_heap(v: &[u8]) -> Repr {
    Repr::Heap(v.to_vec())
}

impl Default for Bytes {
    fn default() -> Bytes {
        Bytes::new()
    }
}

impl Bytes {
    pub fn new() -> Bytes {
        Bytes(Repr::Inline {
            len: 0,
            buf: [0; INLINE],
        })
    }
    pub fn from_slice(s: &[u8]) -> Bytes {
        if s.len() <= INLINE {
            let mut buf = [0; INLINE];
            buf[..s.len()].copy_from_slice(s);
            Bytes(Repr::Inline {
                len: s.len() as u8,
                buf,
            })
        } else {
            Bytes(Repr::Heap(s.to_vec()))
        }
    }
    /// Bytes held on the heap (0 when inline): for memory budgets.
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Inline { .. } => 0,
            Repr::Heap(v) => v.len(),
        }
    }
    pub fn push(&mut self, b: u8) {
        self.extend_from_slice(&[b]);
    }
    pub fn extend_from_slice(&mut self, s: &[u8]) {
        match &mut self.0 {
            Repr::Inline { len, buf } if usize::from(*len) + s.len() <= INLINE => {
                let l = usize::from(*len);
                buf[l..l + s.len()].copy_from_slice(s);
                *len = (l + s.len()) as u8;
            }
            Repr::Inline { len, buf } => {
                let mut v = Vec::with_capacity(usize::from(*len) + s.len());
                v.extend_from_slice(&buf[..usize::from(*len)]);
                v.extend_from_slice(s);
                self.0 = Repr::Heap(v);
            }
            Repr::Heap(v) => v.extend_from_slice(s),
        }
    }
    pub fn set(&mut self, i: usize, b: u8) {
        self.as_mut_slice()[i] = b;
    }
    pub fn insert(&mut self, i: usize, b: u8) {
        assert!(i <= self.len(), "insertion index out of bounds");
        self.push(b);
        self.as_mut_slice()[i..].rotate_right(1);
    }
    /// Adds one to the decimal number that `self[digits_start..]` spells (a counted token's
    /// suffix), in place: one look at the representation, not one per digit. A carry out of
    /// the first digit makes the number one digit longer.
    #[inline]
    pub fn increment_decimal(&mut self, digits_start: usize) {
        let digits = &mut self.as_mut_slice()[digits_start..];
        for d in digits.iter_mut().rev() {
            debug_assert!(d.is_ascii_digit(), "not a decimal suffix");
            if *d == b'9' {
                *d = b'0';
            } else {
                *d += 1;
                return;
            }
        }
        self.insert(digits_start, b'1');
    }
    /// Whether the bytes live inline (`clone_inline` copies them).
    #[inline(always)]
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }

    /// A clone of bytes known to live inline (`is_inline`); panics otherwise. With no
    /// heap case to merge with, the copy goes straight where it is wanted: a clone's two
    /// cases meet in one value, which the compiler takes apart and puts together again
    /// (~12 instructions more a clone built into a message).
    #[inline(always)]
    pub fn clone_inline(&self) -> Bytes {
        match &self.0 {
            Repr::Inline { len, buf } => Bytes(Repr::Inline {
                len: *len,
                buf: *buf,
            }),
            Repr::Heap(_) => panic!("clone_inline of bytes on the heap"),
        }
    }

    #[inline(always)]
    fn as_mut_slice(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Repr::Inline { len, buf } => &mut buf[..usize::from(*len)],
            Repr::Heap(v) => v,
        }
    }
}

/// Equality of byte strings without a `memcmp` call for the short ones (keys, tokens, script
/// digests): the slice `==` calls into libc, whose entry and dispatch cost more than the
/// comparison of a 4- to 30-byte key (W2 made 560,000 such calls, ~18 instructions each).
/// Two loads from each end, overlapping when the length is not a power of two, cover every
/// byte once or twice.
#[inline(always)]
pub fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    fn head_tail<const W: usize>(s: &[u8]) -> ([u8; W], [u8; W]) {
        let head = s[..W].try_into().expect("W bytes");
        let tail = s[s.len() - W..].try_into().expect("W bytes");
        (head, tail)
    }
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => head_tail::<4>(a) == head_tail::<4>(b),
        8..=15 => head_tail::<8>(a) == head_tail::<8>(b),
        16..=32 => head_tail::<16>(a) == head_tail::<16>(b),
        _ => a == b,
    }
}

impl PartialEq for Bytes {
    /// Two inline strings compare as fixed-size representations (see `Repr::Inline`'s
    /// invariant): a few vector loads, without the length's case split of `bytes_eq`.
    #[inline(always)]
    fn eq(&self, other: &Bytes) -> bool {
        match (&self.0, &other.0) {
            (Repr::Inline { len: a, buf: x }, Repr::Inline { len: b, buf: y }) => a == b && x == y,
            _ => bytes_eq(self, other),
        }
    }
}

impl Eq for Bytes {}

impl PartialOrd for Bytes {
    fn partial_cmp(&self, other: &Bytes) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bytes {
    fn cmp(&self, other: &Bytes) -> Ordering {
        self[..].cmp(&other[..])
    }
}

impl Deref for Bytes {
    type Target = [u8];
    #[inline(always)]
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, buf } => &buf[..usize::from(*len)],
            Repr::Heap(v) => v,
        }
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Borrow<[u8]> for Bytes {
    fn borrow(&self) -> &[u8] {
        self
    }
}

impl Hash for Bytes {
    // Must hash exactly like `[u8]` so that maps keyed by `Bytes` can be queried by `&[u8]`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self[..].hash(state)
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"")?;
        crate::proto::reply::write_quoted(f, self)?;
        write!(f, "\"")
    }
}

impl From<&[u8]> for Bytes {
    fn from(s: &[u8]) -> Bytes {
        Bytes::from_slice(s)
    }
}

impl From<&str> for Bytes {
    fn from(s: &str) -> Bytes {
        Bytes::from_slice(s.as_bytes())
    }
}

impl PartialEq<[u8]> for Bytes {
    #[inline]
    fn eq(&self, other: &[u8]) -> bool {
        bytes_eq(self, other)
    }
}

impl PartialEq<&[u8]> for Bytes {
    #[inline]
    fn eq(&self, other: &&[u8]) -> bool {
        bytes_eq(self, other)
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Bytes {
    #[inline]
    fn eq(&self, other: &&[u8; N]) -> bool {
        bytes_eq(self, other.as_slice())
    }
}

/// A key to look up in a map keyed by `Bytes`: hashes exactly as `[u8]` (and so as `Bytes`),
/// compares with `bytes_eq` instead of the slice `==` that `Borrow<[u8]>` lookups use.
#[derive(Clone, Copy)]
pub struct KeyRef<'a>(pub &'a [u8]);

impl Hash for KeyRef<'_> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

impl indexmap::Equivalent<Bytes> for KeyRef<'_> {
    #[inline(always)]
    fn equivalent(&self, key: &Bytes) -> bool {
        bytes_eq(self.0, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_clone_is_the_ordinary_clone_of_inline_bytes() {
        let longest = "x".repeat(INLINE);
        for s in ["", "k", "lock", "c1-18446744073709551615", longest.as_str()] {
            let b = Bytes::from(s);
            assert!(b.is_inline(), "{s:?}");
            assert_eq!(b.clone_inline(), b.clone());
            assert!(b.clone_inline().is_inline());
        }
        assert!(!Bytes::from("x".repeat(INLINE + 1).as_str()).is_inline());
    }

    #[test]
    #[should_panic(expected = "clone_inline of bytes on the heap")]
    fn an_inline_clone_of_bytes_on_the_heap_is_refused() {
        Bytes::from("x".repeat(INLINE + 1).as_str()).clone_inline();
    }

    #[test]
    fn a_decimal_suffix_counts_up_with_carries_as_its_number_does() {
        let mut t = Bytes::from("c3-8");
        let mut n = 8u64;
        // Across every carry up to four digits, and out of the inline buffer's reach of the
        // prefix: the text is always `c3-` and the number.
        for _ in 0..10_100 {
            t.increment_decimal(3);
            n += 1;
            assert_eq!(&*t, format!("c3-{n}").as_bytes());
        }
        // A suffix that crosses the inline limit as it grows spills and goes on.
        let long = "p".repeat(28);
        let mut t = Bytes::from(format!("{long}-9").as_str());
        t.increment_decimal(29);
        assert_eq!(&*t, format!("{long}-10").as_bytes());
        assert!(t.heap_bytes() > 0);
    }

    #[test]
    fn short_and_long_values_round_trip() {
        let short = Bytes::from("c1-17");
        assert_eq!(short.clone(), short);
        let long = Bytes::from_slice(&[7u8; 100]);
        assert_eq!(&long.clone()[..], &[7u8; 100][..]);
        assert_eq!(short, b"c1-17");
        assert!(std::mem::size_of::<Bytes>() <= 32);
    }

    #[test]
    fn edits_cross_the_inline_limit() {
        let mut b = Bytes::from_slice(&[1u8; 29]);
        let mut v = vec![1u8; 29];
        for i in 0..5u8 {
            b.push(i);
            v.push(i);
            b.insert(3, 9);
            v.insert(3, 9);
            b.set(0, i);
            v[0] = i;
            assert_eq!(&b[..], &v[..]);
        }
        b.extend_from_slice(b"xyz");
        v.extend_from_slice(b"xyz");
        assert_eq!(&b[..], &v[..]);
        assert!(Bytes::from("a") < Bytes::from("ab"));
    }

    /// Two inline strings compare by their whole buffers (`Repr::Inline`'s invariant): every
    /// edit keeps the buffer zero past the length, so a string made by edits equals the same
    /// bytes made at once, and differs from any other.
    #[test]
    fn an_edited_inline_string_equals_the_same_bytes_made_at_once() {
        let mut b = Bytes::new();
        for i in 0..30u8 {
            b.push(b'a' + i % 26);
            assert_eq!(b, Bytes::from_slice(&b[..]), "pushed to {}", i + 1);
            assert_ne!(b, Bytes::from_slice(&b[..b.len() - 1]));
        }
        let mut t = Bytes::from("c3-99");
        t.increment_decimal(3);
        assert_eq!(t, Bytes::from("c3-100"));
        let mut u = Bytes::from("ab");
        u.insert(1, b'x');
        assert_eq!(u, Bytes::from("axb"));
        u.set(0, b'z');
        assert_eq!(u, Bytes::from("zxb"));
        u.extend_from_slice(b"yy");
        assert_eq!(u, Bytes::from("zxbyy"));
        assert_ne!(u, Bytes::from("zxby"));
        assert_ne!(
            Bytes::new(),
            Bytes::from_slice(&[0]),
            "a zero byte is not padding"
        );
        // One past the inline limit the string is on the heap: still compared by its bytes.
        let mut long = Bytes::from_slice(&[5u8; 30]);
        long.push(5);
        assert_eq!(long, Bytes::from_slice(&[5u8; 31]));
        assert_ne!(long, Bytes::from_slice(&[5u8; 30]));
    }

    /// Every length from 0 to 40 against a copy and against a copy with each single byte
    /// changed: the head and tail loads must together cover every byte.
    #[test]
    fn short_comparison_sees_every_byte() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
            assert!(bytes_eq(&a, &a.clone()), "length {n}");
            assert_eq!(Bytes::from_slice(&a), Bytes::from_slice(&a));
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 1;
                assert!(!bytes_eq(&a, &b), "length {n}, byte {i}");
                assert_ne!(Bytes::from_slice(&a), Bytes::from_slice(&b));
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!bytes_eq(&a, &longer), "length {n} against {}", n + 1);
        }
    }
}
