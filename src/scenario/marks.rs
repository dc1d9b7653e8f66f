//! Positions of parsed values, found from the parser's own spans — never by searching the
//! text for a word (which finds the word inside a description string, or nowhere for a
//! generated name).
//!
//! Every located value (a `Name`, a `PropName`, an `AlgName`, a `Pos<T>`, a client group's
//! field name) takes the next ordinal of a per-parse counter *before* it is read: its `Mark`.
//! Validation errors carry the mark of the value they blame. To turn a mark into `LINE:COL`,
//! the loader parses the same text again with "fail at ordinal k" set: the value holding mark
//! k then returns an error before reading anything, so RON's error span points just before
//! it, and skipping blanks and comments from there lands on its first character. The same
//! text parses the same way, so ordinal k is the same value both times.
//!
//! The counter is a thread-local of the loader (not simulation state): parsing is sequential
//! and a parse never spans threads.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{self, Deserialize, Deserializer};

thread_local! {
    /// The ordinal the next located value takes.
    static NEXT: Cell<u32> = const { Cell::new(1) };
    /// While relocating: the ordinal to fail at, and the message to fail with.
    static FAIL_AT: RefCell<Option<(u32, String)>> = const { RefCell::new(None) };
    /// An error raised while parsing whose position is a mark read earlier (a client group
    /// field that its algorithm, known only later, does not take).
    static PENDING: RefCell<Option<(Mark, String)>> = const { RefCell::new(None) };
}

/// Where a value was read: the ordinal of the located value in its parse, or `NONE` for a
/// value made by code (a default, a generated name, a re-timed model's trigger).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mark(pub u32);

impl Mark {
    pub const NONE: Mark = Mark(0);

    pub fn is_none(self) -> bool {
        self == Mark::NONE
    }

    /// Takes the next ordinal; while relocating, fails at the one asked for. Call it before
    /// reading the value it marks, so that the failure's span ends just before the value.
    pub fn take<E: de::Error>() -> Result<Mark, E> {
        let k = NEXT.with(|n| {
            let k = n.get();
            n.set(k.saturating_add(1));
            k
        });
        match FAIL_AT.with(|f| f.borrow().as_ref().filter(|(at, _)| *at == k).cloned()) {
            Some((_, message)) => Err(E::custom(message)),
            None => Ok(Mark(k)),
        }
    }

    /// The first non-zero of two marks.
    pub fn or(self, other: Mark) -> Mark {
        if self.is_none() { other } else { self }
    }
}

/// A parse error to be reported at `mark` (a value read earlier in the same parse): returns
/// the error to propagate and leaves the position for the loader to find.
pub fn located<E: de::Error>(mark: Mark, message: String) -> E {
    PENDING.with(|p| *p.borrow_mut() = Some((mark, message.clone())));
    E::custom(message)
}

/// Starts a parse: ordinals from 1, nothing pending; `fail_at` while relocating.
pub fn begin(fail_at: Option<(Mark, String)>) {
    NEXT.with(|n| n.set(1));
    PENDING.with(|p| *p.borrow_mut() = None);
    FAIL_AT.with(|f| *f.borrow_mut() = fail_at.map(|(m, s)| (m.0, s)));
}

/// Ends a parse: clears the relocation request and returns the pending located error, if
/// the parse raised one.
pub fn end() -> Option<(Mark, String)> {
    FAIL_AT.with(|f| *f.borrow_mut() = None);
    PENDING.with(|p| p.borrow_mut().take())
}

/// Line and column (1-based, in characters) of the first character at or after `line:col`
/// that is neither blank nor inside a comment: the start of the value a failure before it
/// points just before.
pub fn skip_blanks(text: &str, line: usize, col: usize) -> (usize, usize) {
    // Byte offset of line:col.
    let mut off = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            off += l
                .char_indices()
                .nth(col.saturating_sub(1))
                .map_or(l.len(), |(b, _)| b);
            break;
        }
        off += l.len();
    }
    let rest = &text[off.min(text.len())..];
    let b = rest.as_bytes();
    let i = skip_ws(b, 0);
    let upto = &text[..off.min(text.len()) + i];
    let line = 1 + upto.matches('\n').count();
    let col = 1 + upto.chars().rev().take_while(|&c| c != '\n').count();
    (line, col)
}

/// The first byte at or after `i` that is not whitespace or a RON comment (`//` to the end
/// of the line, `/* … */` nested).
pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            // RON block comments nest.
            let mut depth = 0usize;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else {
            return i;
        }
    }
}

/// A value with the mark of where it was read. Compares, orders and prints as its value.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pos<T> {
    pub value: T,
    pub mark: Mark,
}

impl<T> Pos<T> {
    /// A value made by code, with no position.
    pub fn new(value: T) -> Pos<T> {
        Pos {
            value,
            mark: Mark::NONE,
        }
    }
}

impl<T> std::ops::Deref for Pos<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: PartialEq> PartialEq for Pos<T> {
    fn eq(&self, other: &Pos<T>) -> bool {
        self.value == other.value
    }
}
impl<T: Eq> Eq for Pos<T> {}

impl<T: fmt::Display> fmt::Display for Pos<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Pos<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mark = Mark::take()?;
        Ok(Pos {
            value: T::deserialize(d)?,
            mark,
        })
    }
}
