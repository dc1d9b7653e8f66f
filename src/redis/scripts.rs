//! The lock scripts every client library uses, recognised by SHA1 and run as native Rust.
//!
//! EVALSHA identifies a script by the SHA1 of its text, so recognising the text by SHA1 is
//! exactly as strict as Redis: a script that differs by one byte is another script and runs
//! in Lua. Both quote styles are common (the Redis docs use double quotes, many libraries
//! single quotes), so both are recognised.

use crate::proto::Bytes;
use crate::proto::command::sha1_of;

/// Compare-and-delete (the safe unlock).
pub const UNLOCK_SRC: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;
/// Compare-and-pexpire (extend).
pub const EXTEND_SRC: &str = r#"if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end"#;
pub const UNLOCK_SRC_SQ: &str = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end";
pub const EXTEND_SRC_SQ: &str = "if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('pexpire',KEYS[1],ARGV[2]) else return 0 end";

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

/// Which native script has this SHA1, if any.
pub fn native_script(sha: &[u8; 20]) -> Option<NativeScript> {
    thread_local! {
        static TABLE: [([u8; 20], NativeScript); 4] = [
            (sha1_of(UNLOCK_SRC.as_bytes()), NativeScript::Unlock),
            (sha1_of(UNLOCK_SRC_SQ.as_bytes()), NativeScript::Unlock),
            (sha1_of(EXTEND_SRC.as_bytes()), NativeScript::Extend),
            (sha1_of(EXTEND_SRC_SQ.as_bytes()), NativeScript::Extend),
        ];
    }
    TABLE.with(|t| t.iter().find(|(s, _)| s == sha).map(|(_, n)| *n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::command::hex;

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
}
