//! Value types of model files that validate themselves while being read, so that a bad value
//! is reported at its own line and column by the RON reader.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Visitor};

use crate::scenario::marks::Mark;
use crate::time::{NS_PER_MS, NS_PER_S, NS_PER_US, fmt_duration_ns};

/// Longest duration a model may name anywhere (a day of simulated time is already far more
/// than any lock scenario needs; the bound keeps arithmetic and runs finite).
pub const DURATION_NS_LIMIT: u64 = 86_400 * NS_PER_S;

/// Parses `"10s"`, `"250ms"`, `"100us"`, `"1.5s"`, `"2min"`, `"+5s"`, `"-20s"` into signed ns.
pub fn parse_duration_ns(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let split = body
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(body.len());
    let (num, unit) = body.split_at(split);
    let unit_ns: u64 = match unit.trim() {
        "ns" => 1,
        "us" => NS_PER_US,
        "ms" => NS_PER_MS,
        "s" => NS_PER_S,
        "min" => 60 * NS_PER_S,
        "h" => 3600 * NS_PER_S,
        "" => {
            return Err(format!(
                "duration {s:?} has no unit (write e.g. \"250ms\" or \"10s\"; units: ns, us, ms, s, min, h)"
            ));
        }
        u => {
            return Err(format!(
                "duration {s:?} has an unknown unit {u:?} (units: ns, us, ms, s, min, h)"
            ));
        }
    };
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() || frac_part.contains('.') {
        return Err(format!("duration {s:?} is not a number with a unit"));
    }
    let too_long = || {
        format!(
            "duration {s:?} is longer than the limit of {}",
            fmt_duration_ns(DURATION_NS_LIMIT)
        )
    };
    let int: u64 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().map_err(|_| too_long())?
    };
    let mut ns = int.checked_mul(unit_ns).ok_or_else(too_long)?;
    // Fraction: exact decimal arithmetic, refusing digits finer than 1 ns.
    let mut scale = unit_ns;
    for c in frac_part.chars() {
        if !scale.is_multiple_of(10) {
            return Err(format!("duration {s:?} is more precise than 1ns"));
        }
        scale /= 10;
        ns = ns
            .checked_add(u64::from(c as u8 - b'0') * scale)
            .ok_or_else(too_long)?;
    }
    if ns > DURATION_NS_LIMIT {
        return Err(too_long());
    }
    Ok(if neg { -(ns as i64) } else { ns as i64 })
}

struct StrVisitor(&'static str);
impl Visitor<'_> for StrVisitor {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }
}

/// A non-negative duration, e.g. `"250ms"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub u64);

impl Dur {
    pub fn ns(self) -> u64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = d.deserialize_str(StrVisitor("a duration string such as \"250ms\" or \"10s\""))?;
        parse_dur(&s).map_err(de::Error::custom)
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&fmt_duration_ns(self.0))
    }
}

/// A duration that may be negative (clock steps, offsets), e.g. `"-20s"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SignedDur(pub i64);

impl<'de> Deserialize<'de> for SignedDur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = d.deserialize_str(StrVisitor(
            "a signed duration string such as \"+5s\" or \"-20s\"",
        ))?;
        parse_duration_ns(&s)
            .map(SignedDur)
            .map_err(de::Error::custom)
    }
}

impl fmt::Display for SignedDur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "+" };
        write!(f, "{sign}{}", fmt_duration_ns(self.0.unsigned_abs()))
    }
}

impl SignedDur {
    /// Whole milliseconds (clock steps are applied in ms, the unit of Redis's clock).
    pub fn ms(self) -> i64 {
        self.0 / NS_PER_MS as i64
    }
}

/// What a range-typed field accepts, in every message about one.
pub const RANGE_EXPECTED: &str = "a range (\"a\", \"b\") or a single value is expected";

/// Reads `("a", "b")` or a single `"d"` (= `("d", "d")`) of values parsed by `parse`; a bad
/// value keeps its own message (and its own position, inside a pair).
fn range<'de, D: Deserializer<'de>, T: Deserialize<'de> + Copy + PartialOrd + fmt::Display>(
    d: D,
    parse: fn(&str) -> Result<T, String>,
) -> Result<(T, T), D::Error> {
    struct V<T>(fn(&str) -> Result<T, String>);
    impl<'de, T: Deserialize<'de> + Copy + PartialOrd + fmt::Display> Visitor<'de> for V<T> {
        type Value = (T, T);
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(RANGE_EXPECTED)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<(T, T), E> {
            let x = (self.0)(v).map_err(|e| E::custom(format!("{e}; {RANGE_EXPECTED}")))?;
            Ok((x, x))
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(T, T), A::Error> {
            let two = |n| de::Error::invalid_length(n, &"a range of two values (\"a\", \"b\")");
            let a: T = seq.next_element()?.ok_or_else(|| two(0))?;
            let b: T = seq.next_element()?.ok_or_else(|| two(1))?;
            if seq.next_element::<de::IgnoredAny>()?.is_some() {
                return Err(two(3));
            }
            if a > b {
                return Err(de::Error::custom(format!(
                    "range ({a}, {b}) has its minimum above its maximum"
                )));
            }
            Ok((a, b))
        }
    }
    d.deserialize_any(V(parse))
}

fn parse_dur(s: &str) -> Result<Dur, String> {
    let v = parse_duration_ns(s)?;
    if v < 0 {
        return Err(format!(
            "duration {s:?} is negative; only clock steps may be negative"
        ));
    }
    Ok(Dur(v as u64))
}

/// `("min", "max")`, or a single `"d"` for a fixed duration; min ≤ max.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurRange {
    pub min: Dur,
    pub max: Dur,
}

impl DurRange {
    pub fn fixed(d: Dur) -> DurRange {
        DurRange { min: d, max: d }
    }
}

impl<'de> Deserialize<'de> for DurRange {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (min, max) = range(d, parse_dur)?;
        Ok(DurRange { min, max })
    }
}

/// `("min", "max")` of signed durations, or a single `"d"`; min ≤ max.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignedDurRange {
    pub min: SignedDur,
    pub max: SignedDur,
}

impl<'de> Deserialize<'de> for SignedDurRange {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (min, max) = range(d, |s| parse_duration_ns(s).map(SignedDur))?;
        Ok(SignedDurRange { min, max })
    }
}

/// A process name: 1–32 characters of `[a-z0-9_-]`, starting with a letter. The mark says
/// where it was read (`Mark::NONE` for a name made by code); it is not part of its identity.
#[derive(Clone, Debug)]
pub struct Name(pub String, pub Mark);

impl Name {
    /// A name made by code (a generated member name, a default), with no position.
    pub fn new(s: impl Into<String>) -> Name {
        Name(s.into(), Mark::NONE)
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.0 == other.0
    }
}
impl Eq for Name {}
impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Name {
    fn cmp(&self, other: &Name) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mark = Mark::take()?;
        let s = d.deserialize_str(StrVisitor("a name such as \"redis\" or \"c1\""))?;
        let ok = (1..=32).contains(&s.len())
            && s.as_bytes()[0].is_ascii_lowercase()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !ok {
            return Err(de::Error::custom(format!(
                "invalid name {s:?}: use 1-32 characters of a-z, 0-9, '-', '_', starting with a letter"
            )));
        }
        Ok(Name(s, mark))
    }
}

/// An integer bounded to `[LO, HI]`, checked where it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounded<const LO: i64, const HI: i64>(pub i64);

impl<'de, const LO: i64, const HI: i64> Deserialize<'de> for Bounded<LO, HI> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = i64::deserialize(d)?;
        if !(LO..=HI).contains(&v) {
            return Err(de::Error::custom(format!(
                "{v} is out of range: allowed {LO}..={HI}"
            )));
        }
        Ok(Bounded(v))
    }
}

/// The candidate nearest to a misspelt name, when it is near enough to be a typo (an edit
/// distance of at most a third of the candidate's length): the "did you mean" of every
/// name a user types (hazards, properties, algorithms, bundled models).
pub fn closest_name<'a>(s: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    }
    // Names are short; a long input is no typo of one (and is not worth the work).
    if s.len() > 64 {
        return None;
    }
    candidates
        .map(|c| (distance(s, c), c))
        .min()
        .filter(|(d, name)| *d <= name.len() / 3)
        .map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_exactly() {
        assert_eq!(parse_duration_ns("10s"), Ok(10_000_000_000));
        assert_eq!(parse_duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("0.1ms"), Ok(100_000));
        assert_eq!(parse_duration_ns("-20s"), Ok(-20_000_000_000));
        assert_eq!(parse_duration_ns("+5ms"), Ok(5_000_000));
        assert!(parse_duration_ns("10").unwrap_err().contains("no unit"));
        assert!(
            parse_duration_ns("10 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(
            parse_duration_ns("99999999999h")
                .unwrap_err()
                .contains("limit")
        );
        assert!(parse_duration_ns("1.5ns").is_err());
        assert!(parse_duration_ns("").is_err());
    }
}

/// A process's clock as a node or client group sets it: an offset from true time and a
/// drift rate.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec {
    #[serde(default)]
    pub offset: Option<SignedDur>,
    #[serde(default)]
    pub drift_ppm: Option<Bounded<-500_000, 500_000>>,
}

impl ClockSpec {
    /// The clock it describes, counted from the model's Unix epoch at true time 0.
    pub fn clock(&self, epoch_unix_ms: i64) -> crate::clock::NodeClock {
        crate::clock::NodeClock::new(
            epoch_unix_ms,
            self.offset.map_or(0, |o| o.ms()),
            self.drift_ppm.map_or(0, |d| d.0),
        )
    }
}
