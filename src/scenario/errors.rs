//! A model's validation errors before positions are attached: the message, and where it is
//! (`Locator`: a parser mark, a text to find, or nowhere). `scenario::load_str` turns a
//! locator into `FILE:LINE:COL`.

use crate::scenario::marks::Mark;
use crate::scenario::units::Name;

/// A validation error before positions are attached: the message, and where it is.
#[derive(Clone, Debug)]
pub struct Invalid {
    pub message: String,
    pub at: Locator,
}

/// Where an error is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Locator {
    /// At the value (or field name) read with this mark: found from the parser's span.
    Mark(Mark),
    /// Near the first occurrence of this text outside comments: the old way, for sites not
    /// yet given a mark. It can land inside a description string; prefer `Mark`.
    Text(String),
    /// At the start of the file (a value made by code, or a model without the field).
    Nowhere,
}

impl From<Mark> for Locator {
    fn from(m: Mark) -> Locator {
        if m.is_none() {
            Locator::Nowhere
        } else {
            Locator::Mark(m)
        }
    }
}

/// The first name a list repeats.
pub(crate) fn first_repeat(names: &[Name]) -> Option<&Name> {
    names
        .iter()
        .enumerate()
        .find_map(|(i, n)| names[..i].contains(n).then_some(n))
}

impl From<Option<String>> for Locator {
    fn from(near: Option<String>) -> Locator {
        near.map_or(Locator::Nowhere, Locator::Text)
    }
}

pub(crate) fn invalid(message: impl Into<String>, at: impl Into<Locator>) -> Invalid {
    Invalid {
        message: message.into(),
        at: at.into(),
    }
}

/// Where a name was read (or, for a name made by code, its text quoted as in the file).
pub(crate) fn quoted(n: &Name) -> Locator {
    if n.1.is_none() {
        Locator::Text(format!("\"{}\"", n.0))
    } else {
        Locator::Mark(n.1)
    }
}
