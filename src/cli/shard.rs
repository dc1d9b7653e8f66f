//! Sweeps split across machines: what `sweep --shard I/N --json` adds to its summary line so
//! that `merge` can rebuild the whole sweep's summary, and reading it back.
//!
//! The `partial` object (version 1) carries every field of the shard's `SweepSummary`; the
//! rest of the summary line is what an unsharded sweep prints. Merging is
//! `SweepSummary::merge`: counts add up, each "first" is the lowest seed.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::check::witness::Hazard;
use crate::check::{Property, Violation};
use crate::explore::SweepSummary;
use crate::explore::rate::ClusterRatio;
use crate::scenario::Scenario;
use crate::sim::RunEnd;
use crate::time::{ProcId, SimTime};

/// The version of the `partial` object; `merge` refuses others.
pub const PARTIAL_VERSION: u64 = 1;

fn end_name(e: RunEnd) -> &'static str {
    match e {
        RunEnd::TimeLimit => "time_limit",
        RunEnd::EventLimit => "event_limit",
        RunEnd::Quiescent => "quiescent",
        RunEnd::HistoryLimit => "history_limit",
    }
}

fn end_from_name(s: &str) -> Option<RunEnd> {
    [
        RunEnd::TimeLimit,
        RunEnd::EventLimit,
        RunEnd::Quiescent,
        RunEnd::HistoryLimit,
    ]
    .into_iter()
    .find(|e| end_name(*e) == s)
}

/// The sha1 of the model's text (hex), read from its path; `None` when it cannot be read.
/// `merge` checks it against the shards': the same name or path is not the same model.
pub fn model_sha1(sc: &Scenario) -> Option<String> {
    use sha1::Digest as _;
    let text = std::fs::read(&sc.path).ok()?;
    let digest = sha1::Sha1::digest(&text);
    Some(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// The `partial` object of a shard's summary line.
pub fn partial_json(sc: &Scenario, s: &SweepSummary) -> Value {
    let by_prop = |m: &BTreeMap<Property, u64>| -> Value {
        Value::Object(
            m.iter()
                .map(|(p, n)| (p.name().to_string(), json!(n)))
                .collect(),
        )
    };
    json!({
        "version": PARTIAL_VERSION,
        "path": sc.path,
        // Added after version 1 was first written: optional, so older shards still merge.
        "model_sha1": model_sha1(sc),
        "seeds_run": s.seeds_run,
        "violations_per_property": by_prop(&s.violations_per_property),
        "first_seed_per_property": by_prop(&s.first_seed_per_property),
        "first_violating_seed": s.first_violating_seed,
        "first_violations": s.first_violations.iter().map(|v| json!({
            "property": v.property.name(),
            "at_ns": v.at.0,
            "actors": v.actors.iter().map(|p| p.0).collect::<Vec<_>>(),
            "message": v.message,
        })).collect::<Vec<_>>(),
        "violating_seeds": s.violating_seeds,
        "event_limit_seeds": s.event_limit_seeds,
        "inconclusive_seeds": s.inconclusive_seeds,
        "first_inconclusive": s.first_inconclusive.map(|(seed, end, at)| json!([seed, end_name(end), at.0])),
        "history_limit_seeds": s.history_limit_seeds,
        "events": s.events,
        "acquisitions": s.acquisitions,
        "longest_overlap": s.longest_overlap.map(|(ns, seed)| json!([ns, seed])),
        "total_overlap_ns": s.total_overlap_ns,
        "min_margin": s.min_margin.map(|(ns, seed)| json!([ns, seed])),
        "margin_histogram": s.margin_histogram,
        "witnesses": Value::Object(s.witnesses.iter().map(|(h, (n, first))| (h.name().to_string(), json!([n, first]))).collect()),
        // Optional (shards of older builds lack it: their merge reports no rates).
        "rates": (!s.rates_missing).then(|| json!({
            "decided_per_property": by_prop(&s.decided_per_property),
            "per_acquisition": Value::Object(s.per_acquisition.iter().map(|(p, r)| (p.name().to_string(), ratio_json(r))).collect()),
            "overlap_per_acquisition": ratio_json(&s.overlap_per_acquisition),
            "closest_handover": s.closest_handover.map(|(gap, seed, at)| json!([gap, seed, at.0])),
            "min_margin_at": s.min_margin_at.map(|t| t.0),
        })),
    })
}

/// A `ClusterRatio`'s sums, as decimal strings (they may pass 2^64).
fn ratio_json(r: &ClusterRatio) -> Value {
    json!([
        r.seeds.to_string(),
        r.sum_x.to_string(),
        r.sum_n.to_string(),
        r.sum_xx.to_string(),
        r.sum_nn.to_string(),
        r.sum_xn.to_string(),
    ])
}

fn ratio_from_json(v: &Value) -> Option<ClusterRatio> {
    let a = v.as_array().filter(|a| a.len() == 6)?;
    let n = |i: usize| a[i].as_str()?.parse::<u128>().ok();
    let r = ClusterRatio {
        seeds: u64::try_from(n(0)?).ok()?,
        sum_x: n(1)?,
        sum_n: n(2)?,
        sum_xx: n(3)?,
        sum_nn: n(4)?,
        sum_xn: n(5)?,
    };
    Some(r)
}

/// A shard's summary rebuilt from its `partial` object; the error names the field.
pub fn summary_from_partial(v: &Value) -> Result<SweepSummary, String> {
    let field = |k: &str| {
        v.get(k)
            .ok_or_else(|| format!("partial: missing field {k:?}"))
    };
    let u = |k: &str| -> Result<u64, String> {
        field(k)?
            .as_u64()
            .ok_or_else(|| format!("partial: {k:?} is not a count"))
    };
    let opt_u = |k: &str| -> Result<Option<u64>, String> {
        match field(k)? {
            Value::Null => Ok(None),
            x => x
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("partial: {k:?} is not a seed")),
        }
    };
    let version = u("version")?;
    if version != PARTIAL_VERSION {
        return Err(format!(
            "partial: version {version}; this build reads version {PARTIAL_VERSION}"
        ));
    }
    let by_prop = |k: &str| -> Result<BTreeMap<Property, u64>, String> {
        let obj = field(k)?
            .as_object()
            .ok_or_else(|| format!("partial: {k:?} is not an object"))?;
        obj.iter()
            .map(|(name, n)| {
                let p = Property::from_name(name)
                    .ok_or_else(|| format!("partial: {k:?}: unknown property {name:?}"))?;
                let n = n
                    .as_u64()
                    .ok_or_else(|| format!("partial: {k:?}: {name:?} is not a count"))?;
                Ok((p, n))
            })
            .collect()
    };
    let pair = |k: &str| -> Result<Option<(Value, u64)>, String> {
        match field(k)? {
            Value::Null => Ok(None),
            Value::Array(a) if a.len() == 2 => {
                let seed = a[1]
                    .as_u64()
                    .ok_or_else(|| format!("partial: {k:?}: bad seed"))?;
                Ok(Some((a[0].clone(), seed)))
            }
            _ => Err(format!("partial: {k:?} is not [value, seed]")),
        }
    };
    let bad = |k: &str| format!("partial: {k:?} is malformed");
    let first_violations = field("first_violations")?
        .as_array()
        .ok_or_else(|| bad("first_violations"))?
        .iter()
        .map(|x| {
            let property = x["property"]
                .as_str()
                .and_then(Property::from_name)
                .ok_or_else(|| bad("first_violations"))?;
            let actors = x["actors"]
                .as_array()
                .ok_or_else(|| bad("first_violations"))?
                .iter()
                .map(|a| {
                    a.as_u64()
                        .and_then(|a| u32::try_from(a).ok())
                        .map(ProcId)
                        .ok_or_else(|| bad("first_violations"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Violation {
                property,
                at: SimTime(x["at_ns"].as_u64().ok_or_else(|| bad("first_violations"))?),
                actors,
                message: x["message"]
                    .as_str()
                    .ok_or_else(|| bad("first_violations"))?
                    .to_string(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let first_inconclusive = match field("first_inconclusive")? {
        Value::Null => None,
        Value::Array(a) if a.len() == 3 => Some((
            a[0].as_u64().ok_or_else(|| bad("first_inconclusive"))?,
            a[1].as_str()
                .and_then(end_from_name)
                .ok_or_else(|| bad("first_inconclusive"))?,
            SimTime(a[2].as_u64().ok_or_else(|| bad("first_inconclusive"))?),
        )),
        _ => return Err(bad("first_inconclusive")),
    };
    let hist = field("margin_histogram")?
        .as_array()
        .filter(|a| a.len() == 6)
        .ok_or_else(|| bad("margin_histogram"))?;
    let mut margin_histogram = [0u64; 6];
    for (slot, x) in margin_histogram.iter_mut().zip(hist) {
        *slot = x.as_u64().ok_or_else(|| bad("margin_histogram"))?;
    }
    let witnesses = field("witnesses")?
        .as_object()
        .ok_or_else(|| bad("witnesses"))?
        .iter()
        .map(|(name, x)| {
            let h = Hazard::from_name(name).ok_or_else(|| bad("witnesses"))?;
            let n = x[0].as_u64().ok_or_else(|| bad("witnesses"))?;
            let first = x[1].as_u64().ok_or_else(|| bad("witnesses"))?;
            Ok((h, (n, first)))
        })
        .collect::<Result<BTreeMap<_, _>, String>>()?;
    let mut rates = RatesPart::default();
    match v.get("rates") {
        None | Some(Value::Null) => rates.missing = true,
        Some(r) => {
            let bad = || bad("rates");
            rates.decided = r
                .get("decided_per_property")
                .and_then(Value::as_object)
                .ok_or_else(bad)?
                .iter()
                .map(|(name, n)| Some((Property::from_name(name)?, n.as_u64()?)))
                .collect::<Option<_>>()
                .ok_or_else(bad)?;
            rates.per_acquisition = r
                .get("per_acquisition")
                .and_then(Value::as_object)
                .ok_or_else(bad)?
                .iter()
                .map(|(name, x)| Some((Property::from_name(name)?, ratio_from_json(x)?)))
                .collect::<Option<_>>()
                .ok_or_else(bad)?;
            rates.overlap = r
                .get("overlap_per_acquisition")
                .and_then(ratio_from_json)
                .ok_or_else(bad)?;
            rates.closest_handover = match r.get("closest_handover") {
                None | Some(Value::Null) => None,
                Some(Value::Array(a)) if a.len() == 3 => Some((
                    a[0].as_u64().ok_or_else(bad)?,
                    a[1].as_u64().ok_or_else(bad)?,
                    SimTime(a[2].as_u64().ok_or_else(bad)?),
                )),
                _ => return Err(bad()),
            };
            rates.min_margin_at = match r.get("min_margin_at") {
                None | Some(Value::Null) => None,
                Some(x) => Some(SimTime(x.as_u64().ok_or_else(bad)?)),
            };
        }
    }
    Ok(SweepSummary {
        decided_per_property: rates.decided,
        per_acquisition: rates.per_acquisition,
        overlap_per_acquisition: rates.overlap,
        closest_handover: rates.closest_handover,
        min_margin_at: rates.min_margin_at,
        rates_missing: rates.missing,
        seeds_run: u("seeds_run")?,
        violations_per_property: by_prop("violations_per_property")?,
        first_violating_seed: opt_u("first_violating_seed")?,
        first_violations,
        violating_seeds: u("violating_seeds")?,
        first_seed_per_property: by_prop("first_seed_per_property")?,
        event_limit_seeds: u("event_limit_seeds")?,
        inconclusive_seeds: u("inconclusive_seeds")?,
        first_inconclusive,
        history_limit_seeds: u("history_limit_seeds")?,
        events: u("events")?,
        acquisitions: u("acquisitions")?,
        longest_overlap: pair("longest_overlap")?
            .map(|(ns, seed)| {
                ns.as_u64()
                    .map(|ns| (ns, seed))
                    .ok_or_else(|| bad("longest_overlap"))
            })
            .transpose()?,
        total_overlap_ns: u("total_overlap_ns")?,
        min_margin: pair("min_margin")?
            .map(|(ns, seed)| {
                ns.as_i64()
                    .map(|ns| (ns, seed))
                    .ok_or_else(|| bad("min_margin"))
            })
            .transpose()?,
        margin_histogram,
        witnesses,
    })
}

/// The rate figures of a `partial` object, as read.
#[derive(Default)]
struct RatesPart {
    decided: BTreeMap<Property, u64>,
    per_acquisition: BTreeMap<Property, ClusterRatio>,
    overlap: ClusterRatio,
    closest_handover: Option<(u64, u64, SimTime)>,
    min_margin_at: Option<SimTime>,
    missing: bool,
}
