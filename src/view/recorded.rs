//! The page of a log recorded from a real system (`check-log FILE --format html`): the log's
//! calls turned into the history a simulated run records — attempts, holdings, extends,
//! releases, resource reads and writes — on one lane per client and per resource, and drawn
//! by the same page, chart and stepper as a replay (`report.rs`, `scene.rs`, `stepper.rs`).
//! Nothing here draws or judges: the holdings are check-log's own (`check::recorded`,
//! ended where it ended them), the violations are its certain findings, and the lanes say
//! each host's clock bound where a simulated lane says what its clock did.
//!
//! A log has no true time. Its instants are its hosts' clock readings, placed on the axis
//! as read, counted from the earliest instant any event may have had (the earliest invoke
//! less the largest bound), so that every widened interval starts at or after 0.

use crate::check::recorded::{DrawnEvent, HoldingEnd, Op, Outcome, Report, Us, Verdict};
use crate::check::{Property, Violation};
use crate::history::{Observation, Record};
use crate::process::{Cx, Process};
use crate::proto::{Bytes, Msg};
use crate::rng::{Ratio, Seed};
use crate::scenario::ProcKind;
use crate::scenario::marks::Pos;
use crate::sim::{Actor, Limits, ProcSpec, TraceMode, World};
use crate::time::{NS_PER_MS, ProcId, SimTime};

use super::report::{PageRun, html_log};
use super::scene::LogLanes;

/// A lane's process: a log's world runs nothing, it only holds the recorded history.
struct Idle;

impl Process for Idle {
    fn on_start(&mut self, _cx: &mut Cx<'_>) {}
    fn on_message(&mut self, _cx: &mut Cx<'_>, _from: ProcId, _msg: Msg) {}
    fn on_timer(&mut self, _cx: &mut Cx<'_>, _tag: u64) {}
    fn on_restart(&mut self, _keep_data: bool) {}
}

/// The lanes' and locks' names a scenario carries; its own model text is a placeholder
/// (a log has no model), patched with the log's names.
const PLACEHOLDER_MODEL: &str = r#"(
    description: "",
    duration: "1s",
    nodes: [(name: "r")],
    clients: [(name: "c", count: 2, algorithm: "set-px-cad", node: "r", ttl: "1s", hold: ("1ms", "1ms"), retry: ("1ms", "1ms"))],
    check: ["mutual_exclusion"],
)"#;

fn us_text(us: Us) -> String {
    let ns = u64::try_from(us.unsigned_abs().saturating_mul(1000)).unwrap_or(u64::MAX);
    crate::time::fmt_duration_ns(ns)
}

/// The page for a log judged with `check::recorded::judge_drawn`. `file` names the log as
/// the command was given it; `command` is the command line that judged it.
pub fn html(file: &str, command: &str, report: &Report) -> String {
    let empty = crate::check::recorded::Drawn::default();
    let drawn = report.drawn.as_ref().unwrap_or(&empty);
    let events = &drawn.events;
    let max_u = report
        .hosts
        .iter()
        .map(|h| h.uncertainty_us)
        .max()
        .unwrap_or(0);
    let origin = report.origin_us() - max_u;
    let t = |us: Us| SimTime(u64::try_from((us - origin).max(0) * 1000).unwrap_or(u64::MAX));

    // Lanes: clients in the order they first appear, then resources.
    let mut clients: Vec<&str> = Vec::new();
    let mut resources: Vec<&str> = Vec::new();
    let mut locks: Vec<&str> = Vec::new();
    for e in events {
        if !clients.contains(&e.client.as_str()) {
            clients.push(&e.client);
        }
        let list = match e.op {
            Op::Read | Op::Write => &mut resources,
            _ => &mut locks,
        };
        if !list.contains(&e.object.as_str()) {
            list.push(&e.object);
        }
    }
    let mut names: Vec<String> = clients.iter().map(|c| c.to_string()).collect();
    for r in &resources {
        let n = if clients.contains(r) {
            format!("{r} (resource)")
        } else {
            r.to_string()
        };
        names.push(n);
    }
    let client_lane = |c: &str| clients.iter().position(|x| *x == c).unwrap_or(0);
    let resource_lane =
        |r: &str| clients.len() + resources.iter().position(|x| *x == r).unwrap_or(0);
    let lock_index = |l: &str| locks.iter().position(|x| *x == l).unwrap_or(0) as u32;

    // The history: each call where check-log placed it, holdings as it judged them.
    let mut recs: Vec<Record> = Vec::new();
    let mut push = |at: SimTime, proc: usize, obs: Observation| {
        recs.push(Record {
            at,
            proc: ProcId(proc as u32),
            obs,
        })
    };
    let by_line = |line: usize| -> Option<&DrawnEvent> {
        events
            .binary_search_by_key(&line, |e| e.line)
            .ok()
            .map(|i| &events[i])
    };
    let outcome = |o: Outcome| match o {
        Outcome::Ok => "ok",
        Outcome::Fail => "fail",
        Outcome::Unknown => "unknown (timed out or the connection broke)",
    };
    for e in events {
        let c = client_lane(&e.client);
        let lock = lock_index(&e.object);
        let token = Bytes::from_slice(e.token.as_bytes());
        let until = e.believed_until_us.map(&t);
        let validity_ns = e
            .believed_until_us
            .map(|b| u64::try_from((b - e.complete_us).max(0) * 1000).unwrap_or(u64::MAX));
        match (e.op, e.result) {
            (Op::Acquire, r) => {
                push(t(e.invoke_us), c, Observation::Attempt { lock, token });
                if r != Outcome::Ok {
                    push(t(e.complete_us), c, Observation::GaveUp { lock });
                }
            }
            (Op::Extend, Outcome::Ok) => push(
                t(e.complete_us),
                c,
                Observation::Extended {
                    lock,
                    token,
                    validity_ns,
                    believed_until: until,
                },
            ),
            (Op::Extend, Outcome::Unknown) | (Op::Release, Outcome::Fail | Outcome::Unknown) => {
                push(
                    t(e.complete_us),
                    c,
                    Observation::Note(format!(
                        "its {} of lock `{}` (line {}): {}",
                        if e.op == Op::Extend {
                            "extend"
                        } else {
                            "release"
                        },
                        e.object,
                        e.line,
                        outcome(e.result)
                    )),
                )
            }
            // A failed extend and a release end a holding: said by the holding's end.
            (Op::Extend | Op::Release, _) => {}
            (Op::Read, r) => push(
                t(e.complete_us),
                resource_lane(&e.object),
                Observation::ResourceRead {
                    client: ProcId(c as u32),
                    token: e.fence,
                    version: e.read_version.unwrap_or(0),
                    accepted: r != Outcome::Fail,
                },
            ),
            (Op::Write, r) => {
                let base = e.read_version.unwrap_or(0);
                push(
                    t(e.complete_us),
                    resource_lane(&e.object),
                    Observation::ResourceWrite {
                        client: ProcId(c as u32),
                        token: e.fence,
                        base_version: base,
                        accepted: r != Outcome::Fail,
                        version_after: e.wrote_version.unwrap_or(base + 1),
                    },
                );
            }
        }
    }
    for h in &drawn.holdings {
        let Some(e) = by_line(h.line) else { continue };
        let c = client_lane(&e.client);
        let lock = lock_index(&e.object);
        let token = Bytes::from_slice(e.token.as_bytes());
        push(
            t(h.start_us),
            c,
            Observation::Acquired {
                lock,
                token: token.clone(),
                fence: None,
                validity_ns: e
                    .believed_until_us
                    .map(|b| u64::try_from((b - h.start_us).max(0) * 1000).unwrap_or(u64::MAX)),
                believed_until: e.believed_until_us.map(&t),
            },
        );
        let lost = |reason: &'static str| Observation::Lost {
            lock,
            token: token.clone(),
            reason,
        };
        let end = match h.end {
            HoldingEnd::Released => Some(Observation::Released {
                lock,
                token: token.clone(),
            }),
            HoldingEnd::ValidityRanOut => Some(lost("its believed validity ran out")),
            HoldingEnd::ExtendFailed => Some(lost("its extend failed")),
            HoldingEnd::AcquiredAgain => Some(lost("it acquired the lock again, same token")),
            HoldingEnd::LogEnd => None,
        };
        if let Some(obs) = end {
            push(t(h.end_us), c, obs);
        }
    }
    // In time order; at one instant, in the order made (a holding's end before the next
    // holding's start comes from the file's order of their calls).
    recs.sort_by_key(|r| r.at);
    let end = recs
        .iter()
        .map(|r| r.at)
        .chain(
            events
                .iter()
                .map(|e| t(e.complete_us + report.hosts[e.host].uncertainty_us)),
        )
        .max()
        .unwrap_or(SimTime::ZERO);

    // The violations: check-log's certain findings, where their last witness completed.
    let mut violations: Vec<Violation> = Vec::new();
    for f in &report.findings {
        if f.verdict != Verdict::Violated {
            continue;
        }
        let witnesses: Vec<&DrawnEvent> = f.lines.iter().filter_map(|l| by_line(*l)).collect();
        let at = witnesses
            .iter()
            .map(|e| t(e.complete_us))
            .max()
            .unwrap_or(end);
        let mut actors: Vec<ProcId> = Vec::new();
        for w in &witnesses {
            let p = ProcId(client_lane(&w.client) as u32);
            if !actors.contains(&p) {
                actors.push(p);
            }
        }
        violations.push(Violation {
            property: Property::Recorded(f.property),
            at,
            actors,
            message: f.message.clone(),
        });
    }
    violations.sort_by_key(|v| v.at);

    // Lanes' words and the uncertainty bands.
    let mut notes: Vec<String> = Vec::new();
    for c in &clients {
        let mut hosts: Vec<usize> = events
            .iter()
            .filter(|e| e.client == *c)
            .map(|e| e.host)
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        let hs: Vec<String> = hosts
            .iter()
            .map(|&h| {
                format!(
                    "{} ±{}",
                    report.hosts[h].name,
                    us_text(report.hosts[h].uncertainty_us)
                )
            })
            .collect();
        notes.push(format!("clock: {}", hs.join(", ")));
    }
    for _ in &resources {
        notes.push("its callers' clocks".to_string());
    }
    let bands = events
        .iter()
        .map(|e| {
            let u = report.hosts[e.host].uncertainty_us;
            (
                client_lane(&e.client),
                t(e.invoke_us - u),
                t(e.complete_us + u),
                format!(
                    "line {}: {}'s {} of `{}` ({}), invoked at {} and completed at {} on {}'s clock, bound ±{}: it took effect at some true instant in here",
                    e.line,
                    e.client,
                    match e.op {
                        Op::Acquire => "acquire",
                        Op::Extend => "extend",
                        Op::Release => "release",
                        Op::Read => "read",
                        Op::Write => "write",
                    },
                    e.object,
                    outcome(e.result),
                    t(e.invoke_us),
                    t(e.complete_us),
                    report.hosts[e.host].name,
                    us_text(u)
                ),
            )
        })
        .collect();
    let findings = report
        .findings
        .iter()
        .map(|f| format!("{:<17} {:<10} {}", f.property, f.verdict.name(), f.message))
        .collect();

    // The scenario: only its names are read (lanes, locks, title).
    let mut sc = crate::scenario::load_str("log", file, PLACEHOLDER_MODEL)
        .expect("the placeholder model loads");
    let base = sc.model.clients.value[0].clone();
    sc.model.clients.value = locks
        .iter()
        .map(|l| {
            let mut g = base.clone();
            g.key = Some(Pos::new(l.to_string()));
            g
        })
        .collect();
    sc.model.nodes.value.clear();
    sc.model.description = format!(
        "{} events from {} host(s), {} believed holdings, judged by check-log: {}",
        report.events,
        report.hosts.len(),
        report.holdings,
        match report.verdict() {
            Verdict::Unobserved | Verdict::Held => "held",
            Verdict::Violated => "VIOLATED, certain given the clock bounds",
            Verdict::Possible => "inconclusive, a violation is possible within the clock bounds",
        }
    );
    sc.name = file.to_string();
    sc.procs = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let kind = if i < clients.len() {
                ProcKind::Client
            } else {
                ProcKind::Resource
            };
            (n.clone(), kind)
        })
        .collect();

    // The world: one idle process per lane, the history as recorded, its end the log's.
    let procs = names
        .iter()
        .map(|n| ProcSpec {
            name: n.clone(),
            actor: Actor::Custom(Box::new(Idle)),
            clock: crate::clock::NodeClock::perfect(sc.epoch_unix_ms),
            start_at: SimTime::ZERO,
        })
        .collect();
    let mut world = World::new(
        Seed(0),
        Limits {
            max_time: end,
            max_events: 1,
        },
        crate::net::LinkSpec::new(NS_PER_MS, NS_PER_MS, Ratio::NEVER),
        procs,
        TraceMode::Off,
    );
    let _ = world.run_until(end);
    world.history.records = recs;

    let possible: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.verdict == Verdict::Possible)
        .map(|f| f.property)
        .collect();
    let versioned = events
        .iter()
        .any(|e| e.read_version.is_some() || e.wrote_version.is_some());
    let log = LogLanes {
        versioned,
        possible: (!possible.is_empty()).then(|| {
            format!(
                "possibly violated within the clock bounds: {}",
                possible.join(", ")
            )
        }),
        notes,
        bands,
        command: command.to_string(),
        findings,
        left_out: drawn.left_out,
    };
    html_log(
        &PageRun {
            name: "as logged".into(),
            note: None,
            sc: &sc,
            world: &world,
            violations: &violations,
        },
        &log,
    )
}
