//! `Bytes`: the byte strings of the model — keys, values, tokens.
//!
//! Lock keys and tokens are short, so they live inline (up to 24 bytes): a token travels from
//! the client to the command, the keyspace and the history without a heap allocation, and
//! cloning it is a copy of a few bytes. Longer values spill to the heap.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

use smallvec::SmallVec;

#[derive(Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(SmallVec<[u8; 24]>);

impl Bytes {
    pub fn new() -> Bytes {
        Bytes(SmallVec::new())
    }
    pub fn from_slice(s: &[u8]) -> Bytes {
        Bytes(SmallVec::from_slice(s))
    }
    pub fn push(&mut self, b: u8) {
        self.0.push(b);
    }
    pub fn extend_from_slice(&mut self, s: &[u8]) {
        self.0.extend_from_slice(s);
    }
    pub fn set(&mut self, i: usize, b: u8) {
        self.0[i] = b;
    }
    pub fn insert(&mut self, i: usize, b: u8) {
        self.0.insert(i, b);
    }
}

impl Clone for Bytes {
    /// `SmallVec`'s own `clone` copies element by element; bytes are `Copy`, so copy the
    /// slice at once (this clone is on the hot path).
    fn clone(&self) -> Bytes {
        Bytes::from_slice(&self.0)
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Borrow<[u8]> for Bytes {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl Hash for Bytes {
    // Must hash exactly like `[u8]` so that maps keyed by `Bytes` can be queried by `&[u8]`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.as_slice().hash(state)
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b\"")?;
        crate::proto::reply::write_quoted(f, &self.0)?;
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
        self.0.as_slice() == other
    }
}

impl PartialEq<&[u8]> for Bytes {
    fn eq(&self, other: &&[u8]) -> bool {
        self.0.as_slice() == *other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Bytes {
    fn eq(&self, other: &&[u8; N]) -> bool {
        self.0.as_slice() == other.as_slice()
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
    }
}
