//! A lock key's expiry in words: the instant its TTL ran out on its node's clock, and — when
//! the key held the token of a client that believed in a validity — why that validity ended
//! when it did, against the TTL. The gap between the two ends is split into parts, each
//! computed from the run: where the two counts start (the client counts from when it learnt
//! it holds the lock, the node from its write), how long each is, the node's millisecond
//! (Redis drops a key once its clock is past the deadline's millisecond) and what each clock
//! did. A cause is named only where the run has it — a pause, a latency spike, a drift, a
//! step — and the parts add up to the gap exactly (`tests::the_parts_add_up_to_the_gap`).

use crate::check::margin::removal_margin_ns;
use crate::proto::Bytes;
use crate::sim::World;
use crate::sim::fault::FaultKind;
use crate::sim::trace::TraceKind;
use crate::time::{NS_PER_MS, ProcId, SimTime, fmt_duration_ns, fmt_signed_ns};

/// A lock key's life on one node, as the picture follows it.
#[derive(Clone)]
pub(super) struct KeyLife {
    pub(super) node: usize,
    pub(super) key: Bytes,
    pub(super) value: Bytes,
    /// The client whose token it carries (a replica's copy: the master's writer).
    pub(super) writer: Option<usize>,
    /// Where its bar starts: the write, or a restart that loaded it back.
    pub(super) shown_from: SimTime,
    /// When the node wrote it (its TTL counts from here).
    pub(super) written: SimTime,
    /// Its deadline on the node's wall clock (Unix ms).
    pub(super) expire_at_ms: Option<i64>,
    /// A replica's copy (its master wrote the deadline).
    pub(super) copied: bool,
}

/// A validity a client believed in: from its acquire or extend, for `validity_ns` of its own
/// clock, which ends at `until` in true time.
#[derive(Clone)]
pub(super) struct Validity {
    pub(super) client: usize,
    pub(super) token: Bytes,
    pub(super) from: SimTime,
    pub(super) validity_ns: u64,
    pub(super) until: SimTime,
}

/// The safety margin drawn: a dotted line from the end of the holder's believed validity to
/// the key's removal from its node (`check::margin::removal_margin_ns`, the margin the
/// timeline and sweeps give).
pub(super) struct Gap {
    pub(super) client: usize,
    pub(super) believed_until: SimTime,
    pub(super) node: usize,
    pub(super) removed_at: SimTime,
}

/// An expiry as the picture shows it.
pub(super) struct Expiry {
    /// When its TTL ran out (the key is gone for readers from here).
    pub(super) at: SimTime,
    /// The words beside the mark.
    pub(super) label: String,
    pub(super) tip: String,
    pub(super) gap: Option<Gap>,
}

fn text_of(b: &Bytes) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The first true instant in `written..=removed` at which `node`'s wall clock is past
/// `expire_at_ms` (Redis: a key is expired once `mstime() > when`); `removed` without one.
pub(super) fn expiry_instant(
    world: &World,
    node: usize,
    written: SimTime,
    removed: SimTime,
    expire_at_ms: Option<i64>,
) -> SimTime {
    let Some(when) = expire_at_ms else {
        return removed;
    };
    let clock = world.clock(ProcId(node as u32));
    let (mut lo, mut hi) = (written.0, removed.0);
    if clock.wall_ms(SimTime(hi)) <= when {
        return removed;
    }
    // Invariant: the clock is past `when` at `hi`, and not at `lo` unless lo == written.
    if clock.wall_ms(SimTime(lo)) > when {
        return written;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if clock.wall_ms(SimTime(mid)) > when {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    SimTime(hi)
}

/// One part of the gap between a believed validity's end and its key's TTL running out, in
/// ns (positive: it makes the validity end later), with what caused it.
#[derive(Clone, Debug)]
pub(super) struct Part {
    pub(super) ns: i64,
    pub(super) words: String,
}

/// Below this a part is not worth a reader's attention (it still counts in the sum).
const NEGLIGIBLE_NS: i64 = 1_000;

fn dur(ns: i64) -> String {
    fmt_duration_ns(ns.unsigned_abs())
}

/// The pauses of `p` overlapping `[a, b]`, in ns.
fn paused_within(world: &World, p: usize, a: SimTime, b: SimTime) -> u64 {
    world
        .applied_faults
        .iter()
        .filter(|f| matches!(f.kind, FaultKind::Pause(q) if q.index() == p))
        .map(|f| {
            let end = f.end().unwrap_or(world.now());
            end.0.min(b.0).saturating_sub(f.at.0.max(a.0))
        })
        .sum()
}

/// Whether a latency spike from `from` to `to` was open at `at`.
fn spiked(world: &World, from: usize, to: usize, at: SimTime) -> bool {
    world.applied_faults.iter().any(|f| {
        let FaultKind::LatencySpike {
            from: fs, to: ts, ..
        } = &f.kind
        else {
            return false;
        };
        f.at <= at
            && f.end().is_none_or(|e| at < e)
            && fs.iter().any(|p| p.index() == from)
            && ts.iter().any(|p| p.index() == to)
    })
}

/// What `p`'s clock did in `[a, b]`: the drift rates in force there (other than 0) and its
/// steps.
fn clock_moves(world: &World, p: usize, a: SimTime, b: SimTime) -> (Vec<i64>, Vec<(SimTime, i64)>) {
    let clock = world.clock(ProcId(p as u32));
    let within = |t: SimTime| t >= a && t <= b;
    let mut rates = vec![clock.drift_ppm(a)];
    let mut steps = Vec::new();
    for f in &world.applied_faults {
        if let FaultKind::Drift { proc, .. } = &f.kind
            && proc.index() == p
        {
            for t in [Some(f.at), f.end()]
                .into_iter()
                .flatten()
                .filter(|t| within(*t))
            {
                rates.push(clock.drift_ppm(t));
            }
        }
        if let FaultKind::ClockStep { proc, delta_ms } = &f.kind
            && proc.index() == p
            && within(f.at)
        {
            steps.push((f.at, *delta_ms));
        }
    }
    rates.retain(|r| *r != 0);
    rates.sort_unstable();
    rates.dedup();
    (rates, steps)
}

/// "c1's clock ran fast (+200000 ppm) and stepped +2s at 12.5s".
fn clock_words(name: &str, rates: &[i64], steps: &[(SimTime, i64)]) -> String {
    let mut said = Vec::new();
    if !rates.is_empty() {
        let r: Vec<String> = rates.iter().map(|r| format!("{r:+} ppm")).collect();
        let how = if rates.iter().all(|r| *r > 0) {
            "ran fast"
        } else if rates.iter().all(|r| *r < 0) {
            "ran slow"
        } else {
            "drifted"
        };
        said.push(format!("{how} ({})", r.join(", ")));
    }
    for (at, d) in steps {
        said.push(format!("stepped {}ms at {at}", format_args!("{d:+}")));
    }
    format!("{name}'s clock {}", said.join(" and "))
}

/// Why the holder's validity began where it did against the node's write: the OK's trip
/// back (found in the trace), a pause that held it, a latency spike on its way.
fn start_words(world: &World, names: &[String], k: &KeyLife, b: &Validity) -> String {
    let (node, client) = (k.node, b.client);
    let d = b.from.0 as i64 - k.written.0 as i64;
    let when = if d >= 0 {
        format!("{} after {} wrote the key", dur(d), names[node])
    } else {
        format!("{} before {} wrote the key", dur(d), names[node])
    };
    if d <= 0 {
        return when;
    }
    // The reply to the write leaves the node at the write's instant; it reaches the client
    // at or before the acquire.
    let entries = &world.trace.entries;
    let first = entries.partition_point(|e| e.at < k.written);
    let reply = entries[first..]
        .iter()
        .take_while(|e| e.at <= b.from)
        .find_map(|e| match &e.kind {
            TraceKind::Recv { from, sent_at, .. }
                if e.proc.index() == client && from.index() == node && *sent_at == k.written =>
            {
                Some(e.at)
            }
            _ => None,
        });
    let mut why = Vec::new();
    if let Some(t) = reply {
        let trip = t.0 - k.written.0;
        let paused = paused_within(world, client, k.written, t);
        if paused > 0 {
            why.push(format!(
                "the OK waited {} for {} to resume from a pause",
                fmt_duration_ns(paused),
                names[client]
            ));
        }
        if spiked(world, node, client, k.written) {
            why.push(format!(
                "the OK took {} under a latency spike",
                fmt_duration_ns(trip)
            ));
        }
        if why.is_empty() {
            why.push(format!("the OK's one-way trip from {}", names[node]));
        }
        if b.from > t {
            why.push(format!(
                "then {} more until it counted the lock as acquired",
                fmt_duration_ns(b.from.0 - t.0)
            ));
        }
    } else {
        let paused = paused_within(world, client, k.written, b.from);
        if paused > 0 {
            why.push(format!(
                "{} was paused for {} of it",
                names[client],
                fmt_duration_ns(paused)
            ));
        }
    }
    if why.is_empty() {
        when
    } else {
        format!("{when}: {}", why.join(", "))
    }
}

/// The parts of `until − ran_out` for the validity `b` of the key `k` whose deadline is
/// `deadline_ms`: the counts' starts and lengths, the node's millisecond, the node's clock,
/// the client's clock. They add up to the gap exactly.
pub(super) fn parts(
    world: &World,
    names: &[String],
    epoch_unix_ms: i64,
    k: &KeyLife,
    deadline_ms: i64,
    ran_out: SimTime,
    b: &Validity,
) -> Vec<Part> {
    let (node, client) = (names[k.node].as_str(), names[b.client].as_str());
    let nclock = world.clock(ProcId(k.node as u32));
    // The TTL as the node counts it: from its reading at the write to the deadline.
    let wall_at_write = nclock.wall_ns(k.written);
    let ms_at_write = nclock.wall_ms(k.written);
    let ttl_ns = (deadline_ms - ms_at_write) as i128 * i128::from(NS_PER_MS);
    // On a clock that keeps true time from the write, the key goes once the reading reaches
    // the millisecond after the deadline.
    let to_next_ms = (deadline_ms as i128 + 1) * i128::from(NS_PER_MS) - wall_at_write - ttl_ns;
    let ideal = k.written.0 as i128 + ttl_ns + to_next_ms;
    let mut out = Vec::new();
    let starts = b.from.0 as i64 - k.written.0 as i64;
    out.push(Part {
        ns: starts,
        words: format!(
            "{client} counts its validity from {}, when it learnt it holds the lock, {}",
            b.from,
            start_words(world, names, k, b)
        ),
    });
    let lengths = (i128::from(b.validity_ns) - ttl_ns) as i64;
    if lengths != 0 {
        let mut w = format!(
            "{client} believes {}, {} {} than the {} {node}'s clock gives the key",
            fmt_duration_ns(b.validity_ns),
            dur(lengths),
            if lengths < 0 { "less" } else { "more" },
            fmt_duration_ns(ttl_ns.max(0) as u64)
        );
        // A replica's copy carries its master's deadline: a clock that reads ahead of
        // true time sees less of it left.
        let ahead = (nclock.wall_ns(k.written)
            - i128::from(epoch_unix_ms) * i128::from(NS_PER_MS)
            - k.written.0 as i128) as i64;
        if k.copied && ahead.abs() >= NS_PER_MS as i64 {
            w = format!(
                "{w}: the key is a copy whose deadline its master set, and {node}'s clock reads {} {} of true time",
                dur(ahead),
                if ahead > 0 { "ahead" } else { "behind" }
            );
        }
        out.push(Part {
            ns: lengths,
            words: w,
        });
    }
    out.push(Part {
        ns: -(to_next_ms as i64),
        words: format!(
            "{node} keeps the key until its clock is past the deadline's millisecond, {} + {} after the write",
            fmt_duration_ns(ttl_ns.max(0) as u64),
            fmt_duration_ns(to_next_ms.max(0) as u64)
        ),
    });
    let node_clock = ran_out.0 as i128 - ideal;
    if node_clock != 0 {
        let (rates, steps) = clock_moves(world, k.node, k.written, ran_out);
        out.push(Part {
            ns: -(node_clock as i64),
            words: format!(
                "{}: the TTL ran out {} {}",
                clock_words(node, &rates, &steps),
                dur(node_clock as i64),
                if node_clock < 0 { "sooner" } else { "later" }
            ),
        });
    }
    let client_clock = b.until.0 as i64 - b.from.0 as i64 - b.validity_ns as i64;
    if client_clock != 0 {
        let (rates, steps) = clock_moves(world, b.client, b.from, b.from);
        out.push(Part {
            ns: client_clock,
            words: format!(
                "{}: its {} last {} {} in true time",
                clock_words(client, &rates, &steps),
                fmt_duration_ns(b.validity_ns),
                dur(client_clock),
                if client_clock > 0 { "longer" } else { "less" }
            ),
        });
    }
    out
}

/// Whether neither clock drifted nor stepped between the write and the later end.
fn clocks_kept_time(world: &World, k: &KeyLife, b: &Validity, ran_out: SimTime) -> bool {
    let to = ran_out.max(b.until);
    let from = k.written.min(b.from);
    [k.node, b.client].iter().all(|&p| {
        let (rates, steps) = clock_moves(world, p, from, to);
        rates.is_empty() && steps.is_empty()
    })
}

/// The words for the expiry of `k`, removed from its node at `removed`, whose token's
/// holder believed in `belief` (if it counted a validity) and still holds it (`still_held`).
pub(super) fn explain(
    world: &World,
    names: &[String],
    epoch_unix_ms: i64,
    k: &KeyLife,
    removed: SimTime,
    belief: Option<&Validity>,
    still_held: bool,
) -> Expiry {
    let at = expiry_instant(world, k.node, k.shown_from, removed, k.expire_at_ms);
    let node = &names[k.node];
    let wall = k.expire_at_ms.map_or(String::new(), |e| {
        format!(
            " (its TTL ran out at +{} on {node}'s clock)",
            fmt_duration_ns(((e - epoch_unix_ms).max(0) as u64) * NS_PER_MS)
        )
    });
    let left = if removed > at {
        format!("; {node} removed it at {removed}")
    } else {
        String::new()
    };
    let head = format!(
        "{node}: key {} (token {}) expired at {at}{wall}{left}",
        text_of(&k.key),
        text_of(&k.value)
    );
    let (Some(b), Some(deadline)) = (belief, k.expire_at_ms) else {
        return Expiry {
            at,
            label: "key expires".into(),
            tip: format!("{head}."),
            gap: None,
        };
    };
    let holder = &names[b.client];
    let gap = b.until.0 as i64 - at.0 as i64;
    let (label, rel) = if gap > 0 {
        (
            format!("TTL ran out {} before {holder}'s validity ends", dur(gap)),
            format!(
                "{} after its TTL ran out: for that long {holder} believes in a key that is gone",
                dur(gap)
            ),
        )
    } else {
        (
            format!("TTL ran out {} after {holder}'s validity ended", dur(gap)),
            format!("{} before its TTL ran out", dur(gap)),
        )
    };
    let why: Vec<String> = parts(world, names, epoch_unix_ms, k, deadline, at, b)
        .into_iter()
        .filter(|p| p.ns.abs() >= NEGLIGIBLE_NS)
        .map(|p| format!("{} [{}]", p.words, fmt_signed_ns(p.ns)))
        .collect();
    let kept = if clocks_kept_time(world, k, b, at) {
        format!(" {node}'s and {holder}'s clocks ran at the true rate and never stepped.")
    } else {
        String::new()
    };
    let held = if still_held {
        format!(" {holder} still holds the lock now: it acts on a lock that is gone.")
    } else {
        String::new()
    };
    let margin = removal_margin_ns(removed, b.until);
    let tip = format!(
        "{head}. {holder}'s believed validity ended at {}, {rel}. Why the two ends differ (each part's share of the {} in brackets): {}.{kept}{held} Safety margin {} (the key left {node} at {removed} minus the end of {holder}'s believed validity).",
        b.until,
        fmt_signed_ns(gap),
        why.join("; "),
        fmt_signed_ns(margin)
    );
    Expiry {
        at,
        label,
        tip,
        gap: Some(Gap {
            client: b.client,
            believed_until: b.until,
            node: k.node,
            removed_at: removed,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::run_world;
    use crate::history::{Observation, Removal};
    use crate::sim::TraceMode;

    /// Every expiry of a lock key with a believed validity in `model`'s seed `seed`: the
    /// key's life, the validity, and when the key was removed.
    fn expiries(model: &str, seed: u64) -> (World, i64, Vec<(KeyLife, Validity, SimTime)>) {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("models/{model}.ron"));
        let sc = crate::scenario::load(&path).expect("loads");
        let (_, world) = run_world(&sc, seed, TraceMode::Full);
        let lock_keys = sc.lock_keys();
        let mut keys: Vec<KeyLife> = Vec::new();
        let mut beliefs: Vec<Validity> = Vec::new();
        let mut out = Vec::new();
        for r in &world.history.records {
            match &r.obs {
                Observation::Acquired {
                    token,
                    validity_ns: Some(v),
                    believed_until: Some(u),
                    ..
                }
                | Observation::Extended {
                    token,
                    validity_ns: Some(v),
                    believed_until: Some(u),
                    ..
                } => beliefs.push(Validity {
                    client: r.proc.index(),
                    token: token.clone(),
                    from: r.at,
                    validity_ns: *v,
                    until: *u,
                }),
                Observation::KeyWritten {
                    key,
                    value,
                    expire_at_ms,
                    by,
                } if lock_keys.contains(key) => {
                    keys.retain(|k| !(k.node == r.proc.index() && k.key == *key));
                    keys.push(KeyLife {
                        node: r.proc.index(),
                        key: key.clone(),
                        value: value.clone(),
                        writer: None,
                        shown_from: r.at,
                        written: r.at,
                        expire_at_ms: *expire_at_ms,
                        copied: by.is_none(),
                    });
                }
                Observation::KeyRemoved { key, how, .. } if lock_keys.contains(key) => {
                    let i = keys
                        .iter()
                        .position(|k| k.node == r.proc.index() && k.key == *key);
                    if let Some(k) = i.map(|i| keys.swap_remove(i))
                        && *how == Removal::Expired
                        && k.expire_at_ms.is_some()
                        && let Some(b) = beliefs.iter().rev().find(|b| b.token == k.value)
                    {
                        out.push((k, b.clone(), r.at));
                    }
                }
                // A crash ends what the node served (a restart with data writes it back).
                Observation::Crashed => keys.retain(|k| k.node != r.proc.index()),
                _ => {}
            }
        }
        (world, sc.epoch_unix_ms, out)
    }

    #[test]
    fn the_parts_add_up_to_the_gap_between_the_validitys_end_and_the_ttl_running_out() {
        // Plain TTLs, a drifting and a stepping clock, Redlock's shorter validity, a pause
        // that holds the OK, a clock ahead on a promoted replica.
        let mut seen = 0;
        for (model, seed) in [
            ("single-px-del-pause", 0),
            ("redlock-drift-beyond-factor", 0),
            ("redlock-clock-jump", 0),
            ("single-clock-step-expires-locks", 0),
            ("classic-kleppmann-redlock-gc-pause", 0),
            ("failover-replica-clock-ahead", 0),
            ("redlock-pause-after-acquire", 0),
        ] {
            let (world, epoch, ex) = expiries(model, seed);
            let names = world.names();
            for (k, b, removed) in &ex {
                let at = expiry_instant(&world, k.node, k.written, *removed, k.expire_at_ms);
                let deadline = k.expire_at_ms.expect("kept only with one");
                let ps = parts(&world, &names, epoch, k, deadline, at, b);
                let sum: i64 = ps.iter().map(|p| p.ns).sum();
                assert_eq!(
                    sum,
                    b.until.0 as i64 - at.0 as i64,
                    "{model}: {} at {at}: {ps:?}",
                    names[k.node]
                );
                seen += 1;
            }
        }
        assert!(seen > 30, "only {seen} expiries checked");
    }

    #[test]
    fn a_clock_is_blamed_only_where_it_drifted_or_stepped() {
        // single-px-del-pause: no clock moves; redlock-drift-beyond-factor: the masters'
        // clocks run 20 % fast.
        let (world, epoch, ex) = expiries("single-px-del-pause", 0);
        let names = world.names();
        for (k, b, removed) in &ex {
            let at = expiry_instant(&world, k.node, k.written, *removed, k.expire_at_ms);
            let ps = parts(&world, &names, epoch, k, k.expire_at_ms.unwrap(), at, b);
            assert!(
                ps.iter()
                    .all(|p| !p.words.contains("clock ran") && !p.words.contains("drifted")),
                "{ps:?}"
            );
            assert_eq!(
                ps.len(),
                2,
                "the counts' starts and the node's millisecond only: {ps:?}"
            );
        }
        let (world, epoch, ex) = expiries("redlock-drift-beyond-factor", 0);
        let names = world.names();
        let blamed = ex.iter().any(|(k, b, removed)| {
            let at = expiry_instant(&world, k.node, k.written, *removed, k.expire_at_ms);
            parts(&world, &names, epoch, k, k.expire_at_ms.unwrap(), at, b)
                .iter()
                .any(|p| p.words.contains("'s clock ran fast"))
        });
        assert!(blamed, "the fast masters' clocks are named");
    }
}
