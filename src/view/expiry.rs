//! A lock key's expiry in words: what the picture says beside the mark and on hover.

use crate::proto::Bytes;
use crate::scenario::Scenario;
use crate::time::{NS_PER_MS, SimTime, fmt_duration_ns};

/// A lock key's expiry on a node and the end of the believed validity of the client whose
/// token it held: joined by a dotted line, so the gap between them is seen.
pub(super) struct Gap {
    pub(super) client: usize,
    pub(super) believed_until: SimTime,
    pub(super) node: usize,
    pub(super) expired_at: SimTime,
}

fn text_of(b: &Bytes) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn expiry_words(
    sc: &Scenario,
    names: &[String],
    node: usize,
    k: &(usize, Bytes, Bytes, Option<usize>, SimTime, Option<i64>),
    at: SimTime,
    removed: SimTime,
    belief: Option<&(Bytes, usize, SimTime)>,
    still_held: bool,
) -> (String, String, Option<Gap>) {
    let wall = k.5.map_or(String::new(), |e| {
        format!(
            " (at +{} on {}'s clock)",
            fmt_duration_ns(((e - sc.epoch_unix_ms).max(0) as u64) * NS_PER_MS),
            names[node]
        )
    });
    let freed = if removed > at {
        format!("; freed at {removed} by the expiry cycle")
    } else {
        String::new()
    };
    let head = format!(
        "{}: key {} (token {}) expired at {at}{wall}{freed}",
        names[node],
        text_of(&k.1),
        text_of(&k.2)
    );
    let Some((_, c, until)) = belief else {
        return ("key expires".into(), head, None);
    };
    let holder = &names[*c];
    let held = if still_held {
        format!(" {holder} still holds the lock now: it acts on a lock that is gone.")
    } else {
        String::new()
    };
    let (label, why) = if *until > at {
        let d = fmt_duration_ns(until.0 - at.0);
        (
            format!("key expires {d} before {holder}'s belief ends"),
            format!(
                "{holder} believed it valid until {until}, {d} LATER: for that long it believes in a key that no longer exists (its clock ran slow, or the node's ran fast)."
            ),
        )
    } else {
        let d = fmt_duration_ns(at.0 - until.0);
        (
            format!("key expires ({d} after {holder}'s belief)"),
            format!(
                "{holder} believed it valid until {until}, {d} earlier: it counts its validity from before it sent SET, the node from when it wrote the key, so the belief should end first (dashed line)."
            ),
        )
    };
    (
        label,
        format!("{head}. {why}{held}"),
        Some(Gap {
            client: *c,
            believed_until: *until,
            node,
            expired_at: at,
        }),
    )
}
