//! Replies a Redis node sends, with redis-cli style rendering (the corpus format).

use std::fmt;

/// EVALSHA of a script the server does not have (Redis's exact text).
pub const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// A RESP2 reply. Errors carry their full message, prefix included
/// (`ERR ...`, `WRONGTYPE ...`, `NOSCRIPT ...`), exactly as the server sends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`: the hot-path status, kept apart so that it never allocates.
    Ok,
    /// Any other status reply (`PONG`, `string`, a script's `{ok=...}`).
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    /// Null bulk or null array; redis-cli shows both as `(nil)`.
    Nil,
    Array(Vec<Reply>),
}

impl Reply {
    pub fn err(msg: impl Into<String>) -> Reply {
        Reply::Error(msg.into())
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Drops a reply a client has read. The lock replies own nothing (`+OK`, an integer,
    /// nil): those are let go without the call into `Reply`'s drop glue, ~24 instructions a
    /// reply on W2 (a plain `match` with a `drop` arm still drops the other arms' value).
    #[inline]
    pub fn release(self) {
        match self {
            r @ (Reply::Ok | Reply::Int(_) | Reply::Nil) => std::mem::forget(r),
            other => drop(other),
        }
    }
}

/// Writes `bytes` as a redis-cli quoted string body (without the quotes): printable ASCII
/// as is, `\"` `\\` `\n` `\r` `\t` `\a` `\b`, anything else as `\xHH` (lower-case hex).
pub fn write_quoted(f: &mut impl fmt::Write, bytes: &[u8]) -> fmt::Result {
    for &b in bytes {
        match b {
            b'"' => f.write_str("\\\"")?,
            b'\\' => f.write_str("\\\\")?,
            b'\n' => f.write_str("\\n")?,
            b'\r' => f.write_str("\\r")?,
            b'\t' => f.write_str("\\t")?,
            0x07 => f.write_str("\\a")?,
            0x08 => f.write_str("\\b")?,
            0x20..=0x7e => f.write_char(b as char)?,
            _ => write!(f, "\\x{b:02x}")?,
        }
    }
    Ok(())
}

impl fmt::Display for Reply {
    /// redis-cli rendering as the corpus writes it: `OK`, `(nil)`, `(integer) 3`,
    /// `"bulk"`, `(error) MSG`, `[a, b]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Ok => f.write_str("OK"),
            Reply::Status(s) => f.write_str(s),
            Reply::Error(e) => write!(f, "(error) {e}"),
            Reply::Int(i) => write!(f, "(integer) {i}"),
            Reply::Bulk(b) => {
                f.write_str("\"")?;
                write_quoted(f, b)?;
                f.write_str("\"")
            }
            Reply::Nil => f.write_str("(nil)"),
            Reply::Array(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_redis_cli() {
        let r = Reply::Array(vec![
            Reply::Int(1),
            Reply::Bulk(b"two".to_vec()),
            Reply::Array(vec![Reply::Int(3), Reply::Bulk(b"\x00\xff\"".to_vec())]),
        ]);
        assert_eq!(
            r.to_string(),
            r#"[(integer) 1, "two", [(integer) 3, "\x00\xff\""]]"#
        );
        assert_eq!(Reply::Nil.to_string(), "(nil)");
        assert_eq!(Reply::err("ERR x").to_string(), "(error) ERR x");
        assert_eq!(Reply::Array(vec![]).to_string(), "[]");
    }
}
