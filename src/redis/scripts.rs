//! The lock scripts every client library uses (`proto::scripts`), recognised by SHA1 and run
//! as native Rust.
//!
//! EVALSHA identifies a script by the SHA1 of its text, so recognising the text by SHA1 is
//! exactly as strict as Redis: a script that differs by one byte is another script and runs
//! in Lua. Both quote styles are common (the Redis docs use double quotes, many libraries
//! single quotes), so both are recognised.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::proto::Bytes;
#[cfg(test)]
use crate::proto::command::sha1_of;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NativeScript {
    Unlock,
    Extend,
}

impl NativeScript {
    /// The native version covers calls with the keys and arguments the script reads; any
    /// other shape (a missing ARGV, no key) runs in Lua so that its error is Redis's own.
    pub fn fits(self, keys: &[Bytes], args: &[Bytes]) -> bool {
        !keys.is_empty()
            && match self {
                NativeScript::Unlock => !args.is_empty(),
                NativeScript::Extend => args.len() >= 2,
            }
    }
}

/// The native scripts' SHA1s, written out so that recognising one is a comparison of
/// constants (a thread-local table of computed digests cost ~60 instructions an EVAL);
/// `native_shas_are_the_sources_sha1` checks them against the sources.
const NATIVE: [([u8; 20], NativeScript); 4] = [
    (
        sha(b"b70c2384248f88e6b75b9f89241a180f856ad852"),
        NativeScript::Unlock,
    ),
    (
        sha(b"ae3671744a5dbb24ea37ef607b8b10ac7856d43e"),
        NativeScript::Unlock,
    ),
    (
        sha(b"36e94d1c6e02fcefaa7ee5d79eee614dbac55f10"),
        NativeScript::Extend,
    ),
    (
        sha(b"0be193f9697b4b30826e1bc553c0064e0e04668c"),
        NativeScript::Extend,
    ),
];

/// 40 lower-case hex digits as a digest, at compile time.
const fn sha(hex: &[u8; 40]) -> [u8; 20] {
    const fn digit(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => panic!("not a lower-case hex digit"),
        }
    }
    let mut out = [0u8; 20];
    let mut i = 0;
    while i < 20 {
        out[i] = digit(hex[2 * i]) << 4 | digit(hex[2 * i + 1]);
        i += 1;
    }
    out
}

/// A native script by SHA1, with its slot (position in `NATIVE`, for `ScriptCache`'s bits).
#[inline]
pub fn native_script_slot(sha: &[u8; 20]) -> Option<(usize, NativeScript)> {
    NATIVE
        .iter()
        .position(|(s, _)| s == sha)
        .map(|i| (i, NATIVE[i].1))
}

/// Which native script has this SHA1, if any.
#[inline]
pub fn native_script(sha: &[u8; 20]) -> Option<NativeScript> {
    native_script_slot(sha).map(|(_, n)| n)
}

/// The server's script cache (`SCRIPT LOAD`, and every EVAL adds its script): SHA1 to
/// source. The lock scripts are sent by EVAL on every unlock, so whether one of them is
/// cached already is kept as a bit beside the map, and their EVAL skips the map.
#[derive(Clone, Debug, Default)]
pub struct ScriptCache {
    // Invariant: every entry's key is the SHA1 of its source.
    map: BTreeMap<[u8; 20], Arc<[u8]>>,
    // Invariant: bit i set => `map` holds `NATIVE[i]`'s SHA1. (Entries only ever leave the
    // map all at once, by `clear`, which clears the bits.)
    native_cached: u8,
}

impl ScriptCache {
    /// Caches a script unless it is there already (the first source stays, as in Redis).
    pub fn insert(&mut self, sha: [u8; 20], source: &Arc<[u8]>) {
        self.map.entry(sha).or_insert_with(|| source.clone());
        if let Some((i, _)) = native_script_slot(&sha) {
            self.native_cached |= 1 << i;
        }
    }

    /// Caches `source` (whose SHA1 is `sha`), a native script's: the map only the first time.
    #[inline]
    pub fn insert_native(&mut self, slot: usize, sha: &[u8; 20], source: &Arc<[u8]>) {
        if self.native_cached & (1 << slot) == 0 {
            self.insert(*sha, source);
        }
    }

    #[inline]
    pub fn contains_native(&self, slot: usize, sha: &[u8; 20]) -> bool {
        self.native_cached & (1 << slot) != 0 || self.map.contains_key(sha)
    }

    pub fn contains(&self, sha: &[u8; 20]) -> bool {
        self.map.contains_key(sha)
    }

    pub fn get(&self, sha: &[u8; 20]) -> Option<&Arc<[u8]>> {
        self.map.get(sha)
    }

    pub fn clear(&mut self) {
        self.map.clear();
        self.native_cached = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::command::hex;
    use crate::proto::scripts::{EXTEND_SRC, EXTEND_SRC_SQ, UNLOCK_SRC, UNLOCK_SRC_SQ};

    #[test]
    fn single_quoted_scripts_have_the_corpus_shas() {
        assert_eq!(
            hex(&sha1_of(UNLOCK_SRC_SQ.as_bytes())),
            "ae3671744a5dbb24ea37ef607b8b10ac7856d43e"
        );
        assert_eq!(
            hex(&sha1_of(EXTEND_SRC_SQ.as_bytes())),
            "0be193f9697b4b30826e1bc553c0064e0e04668c"
        );
        assert_eq!(
            native_script(&sha1_of(UNLOCK_SRC.as_bytes())),
            Some(NativeScript::Unlock)
        );
        assert_eq!(native_script(&sha1_of(b"return 1")), None);
    }

    #[test]
    fn native_shas_are_the_sources_sha1() {
        let sources = [UNLOCK_SRC, UNLOCK_SRC_SQ, EXTEND_SRC, EXTEND_SRC_SQ];
        for (src, (sha, _)) in sources.iter().zip(NATIVE.iter()) {
            assert_eq!(&sha1_of(src.as_bytes()), sha, "{src}");
        }
        assert_eq!(
            native_script(&sha1_of(EXTEND_SRC.as_bytes())),
            Some(NativeScript::Extend)
        );
    }

    #[test]
    fn a_cached_native_script_is_forgotten_by_a_flush() {
        let mut c = ScriptCache::default();
        let src: Arc<[u8]> = UNLOCK_SRC.as_bytes().into();
        let sha = sha1_of(&src);
        let (slot, _) = native_script_slot(&sha).expect("native");
        assert!(!c.contains_native(slot, &sha));
        c.insert_native(slot, &sha, &src);
        assert!(c.contains_native(slot, &sha) && c.contains(&sha));
        c.clear();
        assert!(!c.contains_native(slot, &sha) && !c.contains(&sha));
        // SCRIPT LOAD of the same text counts as cached too.
        c.insert(sha, &src);
        assert!(c.contains_native(slot, &sha));
    }
}
