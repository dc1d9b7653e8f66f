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

#[derive(Clone)]
enum Repr {
    /// The bytes are `buf[..len]`. A clone copies the fixed-size buffer: no length-dependent
    /// `memcpy` call and no spill check, which is what the hot path does with tokens.
    Inline {
        len: u8,
        buf: [u8; INLINE],
    },
    Heap(Vec<u8>),
}

#[derive(Clone)]
pub struct Bytes(Repr);

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
    fn as_mut_slice(&mut self) -> &mut [u8] {
        match &mut self.0 {
            Repr::Inline { len, buf } => &mut buf[..usize::from(*len)],
            Repr::Heap(v) => v,
        }
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Bytes) -> bool {
        self[..] == other[..]
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
    fn eq(&self, other: &[u8]) -> bool {
        &self[..] == other
    }
}

impl PartialEq<&[u8]> for Bytes {
    fn eq(&self, other: &&[u8]) -> bool {
        &self[..] == *other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Bytes {
    fn eq(&self, other: &&[u8; N]) -> bool {
        &self[..] == other.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
