//! Machine-readable forms of a run: JSON lines (docs/trace-format.md) and Chrome Trace Event
//! JSON for Perfetto / chrome://tracing. serde lives here, at the edge: core types are turned
//! into JSON values field by field.

use serde_json::{Value, json};

use crate::check::Violation;
use crate::history::episodes::{Change, Hold, HoldEnd, Holdings};
use crate::history::{Observation, Removal};
use crate::proto::Bytes;
use crate::scenario::Scenario;
use crate::sim::World;
use crate::sim::trace::{TraceKind, describe_msg};
use crate::time::{ProcId, SimTime};

fn text(b: &Bytes) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn removal(r: Removal) -> &'static str {
    match r {
        Removal::Del => "del",
        Removal::Expired => "expired",
        Removal::Overwritten => "overwritten",
        Removal::Flushed => "flushed",
    }
}

/// One observation as a JSON object: `{"type": ..., fields...}`.
pub fn observation_json(o: &Observation, name: &dyn Fn(ProcId) -> String) -> Value {
    match o {
        Observation::Attempt { lock, token } => {
            json!({"type": "attempt", "lock": lock, "token": text(token)})
        }
        Observation::Acquired {
            lock,
            token,
            fence,
            validity_ns,
            believed_until,
        } => json!({
            "type": "acquired", "lock": lock, "token": text(token), "fence": fence,
            "validity_ns": validity_ns, "believed_until_ns": believed_until.map(|t| t.0),
        }),
        Observation::Released { lock, token } => {
            json!({"type": "released", "lock": lock, "token": text(token)})
        }
        Observation::Lost {
            lock,
            token,
            reason,
        } => {
            json!({"type": "lost", "lock": lock, "token": text(token), "reason": reason})
        }
        Observation::GaveUp { lock } => json!({"type": "gave_up", "lock": lock}),
        Observation::Extended {
            lock,
            token,
            validity_ns,
            believed_until,
        } => json!({
            "type": "extended", "lock": lock, "token": text(token), "validity_ns": validity_ns,
            "believed_until_ns": believed_until.map(|t| t.0),
        }),
        Observation::ResourceRead {
            client,
            token,
            version,
            accepted,
        } => json!({
            "type": "resource_read", "client": name(*client), "token": token, "version": version, "accepted": accepted,
        }),
        Observation::ResourceWrite {
            client,
            token,
            base_version,
            accepted,
            version_after,
        } => json!({
            "type": "resource_write", "client": name(*client), "token": token, "base_version": base_version,
            "accepted": accepted, "version_after": version_after,
        }),
        Observation::KeyRemoved {
            key,
            value,
            how,
            by,
        } => json!({
            "type": "key_removed", "key": text(key), "value": text(value), "how": removal(*how),
            "by": by.map(name),
        }),
        Observation::KeyWritten {
            key,
            value,
            expire_at_ms,
            by,
        } => json!({
            "type": "key_written", "key": text(key), "value": text(value), "expire_at_ms": expire_at_ms,
            "by": by.map(name),
        }),
        Observation::Fault { what } => json!({"type": "fault", "what": what}),
        Observation::Crashed => json!({"type": "crashed"}),
        Observation::Restarted { with_data } => {
            json!({"type": "restarted", "with_data": with_data})
        }
        Observation::Paused => json!({"type": "paused"}),
        Observation::Resumed => json!({"type": "resumed"}),
        Observation::Sentinel { what } => json!({"type": "sentinel", "what": what}),
        Observation::Replication { what } => json!({"type": "replication", "what": what}),
        Observation::Note(t) => json!({"type": "note", "text": t}),
        // Not exported (see `json_lines`); named here so that the match stays total.
        Observation::Fact(_) => json!({"type": "fact"}),
    }
}

fn violation_json(v: &Violation, name: &dyn Fn(ProcId) -> String) -> Value {
    json!({
        "kind": "violation", "t_ns": v.at.0, "property": v.property.name(),
        "actors": v.actors.iter().map(|a| name(*a)).collect::<Vec<_>>(), "message": v.message,
    })
}

/// The run as JSON lines: a `run` header, then trace entries, observations and violations
/// merged in time order (at equal times: deliveries, then what they caused, then violations).
pub fn json_lines(sc: &Scenario, seed: u64, world: &World, violations: &[Violation]) -> String {
    let names = world.names();
    let name = |p: ProcId| names[p.index()].clone();
    // Rows are ordered as keys and each is made into JSON only as it is written: a long run's
    // rows held as `Value`s at once would take several times the text they print as.
    let trace_row = |e: &crate::sim::trace::TraceEntry| {
        let mut v = match &e.kind {
            TraceKind::Start => json!({"kind": "start"}),
            TraceKind::Recv { from, msg, sent_at } => {
                json!({"kind": "recv", "from": name(*from), "sent_ns": sent_at.0, "msg_kind": msg.kind(), "msg": describe_msg(msg)})
            }
            TraceKind::Timer { tag } => json!({"kind": "timer", "tag": tag}),
            TraceKind::Dropped {
                from,
                msg,
                reason,
                sent_at,
            } => json!({
                "kind": "dropped", "from": name(*from), "sent_ns": sent_at.0, "reason": reason.as_str(), "msg_kind": msg.kind(),
                "msg": describe_msg(msg),
            }),
            TraceKind::Fault(f) => json!({"kind": "fault", "what": f}),
            TraceKind::Parked => json!({"kind": "parked"}),
        };
        v["t_ns"] = json!(e.at.0);
        v["proc"] = json!(name(e.proc));
        v["wall_ms"] = json!(e.wall_ms);
        v
    };
    let mut rows: Vec<(SimTime, u8, usize)> = Vec::new();
    rows.extend(
        world
            .trace
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.at, 0, i)),
    );
    rows.extend(
        world
            .history
            .records
            .iter()
            .enumerate()
            // Facts repeat the fault and replication texts for checkers: the lines stay as
            // they were.
            .filter(|(_, r)| !matches!(r.obs, Observation::Fact(_)))
            .map(|(i, r)| (r.at, 1, i)),
    );
    rows.extend(violations.iter().enumerate().map(|(i, v)| (v.at, 2, i)));
    rows.sort_unstable();
    let header = json!({
        "kind": "run", "format": 1, "model": sc.name, "path": sc.path, "seed": seed,
        "epoch_unix_ms": sc.epoch_unix_ms, "end_ns": world.now().0,
        "procs": names,
    });
    let mut out = header.to_string();
    out.push('\n');
    for (_, k, i) in rows {
        let v = match k {
            0 => trace_row(&world.trace.entries[i]),
            1 => {
                let r = &world.history.records[i];
                json!({"kind": "obs", "t_ns": r.at.0, "proc": name(r.proc), "obs": observation_json(&r.obs, &name)})
            }
            _ => violation_json(&violations[i], &name),
        };
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

fn role(sc: &Scenario, i: usize) -> &'static str {
    use crate::scenario::ProcKind;
    match sc.procs[i].1 {
        ProcKind::Redis => "redis",
        ProcKind::Resource => "resource",
        ProcKind::Client => "client",
        ProcKind::Sentinel => "sentinel",
        ProcKind::Consensus => "consensus",
    }
}

fn us(t: SimTime) -> f64 {
    t.0 as f64 / 1_000.0
}

/// A hold's complete event's arguments: what its `Acquired` said.
fn hold_args(hold: &Hold) -> Value {
    json!({"token": text(&hold.token), "fence": hold.fence, "validity_ns": hold.validity_ns,
           "believed_until_us": hold.believed_until.map(us)})
}

/// Chrome Trace Event JSON: one process per actor (named after it, its thread named after its
/// role), lock holds and key lifetimes as complete events, faults and violations as instants.
pub fn chrome_trace(sc: &Scenario, seed: u64, world: &World, violations: &[Violation]) -> String {
    let names = world.names();
    let mut ev = Events::default();
    for (i, n) in names.iter().enumerate() {
        ev.push(
            json!({"ph": "M", "name": "process_name", "pid": i, "tid": 0, "args": {"name": n}}),
        );
        ev.push(json!({"ph": "M", "name": "thread_name", "pid": i, "tid": 0, "args": {"name": role(sc, i)}}));
        ev.push(json!({"ph": "M", "name": "process_sort_index", "pid": i, "tid": 0, "args": {"sort_index": i}}));
    }
    let end = world.now();
    let mut holdings = Holdings::default();
    let mut keys: Vec<(usize, Bytes, Bytes, SimTime)> = Vec::new();
    let close =
        |ev: &mut Events, pid: usize, name: String, start: SimTime, stop: SimTime, args: Value| {
            ev.push(json!({
                "ph": "X", "name": name, "cat": "lock", "pid": pid, "tid": 0,
                "ts": us(start), "dur": us(SimTime(stop.0.saturating_sub(start.0))), "args": args,
            }));
        };
    for r in &world.history.records {
        let pid = r.proc.index();
        match &r.obs {
            Observation::Acquired { .. }
            | Observation::Released { .. }
            | Observation::Lost { .. }
            | Observation::Crashed => holdings.observe(r, |c| {
                let Change::Ended { hold, at, how } = c else {
                    return;
                };
                let args = hold_args(&hold);
                let name = match how {
                    HoldEnd::Crashed => format!("holds {} (crashed)", text(&hold.token)),
                    HoldEnd::Released | HoldEnd::Lost(_) => format!("holds {}", text(&hold.token)),
                };
                close(&mut ev, hold.client.index(), name, hold.since, at, args);
            }),
            Observation::KeyWritten { key, .. } | Observation::KeyRemoved { key, .. } => {
                // A write ends the key's previous value; a removal ends the key.
                if let Some(i) = keys.iter().position(|(p, k, _, _)| *p == pid && k == key) {
                    let (_, k, v, start) = keys.swap_remove(i);
                    let args = match &r.obs {
                        Observation::KeyRemoved { how, .. } => json!({"ended": removal(*how)}),
                        _ => json!({}),
                    };
                    let name = format!("{} = {}", text(&k), text(&v));
                    close(&mut ev, pid, name, start, r.at, args);
                }
                if let Observation::KeyWritten { value, .. } = &r.obs {
                    keys.push((pid, key.clone(), value.clone(), r.at));
                }
            }
            Observation::Fault { what } => {
                ev.push(
                    json!({"ph": "i", "s": "p", "name": format!("FAULT {what}"), "cat": "fault",
                               "pid": pid, "tid": 0, "ts": us(r.at)}),
                );
            }
            Observation::Sentinel { what } | Observation::Replication { what } => {
                ev.push(json!({"ph": "i", "s": "t", "name": what, "cat": "redis", "pid": pid, "tid": 0, "ts": us(r.at)}));
            }
            _ => {}
        }
    }
    for hold in holdings.open() {
        close(
            &mut ev,
            hold.client.index(),
            format!("holds {} (until the end)", text(&hold.token)),
            hold.since,
            end,
            hold_args(hold),
        );
    }
    for (pid, k, v, start) in keys {
        close(
            &mut ev,
            pid,
            format!("{} = {}", text(&k), text(&v)),
            start,
            end,
            json!({}),
        );
    }
    for v in violations {
        ev.push(json!({"ph": "i", "s": "g", "name": format!("VIOLATION {}", v.property), "cat": "violation",
                       "pid": v.actors.first().map_or(0, |a| a.index()), "tid": 0, "ts": us(v.at),
                       "args": {"message": v.message}}));
    }
    // The object serde_json would print (keys in order), with the events already text.
    let other = json!({"model": sc.name, "seed": seed, "replay": sc.replay_command(seed)});
    let mut out = format!("{{\"displayTimeUnit\":\"ms\",\"otherData\":{other},\"traceEvents\":[");
    for (i, e) in ev.0.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(e);
    }
    out.push_str("]}");
    out
}

/// Chrome events, each kept as its JSON text: a long run's events held as `Value`s would
/// take several times the text they print as.
#[derive(Default)]
struct Events(Vec<String>);

impl Events {
    fn push(&mut self, v: Value) {
        self.0.push(v.to_string());
    }
}

/// Checks a Chrome trace against the Trace Event format's requirements for the event types it
/// uses; `Err` names the first offending event.
pub fn validate_chrome_trace(text: &str) -> Result<usize, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let events = v
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or("no traceEvents array")?;
    for (i, e) in events.iter().enumerate() {
        let bad = |what: &str| Err(format!("event {i}: {what}: {e}"));
        let Some(ph) = e.get("ph").and_then(Value::as_str) else {
            return bad("no ph");
        };
        if e.get("pid").and_then(Value::as_u64).is_none()
            || e.get("tid").and_then(Value::as_u64).is_none()
        {
            return bad("pid/tid must be integers");
        }
        if e.get("name").and_then(Value::as_str).is_none() {
            return bad("no name");
        }
        match ph {
            "M" => {
                if e.get("args").and_then(|a| a.as_object()).is_none() {
                    return bad("metadata without args");
                }
            }
            "X" => {
                let ts = e.get("ts").and_then(Value::as_f64);
                let dur = e.get("dur").and_then(Value::as_f64);
                if !matches!((ts, dur), (Some(t), Some(d)) if t >= 0.0 && d >= 0.0) {
                    return bad("complete event needs ts >= 0 and dur >= 0");
                }
            }
            "i" => {
                if !e
                    .get("ts")
                    .and_then(Value::as_f64)
                    .is_some_and(|t| t >= 0.0)
                {
                    return bad("instant needs ts >= 0");
                }
                if !matches!(e.get("s").and_then(Value::as_str), Some("g" | "p" | "t")) {
                    return bad("instant scope must be g, p or t");
                }
            }
            other => return bad(&format!("unexpected phase {other}")),
        }
    }
    Ok(events.len())
}
