//! The run as a sequence of steps for the page's stepper: one step per observation (and one
//! per violation), each with one plain sentence and the state after it — what every Redis
//! node stores and what its clock reads, what every client believes, the resource's version
//! and highest token. Computed here, once, from the same history the checkers judged; the
//! page only applies what this module wrote (it never re-derives state in JavaScript).
//!
//! Size: a step carries only what it changed (a delta of whole node / client records), and
//! a full snapshot is written every `FRAME_EVERY` steps, so the page reaches any step by
//! applying at most that many deltas. A run past `MAX_STEPS` is cut there, and says so.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::check::Violation;
use crate::check::margin::removal_margin_ns;
use crate::history::episodes::Holdings;
use crate::history::{Fact, Observation, Removal};
use crate::proto::Bytes;
use crate::scenario::{ProcKind, Scenario};
use crate::sim::World;
use crate::time::{NS_PER_MS, ProcId, SimTime, fmt_duration_ns, fmt_signed_ns};

/// A full snapshot every this many steps: reaching a step costs at most this many deltas.
pub const FRAME_EVERY: usize = 200;
/// Steps embedded at most (the busiest catalogue model has ~13 000; a day-long run would
/// make a page no browser opens).
pub const MAX_STEPS: usize = 60_000;

/// Why a step is worth stopping at ("next notable" stops there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notable {
    /// The set-up before the story starts, folded into one step.
    Setup,
    Acquire,
    Expiry,
    Fault,
    Violation,
}

impl Notable {
    fn code(self) -> &'static str {
        match self {
            Notable::Setup => "setup",
            Notable::Acquire => "acquire",
            Notable::Expiry => "expiry",
            Notable::Fault => "fault",
            Notable::Violation => "violation",
        }
    }
}

/// One step: when, whose, why it is notable, the sentence.
#[derive(Clone, Debug)]
pub struct Step {
    pub at: SimTime,
    pub proc: usize,
    pub notable: Option<Notable>,
    pub sentence: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct NodeState {
    role: String,
    down: bool,
    /// key -> (value, expiry in ms of the node's wall clock since the run's epoch)
    keys: BTreeMap<String, (String, Option<i64>)>,
}

#[derive(Clone, Debug, PartialEq)]
struct HoldState {
    lock: String,
    token: String,
    fence: Option<u64>,
    /// The end of its belief in true time, and as its own wall clock reads then (ms since
    /// the run's epoch): the client measures on its clock.
    until_ns: Option<u64>,
    until_own_ms: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct ClientState {
    trying: bool,
    paused: bool,
    down: bool,
    holds: Vec<HoldState>,
}

#[derive(Clone, Debug, Default, PartialEq)]
struct ResourceState {
    /// `None`: the run does not know the resource's versions (a recorded log without them).
    version: Option<u64>,
    highest_token: Option<u64>,
    last: String,
}

struct State {
    nodes: BTreeMap<usize, NodeState>,
    clients: BTreeMap<usize, ClientState>,
    resource: Option<ResourceState>,
    /// Wall clock minus true time, ms, per client and node.
    offsets: BTreeMap<usize, i64>,
}

fn node_json(n: &NodeState) -> Value {
    let keys: Map<String, Value> = n
        .keys
        .iter()
        .map(|(k, (v, e))| (k.clone(), json!([v, e])))
        .collect();
    json!({"role": n.role, "down": n.down, "keys": keys})
}

fn client_json(c: &ClientState) -> Value {
    let holds: Vec<Value> = c
        .holds
        .iter()
        .map(|h| {
            json!({"lock": h.lock, "token": h.token, "fence": h.fence,
                   "until": h.until_ns, "until_own": h.until_own_ms})
        })
        .collect();
    json!({"trying": c.trying, "paused": c.paused, "down": c.down, "holds": holds})
}

fn resource_json(r: &ResourceState) -> Value {
    json!({"version": r.version, "highest": r.highest_token, "last": r.last})
}

impl State {
    fn snapshot(&self) -> Value {
        let n: Map<String, Value> = self
            .nodes
            .iter()
            .map(|(i, s)| (i.to_string(), node_json(s)))
            .collect();
        let c: Map<String, Value> = self
            .clients
            .iter()
            .map(|(i, s)| (i.to_string(), client_json(s)))
            .collect();
        let w: Map<String, Value> = self
            .offsets
            .iter()
            .map(|(i, o)| (i.to_string(), json!(o)))
            .collect();
        json!({"n": n, "c": c, "r": self.resource.as_ref().map(resource_json), "w": w})
    }
}

fn text(b: &Bytes) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A wall reading (ms since the epoch) as `+43.215 s`.
fn wall_secs(ms: i64) -> String {
    let sign = if ms < 0 { "−" } else { "+" };
    let a = ms.unsigned_abs();
    format!("{sign}{}.{:03} s", a / 1000, a % 1000)
}

/// The steps of a run and their state, as the JSON the page embeds. Each of `said` (a
/// fault's opening instant and a sentence about it: its counterfactual) is added to the first
/// fault step at that instant.
pub fn steps_json(
    sc: &Scenario,
    world: &World,
    violations: &[Violation],
    said: &[(SimTime, String)],
) -> String {
    steps_json_of(sc, world, violations, said, Telling::RUN)
}

/// How a world's steps are told: a simulated run's, or a recorded log's (whose holdings end
/// where check-log ended its belief, whose refusals have no known reason, and whose
/// resource versions may not be logged).
#[derive(Clone, Copy, Debug)]
pub(super) struct Telling {
    /// The resource's versions are known (false: a log that records none; reads and writes
    /// are told without versions).
    pub(super) versioned: bool,
    /// The world is a recorded log's (`view::recorded`).
    pub(super) recorded: bool,
}

impl Telling {
    pub(super) const RUN: Telling = Telling {
        versioned: true,
        recorded: false,
    };
}

/// [`steps_json`], told as `telling` says.
pub(super) fn steps_json_of(
    sc: &Scenario,
    world: &World,
    violations: &[Violation],
    said: &[(SimTime, String)],
    telling: Telling,
) -> String {
    let Built {
        mut steps,
        frames,
        deltas,
        cut,
        folded,
    } = build(sc, world, violations, telling);
    for (at, sentence) in said {
        // The fault's own step, or the folded set-up that holds it.
        let own = steps
            .iter()
            .position(|s| s.at == *at && s.notable == Some(Notable::Fault));
        let folded_here = (folded > 0 && steps.first().is_some_and(|s| s.at >= *at)).then_some(0);
        if let Some(i) = own.or(folded_here) {
            steps[i].sentence = format!("{} {sentence}", steps[i].sentence);
        }
    }
    let names = world.names();
    let kinds: Vec<&str> = sc
        .procs
        .iter()
        .map(|(_, k)| match k {
            ProcKind::Client => "client",
            ProcKind::Redis => "redis",
            ProcKind::Resource => "resource",
            ProcKind::Sentinel => "sentinel",
            ProcKind::Consensus => "consensus",
        })
        .collect();
    let list: Vec<Value> = steps
        .iter()
        .zip(deltas)
        .map(|(s, d)| {
            let mut o = Map::new();
            o.insert("t".into(), json!(s.at.0));
            o.insert("p".into(), json!(s.proc));
            if let Some(n) = s.notable {
                o.insert("k".into(), json!(n.code()));
            }
            o.insert("s".into(), json!(s.sentence));
            if !d.as_object().is_some_and(|m| m.is_empty()) {
                o.insert("d".into(), d);
            }
            Value::Object(o)
        })
        .collect();
    let v = json!({
        "names": names,
        "kinds": kinds,
        "every": FRAME_EVERY,
        "cut": cut,
        "fold": folded,
        "frames": frames,
        "steps": list,
    });
    // Safe inside <script>: no "</" can end it early.
    v.to_string().replace("</", "<\\/")
}

/// The sentences alone (tests, and the notable stops of lessons): the steps the page shows,
/// set-up folded into the first.
pub fn steps(sc: &Scenario, world: &World, violations: &[Violation]) -> Vec<Step> {
    build(sc, world, violations, Telling::RUN).steps
}

struct Built {
    steps: Vec<Step>,
    frames: Vec<Value>,
    deltas: Vec<Value>,
    cut: Option<u64>,
    /// How many steps the first one folds (0: none folded).
    folded: usize,
}

/// The steps before the story starts (`scene::story_start`), held back and then folded into
/// one: what they did in a sentence, their deltas merged. Fewer than two are not folded.
struct Fold {
    until: Option<SimTime>,
    held: Vec<(Step, Value)>,
    /// Steps folded into the first, once folded.
    folded: usize,
}

impl Fold {
    /// Whether the step at `at` is set-up, to be held back.
    fn holds(&self, at: SimTime) -> bool {
        self.until.is_some_and(|u| at < u)
    }

    /// Ends the set-up: the held steps as they go on the page (one folded step, or the one
    /// held as it was).
    fn finish(&mut self, names: &[String]) -> Vec<(Step, Value)> {
        self.until = None;
        let held = std::mem::take(&mut self.held);
        if held.len() < 2 {
            return held;
        }
        self.folded = held.len();
        let mut delta = Map::new();
        for (_, d) in &held {
            merge(&mut delta, d);
        }
        let first = held.first().map_or(SimTime::ZERO, |(s, _)| s.at);
        let last = held.last().map_or(SimTime::ZERO, |(s, _)| s.at);
        let step = Step {
            at: last,
            proc: 0,
            notable: Some(Notable::Setup),
            sentence: setup_sentence(&held, names, first, last),
        };
        vec![(step, Value::Object(delta))]
    }
}

/// Merges delta `d` into `into`: whole records of later steps replace earlier ones.
fn merge(into: &mut Map<String, Value>, d: &Value) {
    let Some(d) = d.as_object() else {
        return;
    };
    for (part, v) in d {
        match (into.get_mut(part), v.as_object()) {
            (Some(Value::Object(o)), Some(m)) if part != "r" => {
                for (k, rec) in m {
                    o.insert(k.clone(), rec.clone());
                }
            }
            _ => {
                into.insert(part.clone(), v.clone());
            }
        }
    }
}

/// What the folded set-up did: how many events, who acquired how often, and its faults in
/// their own words.
fn setup_sentence(
    held: &[(Step, Value)],
    names: &[String],
    first: SimTime,
    last: SimTime,
) -> String {
    let mut acquired: BTreeMap<usize, usize> = BTreeMap::new();
    let mut faults: Vec<&str> = Vec::new();
    for (st, _) in held {
        match st.notable {
            Some(Notable::Acquire) => *acquired.entry(st.proc).or_default() += 1,
            Some(Notable::Fault) => faults.push(st.sentence.as_str()),
            _ => {}
        }
    }
    let mut s = format!(
        "Set-up before the story starts, {} events from {first} to {last} folded into this step",
        held.len()
    );
    if !acquired.is_empty() {
        let who: Vec<String> = acquired
            .iter()
            .map(|(p, n)| match n {
                1 => format!("{} once", names[*p]),
                2 => format!("{} twice", names[*p]),
                _ => format!("{} {n} times", names[*p]),
            })
            .collect();
        s = format!("{s}: the lock is acquired by {}", who.join(", "));
    }
    s.push('.');
    if !faults.is_empty() {
        let shown: Vec<&str> = faults.iter().take(3).copied().collect();
        s = format!("{s} Its faults: {}", shown.join(" "));
        if faults.len() > 3 {
            s = format!("{s} … and {} more.", faults.len() - 3);
        }
    }
    format!("{s} Press → for the story.")
}

fn build(sc: &Scenario, world: &World, violations: &[Violation], telling: Telling) -> Built {
    let Telling {
        versioned,
        recorded,
    } = telling;
    let names = world.names();
    let epoch = sc.epoch_unix_ms;
    let lock_keys = sc.lock_keys();
    let lock_name = |l: u32| {
        lock_keys
            .get(l as usize)
            .map_or_else(|| format!("lock {l}"), |k| format!("`{}`", text(k)))
    };
    let mut st = State {
        nodes: BTreeMap::new(),
        clients: BTreeMap::new(),
        resource: None,
        offsets: BTreeMap::new(),
    };
    for (i, (_, kind)) in sc.procs.iter().enumerate() {
        match kind {
            ProcKind::Redis => {
                let spec = sc.model.nodes.iter().find(|n| n.name.0 == names[i]);
                let role = match spec.and_then(|n| n.replica_of.as_ref()) {
                    Some(m) => format!("replica of {}", m.0),
                    None => "master".to_string(),
                };
                st.nodes.insert(
                    i,
                    NodeState {
                        role,
                        ..NodeState::default()
                    },
                );
            }
            ProcKind::Client => {
                st.clients.insert(i, ClientState::default());
            }
            ProcKind::Resource => {
                st.resource = Some(ResourceState {
                    version: versioned.then_some(0),
                    ..ResourceState::default()
                })
            }
            _ => {}
        }
    }
    let watched: Vec<usize> = st.nodes.keys().chain(st.clients.keys()).copied().collect();
    let offset_ms = |p: usize, t: SimTime| -> i64 {
        let wall = world.clock(ProcId(p as u32)).wall_ms(t) - epoch;
        wall - (t.0 / NS_PER_MS) as i64
    };
    for &p in &watched {
        st.offsets.insert(p, offset_ms(p, SimTime::ZERO));
    }
    let own_ms = |p: usize, t: SimTime| world.clock(ProcId(p as u32)).wall_ms(t) - epoch;
    // A client's holds as the panel shows them: its open holds as `Holdings` pairs the
    // history, each with the belief's end in true time and on its own clock.
    let mut holdings = Holdings::default();
    let hold_states = |p: usize, holdings: &Holdings| -> Vec<HoldState> {
        holdings
            .of(ProcId(p as u32))
            .iter()
            .map(|h| HoldState {
                lock: lock_name(h.lock),
                token: text(&h.token),
                fence: h.fence,
                until_ns: h.believed_until_now.map(|u| u.0),
                until_own_ms: h.believed_until_now.map(|u| own_ms(p, u)),
            })
            .collect()
    };

    // The records that make steps, in order, with the violations after the records of
    // their instant.
    let records = &world.history.records;
    let mut vs: Vec<&Violation> = violations.iter().collect();
    vs.sort_by_key(|v| v.at);
    let mut vi = 0;

    let mut steps: Vec<Step> = Vec::new();
    let mut frames: Vec<Value> = Vec::new();
    let mut deltas: Vec<Value> = Vec::new();
    let mut cut = None;
    // The token each client's key carries, to name whose key a node holds.
    let mut owner: BTreeMap<String, usize> = BTreeMap::new();

    let mut fold = Fold {
        until: super::scene::story_start(world, violations),
        held: Vec::new(),
        folded: 0,
    };
    let mut i = 0;
    while i < records.len() || vi < vs.len() {
        if steps.len() >= MAX_STEPS {
            cut = Some(steps.last().map_or(0, |s| s.at.0));
            break;
        }
        let take_violation = vi < vs.len() && (i >= records.len() || vs[vi].at < records[i].at);
        let next_at = if take_violation {
            vs[vi].at
        } else {
            records[i].at
        };
        // The story starts: the set-up goes on the page as one step, with the state as the
        // set-up left it (before this record changes it).
        if fold.until.is_some() && !fold.holds(next_at) {
            for (step, d) in fold.finish(&names) {
                if steps.len().is_multiple_of(FRAME_EVERY) {
                    frames.push(st.snapshot());
                }
                steps.push(step);
                deltas.push(d);
            }
        }
        let mut dirty_n: Vec<usize> = Vec::new();
        let mut dirty_c: Vec<usize> = Vec::new();
        let mut dirty_r = false;
        let step = if take_violation {
            let v = vs[vi];
            vi += 1;
            Step {
                at: v.at,
                proc: v.actors.first().map_or(0, |a| a.index()),
                notable: Some(Notable::Violation),
                sentence: format!("VIOLATION of {}: {}.", v.property, v.message),
            }
        } else {
            let r = &records[i];
            i += 1;
            holdings.observe(r, |_| {});
            let p = r.proc.index();
            let at = r.at;
            let who = &names[p];
            let mut notable = None;
            let sentence = match &r.obs {
                Observation::Attempt { lock, token } => {
                    if let Some(c) = st.clients.get_mut(&p) {
                        c.trying = true;
                        dirty_c.push(p);
                    }
                    format!(
                        "{who} tries to take lock {} with token {}.",
                        lock_name(*lock),
                        text(token)
                    )
                }
                Observation::Acquired {
                    lock,
                    token,
                    fence,
                    validity_ns,
                    believed_until,
                } => {
                    notable = Some(Notable::Acquire);
                    owner.insert(text(token), p);
                    let fence = fence.map_or(String::new(), |f| format!(", fencing token {f}"));
                    let belief = match (validity_ns, believed_until.map(|u| own_ms(p, u))) {
                        (Some(v), Some(u)) => format!(
                            "it believes the lock valid for {}, until {} on its own clock",
                            fmt_duration_ns(*v),
                            wall_secs(u)
                        ),
                        _ => "it never checks for how long it holds it".to_string(),
                    };
                    if let Some(c) = st.clients.get_mut(&p) {
                        c.trying = false;
                        c.holds = hold_states(p, &holdings);
                        dirty_c.push(p);
                    }
                    format!(
                        "{who} acquires lock {} (token {}{fence}): {belief}.",
                        lock_name(*lock),
                        text(token)
                    )
                }
                Observation::Extended {
                    lock,
                    believed_until,
                    ..
                } => {
                    let until_own = believed_until.map(|u| own_ms(p, u));
                    if let Some(c) = st.clients.get_mut(&p) {
                        c.holds = hold_states(p, &holdings);
                        dirty_c.push(p);
                    }
                    match until_own {
                        Some(u) => format!(
                            "{who} extends lock {}: it now believes it holds it until {} on its own clock.",
                            lock_name(*lock),
                            wall_secs(u)
                        ),
                        None => format!("{who} extends lock {}.", lock_name(*lock)),
                    }
                }
                Observation::Released { lock, token } | Observation::Lost { lock, token, .. } => {
                    if let Some(c) = st.clients.get_mut(&p) {
                        c.holds = hold_states(p, &holdings);
                        dirty_c.push(p);
                    }
                    match &r.obs {
                        // A log's holding ends where check-log ends the belief: whether the
                        // client noticed, or stopped, the log does not say.
                        Observation::Lost { reason, .. } if recorded => format!(
                            "{who}'s belief that it holds lock {} ends: {reason}.",
                            lock_name(*lock)
                        ),
                        Observation::Lost { reason, .. } => format!(
                            "{who} learns it no longer holds lock {} ({reason}) and stops.",
                            lock_name(*lock)
                        ),
                        _ => format!(
                            "{who} is done and unlocks lock {} (token {}).",
                            lock_name(*lock),
                            text(token)
                        ),
                    }
                }
                Observation::GaveUp { lock } => {
                    if let Some(c) = st.clients.get_mut(&p) {
                        c.trying = false;
                        dirty_c.push(p);
                    }
                    format!("{who} gives up on lock {} for now.", lock_name(*lock))
                }
                Observation::ResourceRead {
                    client,
                    token,
                    version,
                    accepted,
                } => {
                    let c = &names[client.index()];
                    let tok = token.map_or(String::new(), |t| format!(" with token {t}"));
                    if let Some(res) = st.resource.as_mut() {
                        if *accepted && let Some(t) = token {
                            res.highest_token = Some(res.highest_token.map_or(*t, |h| h.max(*t)));
                        }
                        res.last = if versioned {
                            format!("{c} read v{version}")
                        } else {
                            format!("{c} read")
                        };
                        dirty_r = true;
                    }
                    if *accepted && !versioned {
                        format!("{who} serves {c} a read{tok}; {c} starts its critical section.")
                    } else if *accepted {
                        format!(
                            "{who} serves {c} a read{tok}: version {version}; {c} starts its critical section."
                        )
                    } else if recorded {
                        format!("{who} refuses {c}'s read{tok}: the log says it failed.")
                    } else {
                        format!("{who} refuses {c}'s read{tok}: a newer token has been seen.")
                    }
                }
                Observation::ResourceWrite {
                    client,
                    token,
                    base_version,
                    accepted,
                    version_after,
                } => {
                    let c = &names[client.index()];
                    let tok = token.map_or(String::new(), |t| format!(" with token {t}"));
                    if let Some(res) = st.resource.as_mut() {
                        if *accepted {
                            res.version = res.version.map(|_| *version_after);
                            if let Some(t) = token {
                                res.highest_token =
                                    Some(res.highest_token.map_or(*t, |h| h.max(*t)));
                            }
                        }
                        res.last = if *accepted && !versioned {
                            format!("{c} wrote")
                        } else if *accepted {
                            format!("{c} wrote v{version_after}")
                        } else {
                            format!("{c}'s write refused")
                        };
                        dirty_r = true;
                    }
                    if !*accepted && recorded {
                        format!(
                            "{who} refuses {c}'s write{tok}: the log says it failed (not applied)."
                        )
                    } else if !*accepted {
                        format!(
                            "{who} refuses {c}'s write{tok}: a newer token has been seen (fencing)."
                        )
                    } else if !versioned {
                        format!("{who} accepts {c}'s write{tok}.")
                    } else if *version_after != base_version + 1 {
                        format!(
                            "{who} accepts {c}'s write{tok}, based on v{base_version}, now v{version_after}."
                        )
                    } else {
                        format!(
                            "{who} accepts {c}'s write{tok}: v{base_version} becomes v{version_after}."
                        )
                    }
                }
                Observation::KeyWritten {
                    key,
                    value,
                    expire_at_ms,
                    by,
                } => {
                    if let Some(n) = st.nodes.get_mut(&p) {
                        n.keys
                            .insert(text(key), (text(value), expire_at_ms.map(|e| e - epoch)));
                        dirty_n.push(p);
                    }
                    let exp = expire_at_ms.map_or(", with no expiry".to_string(), |e| {
                        format!(", expiring at {} on {who}'s clock", wall_secs(e - epoch))
                    });
                    match by {
                        Some(b) => format!(
                            "{who} stores {} = {}{exp} (written by {}).",
                            text(key),
                            text(value),
                            names[b.index()]
                        ),
                        None => format!(
                            "{who} stores a copy of {} = {}{exp} (from its master).",
                            text(key),
                            text(value)
                        ),
                    }
                }
                Observation::KeyRemoved {
                    key,
                    value,
                    how,
                    by,
                } => {
                    let exp = st
                        .nodes
                        .get(&p)
                        .and_then(|n| n.keys.get(&text(key)))
                        .and_then(|(_, e)| *e);
                    if let Some(n) = st.nodes.get_mut(&p) {
                        n.keys.remove(&text(key));
                        dirty_n.push(p);
                    }
                    let holder = owner.get(&text(value)).copied();
                    let believer = holder.and_then(|h| {
                        st.clients.get(&h).and_then(|c| {
                            c.holds
                                .iter()
                                .find(|x| x.token == text(value))
                                .map(|x| (h, c.paused, x.until_ns, x.until_own_ms))
                        })
                    });
                    match how {
                        Removal::Expired => {
                            if lock_keys.contains(key) {
                                notable = Some(Notable::Expiry);
                            }
                            let when = exp.map_or(String::new(), |e| {
                                format!(" (its TTL ran out at {} on {who}'s clock)", wall_secs(e))
                            });
                            let after = match believer {
                                Some((h, paused, until, until_own)) => {
                                    let hn = &names[h];
                                    // The margin the timeline prints at this removal.
                                    let margin =
                                        |u: u64| fmt_signed_ns(removal_margin_ns(at, SimTime(u)));
                                    let until = match (until, until_own) {
                                        (Some(u), Some(o)) if u > at.0 => format!(
                                            ": its believed validity ends at {} on its own clock, {} from now (safety margin {})",
                                            wall_secs(o),
                                            fmt_duration_ns(u - at.0),
                                            margin(u)
                                        ),
                                        (Some(u), _) => format!(
                                            ", though its believed validity ended {} ago (safety margin {}){}",
                                            fmt_duration_ns(at.0.saturating_sub(u)),
                                            margin(u),
                                            if paused {
                                                ": paused, it cannot notice"
                                            } else {
                                                ": it has not stopped"
                                            }
                                        ),
                                        _ => String::new(),
                                    };
                                    let p = if paused { " is paused and" } else { "" };
                                    format!(
                                        ": the lock is free for anyone, but {hn}{p} still believes it holds it{until}"
                                    )
                                }
                                None => ": the lock is free".to_string(),
                            };
                            format!(
                                "{who}: key {} (token {}) expires{when}{after}.",
                                text(key),
                                text(value)
                            )
                        }
                        Removal::Del => match by {
                            Some(b) => {
                                let bn = &names[b.index()];
                                match holder {
                                    Some(h) if h != b.index() => format!(
                                        "{bn} deletes key {} on {who} — but it held {}'s token {}: {bn} just unlocked someone else's lock.",
                                        text(key),
                                        names[h],
                                        text(value)
                                    ),
                                    _ => format!(
                                        "{who} deletes key {} (token {}) for {bn}.",
                                        text(key),
                                        text(value)
                                    ),
                                }
                            }
                            None => format!(
                                "{who} deletes its copy of {} (its master's DEL).",
                                text(key)
                            ),
                        },
                        Removal::Overwritten => format!(
                            "{who}: key {} (token {}) is overwritten.",
                            text(key),
                            text(value)
                        ),
                        Removal::Flushed => format!(
                            "{who} loses key {} (token {}): restarted without its data, or resynced.",
                            text(key),
                            text(value)
                        ),
                    }
                }
                Observation::Fault { what } => {
                    // A fault the next record states (a pause, a crash) is notable there,
                    // where the sentence says what it means.
                    let told_next = records.get(i).is_some_and(|n| {
                        n.at == at
                            && n.proc == r.proc
                            && matches!(
                                n.obs,
                                Observation::Paused
                                    | Observation::Crashed
                                    | Observation::Resumed
                                    | Observation::Restarted { .. }
                            )
                    });
                    if !told_next {
                        notable = Some(Notable::Fault);
                    }
                    format!("Fault: {what}.")
                }
                Observation::Paused => {
                    notable = Some(Notable::Fault);
                    let mut s =
                        format!("{who} is paused (GC, SIGSTOP): it does nothing until it resumes");
                    if let Some(c) = st.clients.get_mut(&p) {
                        if !c.holds.is_empty() {
                            s = format!(
                                "{who} is paused (GC, SIGSTOP) inside its critical section"
                            );
                        }
                        c.paused = true;
                        dirty_c.push(p);
                        for h in &c.holds {
                            let key = st.nodes.iter().find_map(|(n, ns)| {
                                ns.keys
                                    .iter()
                                    .find(|(_, (v, _))| *v == h.token)
                                    .map(|(_, (_, e))| (*n, *e))
                            });
                            let k = match key {
                                Some((n, Some(e))) => format!(
                                    "its key expires at {} on {}'s clock, ",
                                    wall_secs(e),
                                    names[n]
                                ),
                                Some((n, None)) => {
                                    format!("its key on {} never expires, ", names[n])
                                }
                                None => String::new(),
                            };
                            s = format!(
                                "{s}: {k}but {who} still believes it holds lock {}",
                                h.lock
                            );
                            if let Some(u) = h.until_own_ms {
                                s = format!(
                                    "{s} (its believed validity ends at {} on its own clock)",
                                    wall_secs(u)
                                );
                            }
                            s = format!("{s}, and cannot notice anything while paused");
                        }
                    }
                    format!("{s}.")
                }
                Observation::Resumed => {
                    notable = Some(Notable::Fault);
                    let mut s = format!("{who} resumes");
                    if let Some(c) = st.clients.get_mut(&p) {
                        c.paused = false;
                        dirty_c.push(p);
                        for h in &c.holds {
                            let stale = h.until_ns.is_some_and(|u| u <= at.0);
                            let present = st
                                .nodes
                                .values()
                                .any(|n| n.keys.values().any(|(v, _)| *v == h.token));
                            if stale || !present {
                                s = format!(
                                    "{s} and carries on as the holder of lock {} — {}",
                                    h.lock,
                                    if present {
                                        "though its believed validity has run out"
                                    } else {
                                        "though its key is gone"
                                    }
                                );
                            } else {
                                s = format!("{s}, still holding lock {}", h.lock);
                            }
                        }
                    }
                    format!("{s}.")
                }
                Observation::Crashed => {
                    notable = Some(Notable::Fault);
                    if let Some(c) = st.clients.get_mut(&p) {
                        *c = ClientState {
                            down: true,
                            ..ClientState::default()
                        };
                        dirty_c.push(p);
                    }
                    if let Some(n) = st.nodes.get_mut(&p) {
                        n.down = true;
                        dirty_n.push(p);
                    }
                    format!("{who} crashes.")
                }
                Observation::Restarted { with_data } => {
                    notable = Some(Notable::Fault);
                    if let Some(c) = st.clients.get_mut(&p) {
                        c.down = false;
                        dirty_c.push(p);
                    }
                    if let Some(n) = st.nodes.get_mut(&p) {
                        n.down = false;
                        dirty_n.push(p);
                    }
                    if *with_data {
                        format!("{who} restarts with its data.")
                    } else {
                        format!("{who} restarts empty.")
                    }
                }
                Observation::Sentinel { what } => format!("{who}: {what}."),
                Observation::Replication { what } => {
                    if let Some(m) = what.strip_prefix("replicating from ")
                        && let Some(n) = st.nodes.get_mut(&p)
                    {
                        let master = m.split(':').next().unwrap_or(m);
                        n.role = format!("replica of {master}");
                        dirty_n.push(p);
                    }
                    format!("{who}: {what}.")
                }
                Observation::Note(what) => format!("{who}: {what}."),
                Observation::Fact(Fact::Promoted) => {
                    if let Some(n) = st.nodes.get_mut(&p) {
                        n.role = "master".into();
                        dirty_n.push(p);
                    }
                    format!("{who} is now master.")
                }
                // Told in words by the fault's own record.
                Observation::Fact(_) => continue,
            };
            Step {
                at,
                proc: p,
                notable,
                sentence,
            }
        };

        // The delta: whole records of what changed, and clocks that moved by a ms or more.
        let mut d = Map::new();
        let mut dn = Map::new();
        dirty_n.dedup();
        for n in dirty_n {
            dn.insert(n.to_string(), node_json(&st.nodes[&n]));
        }
        if !dn.is_empty() {
            d.insert("n".into(), Value::Object(dn));
        }
        let mut dc = Map::new();
        dirty_c.dedup();
        for c in dirty_c {
            dc.insert(c.to_string(), client_json(&st.clients[&c]));
        }
        if !dc.is_empty() {
            d.insert("c".into(), Value::Object(dc));
        }
        if dirty_r && let Some(r) = &st.resource {
            d.insert("r".into(), resource_json(r));
        }
        let mut dw = Map::new();
        for &p in &watched {
            let o = offset_ms(p, step.at);
            if st.offsets.get(&p) != Some(&o) {
                st.offsets.insert(p, o);
                dw.insert(p.to_string(), json!(o));
            }
        }
        if !dw.is_empty() {
            d.insert("w".into(), Value::Object(dw));
        }
        if fold.holds(step.at) {
            fold.held.push((step, Value::Object(d)));
            continue;
        }
        if steps.len().is_multiple_of(FRAME_EVERY) {
            frames.push(st.snapshot());
        }
        steps.push(step);
        deltas.push(Value::Object(d));
    }
    // A run that ended inside its set-up (no story step followed): the set-up, folded.
    for (step, d) in fold.finish(&names) {
        if steps.len().is_multiple_of(FRAME_EVERY) {
            frames.push(st.snapshot());
        }
        steps.push(step);
        deltas.push(d);
    }
    Built {
        steps,
        frames,
        deltas,
        cut,
        folded: fold.folded,
    }
}
