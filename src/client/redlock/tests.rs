use super::*;
use crate::client::{node_redlock, presets};
use crate::process::Output;
use crate::proto::command::{hex, sha1_of};
use crate::rng::Seed;

const ME: ProcId = ProcId(100);
const RESOURCE: ProcId = ProcId(200);
const START_WALL_MS: i64 = 1_700_000_000_000;
const START_MONO_NS: u64 = 5_000_000_000;
const MS: u64 = NS_PER_MS;

fn config(options: RedlockOptions) -> RedlockConfig {
    RedlockConfig {
        lock: 0,
        key: Bytes::from("lock"),
        nodes: (1..=5).map(ProcId).collect(),
        resource: None,
        hold: NsRange::fixed(5_000 * MS),
        think: NsRange::fixed(500 * MS),
        rounds: None,
        token_prefix: "c1".into(),
        options,
    }
}

fn preset(name: &str) -> RedlockOptions {
    presets::redlock(name, 10_000).unwrap()
}

#[derive(Clone, Debug)]
struct Req {
    to: ProcId,
    id: u64,
    cmd: Command,
}

/// The client under test plus a minimal loop: its own clocks (wall follows monotonic
/// except for explicit steps) and its pending timers, fired in order by `advance`.
struct Harness {
    client: RedlockClient,
    rng: Prng,
    mono_ns: u64,
    wall_step_ms: i64,
    timers: Vec<(u64, u64)>,
}

impl Harness {
    fn new(config: RedlockConfig) -> Harness {
        Harness {
            client: RedlockClient::new(config),
            rng: Seed(1).stream("t", 0),
            mono_ns: START_MONO_NS,
            wall_step_ms: 0,
            timers: Vec::new(),
        }
    }
    fn wall_ms(&self) -> i64 {
        START_WALL_MS + ((self.mono_ns - START_MONO_NS) / MS) as i64 + self.wall_step_ms
    }
    fn run(&mut self, f: impl FnOnce(&mut RedlockClient, &mut Cx<'_>)) -> Vec<Output> {
        let mut out = Vec::new();
        let wall_ms = self.wall_ms();
        let mut cx = Cx::new(ME, wall_ms, self.mono_ns, &mut self.rng, &mut out);
        f(&mut self.client, &mut cx);
        for o in &out {
            if let Output::Timer { after_ns, tag } = o {
                self.timers.push((self.mono_ns + after_ns, *tag));
            }
        }
        out
    }
    fn start(&mut self) -> Vec<Output> {
        self.run(|c, cx| c.on_start(cx))
    }
    fn reply(&mut self, req: &Req, reply: Reply) -> Vec<Output> {
        let (from, id) = (req.to, req.id);
        self.run(|c, cx| c.on_message(cx, from, Msg::Reply { id, reply }))
    }
    fn resource_ack(&mut self, id: u64, version: u64) -> Vec<Output> {
        let msg = Msg::ResourceAck {
            id,
            accepted: true,
            version,
        };
        self.run(|c, cx| c.on_message(cx, RESOURCE, msg))
    }
    /// Moves time on by `ns`, firing the timers that fall due on the way.
    fn advance(&mut self, ns: u64) -> Vec<Output> {
        let target = self.mono_ns + ns;
        let mut all = Vec::new();
        loop {
            let next = (0..self.timers.len())
                .filter(|&i| self.timers[i].0 <= target)
                .min_by_key(|&i| self.timers[i].0);
            let Some(i) = next else { break };
            let (due, tag) = self.timers.remove(i);
            // A timer overdue after a pause fires late, at the current time.
            self.mono_ns = self.mono_ns.max(due);
            all.extend(self.run(|c, cx| c.on_timer(cx, tag)));
        }
        self.mono_ns = target;
        all
    }
}

fn requests(out: &[Output]) -> Vec<Req> {
    out.iter()
        .filter_map(|o| match o {
            Output::Send {
                to,
                msg: Msg::Request { id, cmd },
            } => Some(Req {
                to: *to,
                id: *id,
                cmd: cmd.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// The observations, facts aside (`facts` has them).
fn observations(out: &[Output]) -> Vec<Observation> {
    out.iter()
        .filter_map(|o| match o {
            Output::Observe(Observation::Fact(_)) => None,
            Output::Observe(obs) => Some(obs.clone()),
            _ => None,
        })
        .collect()
}

/// The facts observed (the unlock call's start and return).
fn facts(out: &[Output]) -> Vec<Fact> {
    out.iter()
        .filter_map(|o| match o {
            Output::Observe(Observation::Fact(f)) => Some(f.clone()),
            _ => None,
        })
        .collect()
}

/// Timers other than the request timeout, as (after_ns, tag).
fn state_timers(out: &[Output]) -> Vec<(u64, u64)> {
    out.iter()
        .filter_map(|o| match o {
            Output::Timer { after_ns, tag } if *tag != Timer::Request.tag() => {
                Some((*after_ns, *tag))
            }
            _ => None,
        })
        .collect()
}

fn acquired_validity(out: &[Output]) -> Option<u64> {
    observations(out).into_iter().find_map(|o| match o {
        Observation::Acquired { validity_ns, .. } => validity_ns,
        _ => None,
    })
}

fn is_set_nx_px(cmd: &Command, token: &[u8]) -> bool {
    matches!(cmd, Command::Set { key, value, cond: Some(SetCond::Nx), get: false,
            expiry: Some(SetExpiry::Px(10_000)) } if &key[..] == b"lock" && &value[..] == token)
}

fn is_unlock(cmd: &Command, token: &[u8]) -> bool {
    matches!(cmd, Command::Eval { script: ScriptRef::Source(s), keys, args, .. }
            if &s.source[..] == UNLOCK_SRC.as_bytes() && keys.len() == 1 && &keys[0][..] == b"lock"
                && args.len() == 1 && &args[0][..] == token)
}

/// A node's yes or no to an acquire: OK or nil to `SET NX`, 1 or 0 to node-redlock's
/// acquire script.
fn grant(h: &Harness, yes: bool) -> Reply {
    match (h.client.acquire_script.is_some(), yes) {
        (true, yes) => Reply::Int(i64::from(yes)),
        (false, true) => Reply::Ok,
        (false, false) => Reply::Nil,
    }
}

/// Starts an attempt and answers it: `oks` grants then refusals, after `elapsed_ns`.
fn attempt(h: &mut Harness, oks: usize, elapsed_ns: u64) -> Vec<Output> {
    let reqs = requests(&h.start());
    h.advance(elapsed_ns);
    let mut out = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        let reply = grant(h, i < oks);
        out.extend(h.reply(r, reply));
    }
    out
}

#[test]
fn a_majority_within_the_deadline_acquires_with_validity_ttl_minus_elapsed_minus_drift() {
    // redis-docs preset: drift = 10 s · 1 % + 2 ms = 102 ms; elapsed 5.25 ms.
    let mut h = Harness::new(config(preset("redis-docs")));
    let start = h.start();
    let reqs = requests(&start);
    assert_eq!(reqs.len(), 5);
    assert!(reqs.iter().all(|r| is_set_nx_px(&r.cmd, b"c1-1")));
    assert_eq!(
        reqs.iter().map(|r| r.to).collect::<Vec<_>>(),
        (1..=5).map(ProcId).collect::<Vec<_>>()
    );
    // One timer for the whole fan-out's deadline.
    let timeouts: Vec<_> = start
        .iter()
        .filter(|o| {
            matches!(
                o,
                Output::Timer { tag, .. } if *tag == Timer::Request.tag()
            )
        })
        .collect();
    assert_eq!(timeouts.len(), 1);
    h.advance(2_500_000);
    for r in &reqs[..3] {
        assert!(acquired_validity(&h.reply(r, Reply::Ok)).is_none());
    }
    h.advance(2_750_000);
    assert!(acquired_validity(&h.reply(&reqs[3], Reply::Nil)).is_none());
    let out = h.reply(&reqs[4], Reply::Nil);
    assert_eq!(acquired_validity(&out), Some(9_892_750_000));

    // redsync: no +2 ms, so 2 ms more validity for the same elapsed time.
    let mut h = Harness::new(config(preset("redsync")));
    assert_eq!(
        acquired_validity(&attempt(&mut h, 3, 5_250_000)),
        Some(9_894_750_000)
    );

    // Two nodes never answer: decided at the 50 ms deadline, elapsed = 50 ms.
    let mut h = Harness::new(config(preset("redis-docs")));
    let reqs = requests(&h.start());
    h.advance(MS);
    for r in &reqs[..3] {
        h.reply(r, Reply::Ok);
    }
    let out = h.advance(100 * MS);
    assert_eq!(acquired_validity(&out), Some(9_848_000_000));
}

#[test]
fn redlock_rb_2_waits_200_plus_rand_50_ms_never_less_never_250() {
    // client.rb:297 `retry_delay + rand(retry_jitter)`: [200, 250) ms.
    let o = preset("redlock-rb-2");
    let mut rng = Prng::new(7, 0);
    let (mut lo, mut hi) = (u64::MAX, 0);
    for _ in 0..10_000 {
        let d = o.retry_delay_ns(&mut rng);
        assert!((200 * NS_PER_MS..250 * NS_PER_MS).contains(&d), "{d}");
        lo = lo.min(d);
        hi = hi.max(d);
    }
    // Both ends are reached, so the draw is not stuck at the fixed delay.
    assert!(lo < 201 * NS_PER_MS && hi >= 249 * NS_PER_MS, "{lo} {hi}");
}

#[test]
fn redlock_rb_2_is_monotonic_with_4_attempts_and_redlock_rb_stays_wall_clock() {
    let current = preset("redlock-rb-2");
    assert_eq!(current.clock, ElapsedClock::Monotonic);
    assert_eq!(current.retry_count, 4);
    assert_eq!(current.per_node_timeout_ms, 100);
    // (10 s · 0.01).to_i + 2 = 102 ms.
    assert_eq!(current.drift_ns(), 102 * NS_PER_MS);
    let old = preset("redlock-rb");
    assert_eq!(old.clock, ElapsedClock::Wall);
    assert_eq!(old.retry_count, 3);
    assert!(old.random_delay && !old.jitter_added_only);
}

#[test]
fn without_jitter_added_only_the_jitter_is_symmetric_as_before() {
    let o = RedlockOptions {
        retry_jitter_ms: 50,
        ..preset("redis-docs")
    };
    let o = RedlockOptions {
        random_delay: false,
        ..o
    };
    let mut rng = Prng::new(7, 0);
    let below = (0..1000)
        .map(|_| o.retry_delay_ns(&mut rng))
        .filter(|d| *d < 200 * NS_PER_MS)
        .count();
    assert!(below > 0, "a symmetric jitter draws below the delay");
}

#[test]
fn a_minority_unlocks_all_nodes_retries_after_the_delay_then_gives_up() {
    let mut h = Harness::new(config(preset("redlock-py")));
    let mut out = h.start();
    for n in 1..=3u64 {
        let token = format!("c1-{n}");
        let reqs = requests(&out);
        assert_eq!(reqs.len(), 5);
        assert!(reqs.iter().all(|r| is_set_nx_px(&r.cmd, token.as_bytes())));
        let attempts = observations(&out)
            .iter()
            .filter(|o| matches!(o, Observation::Attempt { .. }))
            .count();
        assert_eq!(attempts, usize::from(n == 1), "one Attempt per round");
        h.advance(MS);
        let mut replies = Vec::new();
        for (i, r) in reqs.iter().enumerate() {
            replies.extend(h.reply(r, if i < 2 { Reply::Ok } else { Reply::Nil }));
        }
        assert_eq!(acquired_validity(&replies), None);
        let unlocks = requests(&replies);
        assert_eq!(unlocks.len(), 5, "unlock goes to every node");
        assert!(unlocks.iter().all(|r| is_unlock(&r.cmd, token.as_bytes())));
        let gave_up = observations(&replies).contains(&Observation::GaveUp { lock: 0 });
        let timers = state_timers(&replies);
        assert_eq!(timers.len(), 1);
        if n < 3 {
            assert!(!gave_up);
            assert_eq!(timers[0].0, 200 * MS, "retry after the fixed delay");
            assert!(h.advance(199 * MS).is_empty());
            out = h.advance(MS);
        } else {
            assert!(gave_up, "GaveUp after retry_count attempts");
            assert_eq!(timers[0].0, 500 * MS, "then think");
            out = h.advance(500 * MS);
        }
    }
    // A new round: a new Attempt, with a fresh token.
    assert_eq!(
        observations(&out),
        vec![Observation::Attempt {
            lock: 0,
            token: Bytes::from("c1-4")
        }]
    );
    // Unlock replies of the failed attempts are stale: they change nothing.
    let stale = Req {
        to: ProcId(1),
        id: 1,
        cmd: Command::Ping(None),
    };
    assert!(h.reply(&stale, Reply::Int(1)).is_empty());
}

#[test]
fn a_wall_clock_stepping_back_during_the_attempt_inflates_validity() {
    // Pitfall 13: NTP steps the wall clock back 500 ms while the replies are in flight.
    let run = |clock: ElapsedClock, step_ms: i64| {
        let mut h = Harness::new(config(RedlockOptions {
            clock,
            ..preset("redis-docs")
        }));
        let reqs = requests(&h.start());
        h.advance(5 * MS);
        h.wall_step_ms = step_ms;
        let mut out = Vec::new();
        for r in &reqs {
            out.extend(h.reply(r, Reply::Ok));
        }
        acquired_validity(&out)
    };
    let mono = run(ElapsedClock::Monotonic, -500).unwrap();
    let wall = run(ElapsedClock::Wall, -500).unwrap();
    assert_eq!(mono, 9_893_000_000, "10 000 − 5 − 102 ms");
    // Wall: elapsed = 5 − 500 = −495 ms, so validity = 10 000 + 495 − 102 ms: longer
    // than the TTL itself, which no node grants.
    assert_eq!(wall, 10_393_000_000);
    assert_eq!(wall - mono, 500 * MS);
    assert!(wall > 10_000 * MS);
    // A step forward of 10 s makes the same healthy attempt fail on the wall clock only.
    assert_eq!(run(ElapsedClock::Monotonic, 10_000), Some(9_893_000_000));
    assert_eq!(run(ElapsedClock::Wall, 10_000), None);
}

#[test]
fn skipping_the_validity_check_acquires_on_a_majority_after_the_ttl_has_passed() {
    // node-redlock v5 measures on the wall clock; it stepped 11 s forward mid-attempt.
    let run = |skip: bool| {
        let mut h = Harness::new(config(RedlockOptions {
            skip_validity_check: skip,
            ..preset("node-redlock")
        }));
        let reqs = requests(&h.start());
        h.advance(5 * MS);
        h.wall_step_ms = 11_000;
        let mut out = Vec::new();
        for (i, r) in reqs.iter().enumerate() {
            let reply = grant(&h, i < 3);
            out.extend(h.reply(r, reply));
        }
        out
    };
    let out = run(true);
    assert_eq!(acquired_validity(&out), Some(0), "validity clamped at 0");
    assert!(requests(&out).is_empty(), "no unlock: it believes it holds");
    let out = run(false);
    assert_eq!(acquired_validity(&out), None);
    // v5 keeps its keys for the next attempt (node-redlock#369): no unlock, a retry timer.
    assert!(requests(&out).is_empty());
    assert_eq!(state_timers(&out).len(), 1);

    // Same on the monotonic clock, with a per-node timeout long enough for slow replies.
    let mut h = Harness::new(config(RedlockOptions {
        clock: ElapsedClock::Monotonic,
        per_node_timeout_ms: 20_000,
        ..preset("node-redlock")
    }));
    assert_eq!(acquired_validity(&attempt(&mut h, 3, 11_000 * MS)), Some(0));
}

#[test]
fn redlock_py_retries_after_a_fixed_delay_and_redlock_rb_after_a_random_one() {
    // Through the client: the retry timer is exactly 200 ms, and the stream is untouched.
    let mut h = Harness::new(config(preset("redlock-py")));
    let before = h.rng.clone();
    let out = attempt(&mut h, 2, MS);
    assert_eq!(state_timers(&out)[0].0, 200 * MS);
    assert_eq!(h.rng.next_u64(), before.clone().next_u64());

    let draws = |name: &str| {
        let o = preset(name);
        let mut rng = Seed(7).stream("t", 0);
        (0..1_000)
            .map(|_| o.retry_delay_ns(&mut rng))
            .collect::<Vec<_>>()
    };
    assert!(draws("redlock-py").iter().all(|&d| d == 200 * MS));
    let rb = draws("redlock-rb");
    assert!(rb.iter().all(|&d| d <= 200 * MS));
    assert!(rb.iter().any(|&d| d < 20 * MS) && rb.iter().any(|&d| d > 180 * MS));
    let node = draws("node-redlock");
    assert!(node.iter().all(|&d| (100 * MS..=300 * MS).contains(&d)));
    let redsync = draws("redsync");
    assert!(redsync.iter().all(|&d| (50 * MS..=250 * MS).contains(&d)));
}

/// Acquires with all 5 nodes, extend every 3 s in `mode`; returns the extend requests.
fn acquire_then_extend(h: &mut Harness) -> Vec<Req> {
    let out = attempt(h, 5, MS);
    assert!(acquired_validity(&out).is_some());
    let mut timers = state_timers(&out);
    timers.sort();
    assert_eq!(
        timers.iter().map(|t| t.0).collect::<Vec<_>>(),
        vec![3_000 * MS, 5_000 * MS],
        "extend timer, hold timer"
    );
    requests(&h.advance(3_000 * MS))
}

#[test]
fn set_if_missing_extend_is_redsyncs_one_script_on_every_node_and_counts_nonzero() {
    let mut h = Harness::new(config(RedlockOptions {
        extend: Some((3_000, ExtendMode::SetIfMissing)),
        ..preset("redis-docs")
    }));
    let reqs = acquire_then_extend(&mut h);
    assert_eq!(reqs.len(), 5);
    for r in &reqs {
        assert!(
            matches!(&r.cmd, Command::Eval { script: ScriptRef::Source(s), args, .. }
                if &s.source[..] == TOUCH_WITH_SET_NX_SRC.as_bytes() && &args[0][..] == b"c1-1"
                    && &args[1][..] == b"10000"),
            "{:?}",
            r.cmd
        );
    }
    assert_eq!(
        hex(&sha1_of(TOUCH_WITH_SET_NX_SRC.as_bytes())),
        "b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79",
        "redsync v4.17.0 scripts.go pins this SHA1"
    );
    h.advance(MS);
    // 1: extended, or set where missing (the script does both in one call); 0: another
    // client's key. Nothing more is sent: the repair happened inside the script.
    for r in &reqs[..3] {
        assert!(requests(&h.reply(r, Reply::Int(1))).is_empty());
    }
    h.advance(MS);
    h.reply(&reqs[3], Reply::Int(0));
    let out = h.reply(&reqs[4], Reply::Int(0));
    // 3 of 5; elapsed 2 ms.
    assert_eq!(
        observations(&out),
        vec![Observation::Extended {
            lock: 0,
            token: Bytes::from("c1-1"),
            validity_ns: Some(9_896_000_000),
            believed_until: None,
        }]
    );
    // The next extend is due 3 s after this one started.
    assert_eq!(state_timers(&out)[0].0, 2_998 * MS);
}

#[test]
fn a_failed_script_extend_reports_lost_and_releases_without_writing() {
    let mut cfg = config(RedlockOptions {
        extend: Some((3_000, ExtendMode::Script)),
        ..preset("redis-docs")
    });
    cfg.resource = Some(RESOURCE);
    let mut h = Harness::new(cfg);
    let out = attempt(&mut h, 5, MS);
    let read_id = out
        .iter()
        .find_map(|o| match o {
            Output::Send {
                to: RESOURCE,
                msg: Msg::ResourceRead { id, token: None },
            } => Some(*id),
            _ => None,
        })
        .unwrap();
    h.resource_ack(read_id, 7);
    let reqs = requests(&h.advance(3_000 * MS));
    assert_eq!(reqs.len(), 5);
    let mut out = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        out.extend(h.reply(r, Reply::Int(i64::from(i < 2))));
    }
    assert_eq!(
        observations(&out),
        vec![Observation::Lost {
            lock: 0,
            token: Bytes::from("c1-1"),
            reason: "extend failed",
        }]
    );
    let unlocks = requests(&out);
    assert_eq!(unlocks.len(), 5);
    assert!(unlocks.iter().all(|r| is_unlock(&r.cmd, b"c1-1")));
    // The hold timer is stale: no write follows.
    let later = h.advance(10_000 * MS);
    assert!(!later.iter().any(|o| matches!(
        o,
        Output::Send {
            msg: Msg::ResourceWrite { .. },
            ..
        }
    )));
}

#[test]
fn a_careful_caller_gives_the_lock_up_when_its_validity_runs_out() {
    // Replies after 9 s: validity 10 s − 9 s − 102 ms = 898 ms, far below the 5 s hold.
    let options = RedlockOptions {
        per_node_timeout_ms: 15_000,
        stop_at_validity: true,
        ..preset("redis-docs")
    };
    let mut h = Harness::new(config(options.clone()));
    let out = attempt(&mut h, 5, 9_000 * MS);
    assert!(matches!(
        observations(&out)[..],
        [Observation::Acquired {
            validity_ns: Some(898_000_000),
            ..
        }]
    ));
    assert!(h.advance(897 * MS).is_empty());
    let out = h.advance(MS);
    assert_eq!(
        observations(&out),
        vec![Observation::Lost {
            lock: 0,
            token: Bytes::from("c1-1"),
            reason: "validity ran out",
        }]
    );
    let unlocks = requests(&out);
    assert_eq!(unlocks.len(), 5);
    assert!(unlocks.iter().all(|r| is_unlock(&r.cmd, b"c1-1")));
    // Without the option the client works on for its whole hold (`redlock-pause-after-acquire`).
    let mut h = Harness::new(config(RedlockOptions {
        stop_at_validity: false,
        ..options
    }));
    attempt(&mut h, 5, 9_000 * MS);
    assert!(observations(&h.advance(4_000 * MS)).is_empty());
}

#[test]
fn re_set_extend_sends_set_px_without_nx() {
    let mut h = Harness::new(config(RedlockOptions {
        extend: Some((3_000, ExtendMode::ReSet)),
        ..preset("redis-docs")
    }));
    let reqs = acquire_then_extend(&mut h);
    assert!(
        reqs.iter()
            .all(|r| matches!(&r.cmd, Command::Set { cond: None,
            expiry: Some(SetExpiry::Px(10_000)), value, .. } if &value[..] == b"c1-1"))
    );
    let mut out = Vec::new();
    for r in &reqs[..3] {
        out.extend(h.reply(r, Reply::Ok));
    }
    out.extend(h.advance(100 * MS));
    assert!(matches!(
        observations(&out)[..],
        [Observation::Extended { .. }]
    ));
}

/// node-redlock#313: v5's `release()` runs `_execute` (5.0.0-beta.2 src/index.ts:350-364,
/// 438-467), so an unlock answered 0 (the key expired) is tried `retry_count` attempts
/// in all before the call returns; the generic unlock returns after one.
#[test]
fn node_redlock_v5_retries_the_release_of_an_expired_lock_and_returns_only_after_its_attempts() {
    for (name, attempts) in [
        ("node-redlock", 3),
        ("node-redlock-4", 1),
        ("redis-docs", 1),
    ] {
        let mut h = Harness::new(config(RedlockOptions {
            retry_count: 3,
            ..preset(name)
        }));
        attempt(&mut h, 5, MS);
        // The hold ends: the unlock call starts (a millisecond at a time, so that no
        // deadline passes unanswered).
        let mut out = h.advance(4_990 * MS);
        while requests(&out).is_empty() {
            out = h.advance(MS);
        }
        assert_eq!(facts(&out), vec![Fact::UnlockCalled { lock: 0 }], "{name}");
        let mut sent = 0;
        loop {
            let reqs = requests(&out);
            assert_eq!(
                reqs.len(),
                5,
                "{name}: an unlock attempt goes to every node"
            );
            sent += 1;
            let mut answered = Vec::new();
            for r in &reqs {
                // The key expired everywhere: the release script deletes nothing.
                answered.extend(h.reply(r, Reply::Int(0)));
            }
            if facts(&answered).contains(&Fact::UnlockReturned { lock: 0 }) {
                break;
            }
            assert!(requests(&answered).is_empty());
            // The retry delay (200 ± 100 ms) sends the next attempt.
            out = h.advance(99 * MS);
            while requests(&out).is_empty() {
                out = h.advance(MS);
            }
        }
        assert_eq!(sent, attempts, "{name}");
    }
}

#[test]
fn the_critical_section_reads_holds_writes_then_releases_on_all_nodes() {
    let mut cfg = config(preset("redis-docs"));
    cfg.resource = Some(RESOURCE);
    cfg.rounds = Some(1);
    let mut h = Harness::new(cfg);
    let out = attempt(&mut h, 3, MS);
    let read_id = out
        .iter()
        .find_map(|o| match o {
            Output::Send {
                msg: Msg::ResourceRead { id, .. },
                ..
            } => Some(*id),
            _ => None,
        })
        .unwrap();
    h.advance(MS);
    h.resource_ack(read_id, 41);
    // A 60 s pause (longer than the TTL) after acquiring: the write still goes out when
    // the client resumes, without any re-check of validity (`redlock-pause-after-acquire`).
    h.mono_ns += 60_000 * MS;
    let out = h.advance(0);
    let write = out.iter().find_map(|o| match o {
        Output::Send {
            msg: Msg::ResourceWrite {
                id, base_version, ..
            },
            ..
        } => Some((*id, *base_version)),
        _ => None,
    });
    let (write_id, base) = write.unwrap();
    assert_eq!(base, 41);
    let out = h.resource_ack(write_id, 42);
    assert_eq!(
        observations(&out),
        vec![Observation::Released {
            lock: 0,
            token: Bytes::from("c1-1")
        }]
    );
    let unlocks = requests(&out);
    assert!(unlocks.iter().all(|r| is_unlock(&r.cmd, b"c1-1")) && unlocks.len() == 5);
    // Three nodes answer, two never do: the deadline ends the wait, then think; one
    // round was asked for, so the client is done.
    for r in &unlocks[..3] {
        h.reply(r, Reply::Int(1));
    }
    let out = h.advance(10_000 * MS);
    assert!(requests(&out).is_empty() && observations(&out).is_empty());
    assert_eq!(h.client.phase, Phase::Done);
}

#[test]
fn replies_handled_after_the_deadline_do_not_count() {
    // The client was paused: replies sent in time are handled 60 ms after t0.
    let mut h = Harness::new(config(preset("redis-docs")));
    let reqs = requests(&h.start());
    h.mono_ns += 60 * MS;
    let mut out = Vec::new();
    for r in &reqs {
        out.extend(h.reply(r, Reply::Ok));
    }
    assert_eq!(acquired_validity(&out), None);
    assert_eq!(requests(&out).len(), 5, "unlock sent");
}

#[test]
fn a_restart_starts_a_new_round_with_a_fresh_token_and_ignores_old_replies() {
    let mut h = Harness::new(config(preset("redis-docs")));
    let old = requests(&h.start());
    h.client.on_restart(false);
    h.timers.clear();
    let out = h.start();
    assert_eq!(
        observations(&out),
        vec![Observation::Attempt {
            lock: 0,
            token: Bytes::from("c1-2")
        }]
    );
    let new = requests(&out);
    for r in &old {
        assert!(h.reply(r, Reply::Ok).is_empty());
    }
    let mut out = Vec::new();
    for r in &new {
        out.extend(h.reply(r, Reply::Ok));
    }
    assert!(acquired_validity(&out).is_some());
}

#[test]
fn presets_exist_and_validate() {
    for name in presets::REDLOCK {
        let o = preset(name);
        assert_eq!(o.validate(), Ok(()), "{name}");
        assert_eq!(o.extend, None);
    }
    assert_eq!(presets::redlock("nope", 10_000), None);
    assert_eq!(preset("redis-docs").drift_ns(), 102 * MS);
    assert_eq!(preset("redsync").drift_ns(), 100 * MS);
    assert_eq!(preset("redsync").per_node_timeout_ms, 500);
}

/// A round of `n` failed attempts (a minority each), then a won one: the outputs of the
/// win. Each attempt's replies come 1 ms after it starts.
fn win_after_failures(h: &mut Harness, failures: usize) -> Vec<Output> {
    let mut out = h.start();
    for _ in 0..failures {
        let reqs = requests(&out);
        h.advance(MS);
        let mut replies = Vec::new();
        for (i, r) in reqs.iter().enumerate() {
            let reply = grant(h, i < 2);
            replies.extend(h.reply(r, reply));
        }
        let (delay, _) = state_timers(&replies)[0];
        out = h.advance(delay);
    }
    let reqs = requests(&out);
    h.advance(MS);
    let mut replies = Vec::new();
    for r in &reqs {
        let reply = grant(h, true);
        replies.extend(h.reply(r, reply));
    }
    replies
}

#[test]
fn node_redlock_beta2_returns_a_lock_won_after_retries_already_expired_and_never_extends_it() {
    // 5.0.0-beta.2 index.ts:305, 328: expiration = start-before-retries + 2000 − 22 ms.
    // Ten failed attempts ≥ 100 ms apart: the win comes > 1 s after `start`.
    let mut cfg = config(preset("node-redlock-using"));
    cfg.options = presets::redlock("node-redlock-using", 1_000).unwrap();
    let mut h = Harness::new(cfg);
    let out = win_after_failures(&mut h, 10);
    assert_eq!(acquired_validity(&out), Some(0), "already expired");
    // queue() fires at once (1 ms); extend() throws before sending (:380-383).
    let timers = state_timers(&out);
    assert!(timers.iter().any(|t| t.0 == MS), "{timers:?}");
    let later = h.advance(MS);
    assert!(requests(&later).is_empty(), "no extend is sent");
    assert!(observations(&later).is_empty(), "the routine is not told");
    // On master the same round gets the winning attempt's validity, and an extension
    // 500 ms before it runs out.
    let mut cfg = config(preset("node-redlock-using-head"));
    cfg.options = presets::redlock("node-redlock-using-head", 1_000).unwrap();
    let mut h = Harness::new(cfg);
    let out = win_after_failures(&mut h, 10);
    let v = acquired_validity(&out).unwrap();
    assert_eq!(v, 1_000 * MS - MS - 12 * MS, "ttl − 1 ms − (10 + 2) ms");
    assert!(state_timers(&out).iter().any(|t| t.0 == v - 500 * MS));
    let ext = requests(&h.advance(v - 500 * MS));
    assert_eq!(ext.len(), 5);
    assert!(ext.iter().all(
        |r| matches!(&r.cmd, Command::Eval { script: ScriptRef::Source(s), .. }
            if &s.source[..] == node_redlock::EXTEND_5_SRC.as_bytes())
    ));
}

#[test]
fn a_using_routine_that_checks_its_signal_reports_lost_when_extension_is_impossible() {
    let mut o = presets::redlock("node-redlock-using", 1_000).unwrap();
    o.auto_extend = Some(AutoExtend {
        threshold_ms: 500,
        routine_checks_signal: true,
    });
    let mut cfg = config(o.clone());
    cfg.options = o;
    let mut h = Harness::new(cfg);
    win_after_failures(&mut h, 10);
    let out = h.advance(MS);
    assert!(matches!(
        observations(&out)[..],
        [Observation::Lost {
            reason: "extend failed",
            ..
        }]
    ));
}

#[test]
fn with_fail_fast_redsync_decides_at_a_quorum_without_waiting_for_the_rest() {
    // mutex.go:304-314: `if n >= m.quorum { return n, err }`.
    let run = |fail_fast: bool| {
        let mut h = Harness::new(config(RedlockOptions {
            fail_fast,
            ..preset("redsync")
        }));
        let reqs = requests(&h.start());
        h.advance(MS);
        let mut out = Vec::new();
        for r in &reqs[..3] {
            out.extend(h.reply(r, Reply::Ok));
        }
        acquired_validity(&out)
    };
    assert_eq!(run(true), Some(10_000 * MS - MS - 100 * MS));
    assert_eq!(run(false), None, "without it, it waits for the other two");
}

#[test]
fn redlock_py_1_0_8_raises_without_unlocking_when_a_node_errs_in_a_won_attempt() {
    // __init__.py:110-112: quorum and validity, but redis_errors: raise, no unlock.
    let mut h = Harness::new(config(preset("redlock-py-1.0.8")));
    let reqs = requests(&h.start());
    h.advance(MS);
    let mut out = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        let reply = match i {
            0..=2 => Reply::Ok,
            3 => Reply::Error("LOADING Redis is loading the dataset in memory".into()),
            _ => Reply::Nil,
        };
        out.extend(h.reply(r, reply));
    }
    assert_eq!(observations(&out), vec![Observation::GaveUp { lock: 0 }]);
    assert!(
        requests(&out).is_empty(),
        "no unlock: the three keys stay until their TTL"
    );
    // "redlock-py" (the name models use) takes the same attempt as a success.
    let mut h = Harness::new(config(preset("redlock-py")));
    let reqs = requests(&h.start());
    h.advance(MS);
    let mut out = Vec::new();
    for (i, r) in reqs.iter().enumerate() {
        let reply = match i {
            0..=2 => Reply::Ok,
            3 => Reply::Error("LOADING Redis is loading the dataset in memory".into()),
            _ => Reply::Nil,
        };
        out.extend(h.reply(r, reply));
    }
    assert!(acquired_validity(&out).is_some());
}

/// A node killed with its host up resets its connections (`Refused { id: 0 }`): the
/// request in flight to that node fails at once, as a refusal of it would; a node that
/// already answered keeps its vote.
#[test]
fn a_connection_reset_by_a_killed_node_fails_that_nodes_pending_request_only() {
    let mut h = Harness::new(config(preset("redis-docs")));
    let reqs = requests(&h.start());
    h.advance(MS);
    h.reply(&reqs[0], Reply::Ok);
    let reset = |h: &mut Harness, from: ProcId| {
        h.run(|c, cx| c.on_message(cx, from, Msg::Refused { id: 0 }))
    };
    reset(&mut h, reqs[0].to);
    reset(&mut h, reqs[1].to);
    reset(&mut h, reqs[1].to);
    assert_eq!(
        h.client.tally,
        Tally {
            pending: 3,
            yes: 1,
            no: 0,
            failed: 1
        }
    );
}

/// The tally kept beside the votes counts them as a recount does, whatever the answers:
/// OK, nil, an error, a refused connection, a stale reply, an extend's answers.
#[test]
fn the_vote_tally_counts_the_votes_after_every_answer() {
    let check = |h: &Harness, when: &str| {
        assert_eq!(h.client.tally, Tally::of(&h.client.votes), "{when}");
    };
    let mut h = Harness::new(config(RedlockOptions {
        extend: Some((3_000, ExtendMode::SetIfMissing)),
        ..preset("redis-docs")
    }));
    let reqs = requests(&h.start());
    check(&h, "sent");
    assert_eq!(h.client.tally.pending, 5);
    h.advance(MS);
    h.reply(&reqs[0], Reply::Nil);
    check(&h, "nil");
    h.reply(&reqs[1], Reply::Error("ERR x".into()));
    check(&h, "error");
    let (from, id) = (reqs[2].to, reqs[2].id);
    h.run(|c, cx| c.on_message(cx, from, Msg::Refused { id }));
    check(&h, "refused");
    h.reply(&reqs[1], Reply::Ok);
    check(&h, "a second answer from one node");
    h.reply(&reqs[3], Reply::Ok);
    check(&h, "ok");
    assert_eq!(
        h.client.tally,
        Tally {
            pending: 1,
            yes: 1,
            no: 1,
            failed: 2
        }
    );
    // The deadline decides with one vote pending: failed, retried later.
    h.advance(100 * MS);
    check(&h, "deadline");
    // A won attempt, then the extend.
    let mut h = Harness::new(config(RedlockOptions {
        extend: Some((3_000, ExtendMode::SetIfMissing)),
        ..preset("redis-docs")
    }));
    let reqs = acquire_then_extend(&mut h);
    check(&h, "extend sent");
    h.advance(MS);
    for (r, reply) in reqs
        .iter()
        .zip([Reply::Int(1), Reply::Int(0), Reply::Int(1)])
    {
        h.reply(r, reply);
        check(&h, "extend answered");
    }
    assert_eq!(
        h.client.tally,
        Tally {
            pending: 2,
            yes: 2,
            no: 1,
            failed: 0
        }
    );
}

/// `unlock_args` is written in place only when no message holds it: an unlock still in
/// flight keeps the token it was sent with when the next attempt unlocks with its own.
#[test]
fn an_unlock_in_flight_keeps_its_token_and_a_finished_one_lends_its_arguments() {
    let mut h = Harness::new(config(preset("redis-docs")));
    let fail = |h: &mut Harness, reqs: &[Req]| {
        let mut out = Vec::new();
        for r in reqs {
            out.extend(h.reply(r, Reply::Nil));
        }
        requests(&out)
    };
    // The next attempt's requests, when its retry timer fires (within 200 ms).
    let next = |h: &mut Harness| loop {
        let reqs = requests(&h.advance(MS));
        if !reqs.is_empty() {
            return reqs;
        }
    };
    let first = requests(&h.start());
    let unlocks_1 = fail(&mut h, &first);
    assert_eq!(unlocks_1.len(), 5);
    assert!(unlocks_1.iter().all(|r| is_unlock(&r.cmd, b"c1-1")));
    let second = next(&mut h);
    assert!(second.iter().all(|r| is_set_nx_px(&r.cmd, b"c1-2")));
    let args_1 = Arc::as_ptr(&h.client.unlock_args);
    let unlocks_2 = fail(&mut h, &second);
    assert_ne!(
        Arc::as_ptr(&h.client.unlock_args),
        args_1,
        "held: made afresh"
    );
    assert!(unlocks_2.iter().all(|r| is_unlock(&r.cmd, b"c1-2")));
    assert!(
        unlocks_1.iter().all(|r| is_unlock(&r.cmd, b"c1-1")),
        "the first unlocks, still held, kept their token"
    );
    // Nothing holds the arguments any more: the third unlock writes them in place.
    drop((unlocks_1, unlocks_2));
    let third = next(&mut h);
    let args_2 = Arc::as_ptr(&h.client.unlock_args);
    let unlocks_3 = fail(&mut h, &third);
    assert_eq!(
        Arc::as_ptr(&h.client.unlock_args),
        args_2,
        "written in place"
    );
    assert_eq!(unlocks_3.len(), 5);
    assert!(unlocks_3.iter().all(|r| is_unlock(&r.cmd, b"c1-3")));
}

/// Replies are matched by request id and node (node `i` got `first_id + i`): a reply
/// carrying another node's id counts for neither node.
#[test]
fn a_reply_counts_only_from_the_node_its_request_went_to() {
    let mut h = Harness::new(config(preset("redis-docs")));
    let reqs = requests(&h.start());
    h.advance(MS);
    for r in [&reqs[4], &reqs[3]] {
        assert!(acquired_validity(&h.reply(r, Reply::Ok)).is_none());
    }
    // Node 0 answers with node 2's request id: not node 2's answer, nor node 0's.
    let forged = Req {
        to: reqs[0].to,
        id: reqs[2].id,
        cmd: reqs[2].cmd.clone(),
    };
    assert!(acquired_validity(&h.reply(&forged, Reply::Ok)).is_none());
    for r in [&reqs[0], &reqs[1]] {
        assert!(
            acquired_validity(&h.reply(r, Reply::Nil)).is_none(),
            "node 2 has not answered yet"
        );
    }
    assert!(acquired_validity(&h.reply(&reqs[2], Reply::Ok)).is_some());
}

mod library_tests {
    //! The presets as shipped, each test named for what the library's source says.
    use super::*;
    use crate::client::presets;

    const MS: u64 = NS_PER_MS;

    fn preset(name: &str, ttl_ms: u64) -> RedlockOptions {
        presets::redlock(name, ttl_ms).unwrap()
    }

    #[test]
    fn redsync_defaults_are_8s_expiry_32_tries_50_to_250ms_drift_1pct_timeout_5pct() {
        // redsync.go:12-13, 32-39 at v4.17.0; with its default 8 s expiry.
        let o = preset("redsync", 8_000);
        assert_eq!(o.retry_count, 32);
        assert_eq!(
            (
                o.retry_delay_ms - o.retry_jitter_ms,
                o.retry_delay_ms + o.retry_jitter_ms
            ),
            (50, 250)
        );
        assert_eq!(o.drift_ns(), 80 * MS, "8 s · 0.01, no +2 ms (mutex.go:115)");
        assert_eq!(o.per_node_timeout_ms, 400, "8 s · 0.05 (mutex.go:107)");
        assert_eq!(o.clock, ElapsedClock::Monotonic);
        assert!(!o.fail_fast && o.extend.is_none(), "options are opt-in");
    }

    #[test]
    fn node_redlock_using_copies_beta2_early_start_and_500ms_threshold_and_head_does_not() {
        let beta = preset("node-redlock-using", 2_000);
        assert!(beta.start_before_retries);
        assert_eq!(
            beta.auto_extend,
            Some(AutoExtend {
                threshold_ms: 500,
                routine_checks_signal: false
            })
        );
        assert_eq!(
            beta.retry_count, 11,
            "retryCount 10 + 1 (index.ts:107, 434)"
        );
        assert!(beta.skip_validity_check);
        let head = preset("node-redlock-using-head", 2_000);
        assert!(!head.start_before_retries);
        assert_eq!(head.auto_extend, beta.auto_extend);
        // The plain preset keeps its meaning (acquire() only).
        let plain = preset("node-redlock", 2_000);
        assert!(!plain.start_before_retries && plain.auto_extend.is_none());
        // index.ts:693-697: duration must exceed the threshold by 100 ms.
        assert!(preset("node-redlock-using", 700).validate().is_ok());
        assert!(
            presets::redlock("node-redlock-using", 599)
                .unwrap()
                .validate()
                .is_err()
        );
    }

    #[test]
    fn redlock_py_1_0_8_raises_on_node_errors_and_redlock_py_keeps_its_meaning() {
        assert!(preset("redlock-py-1.0.8", 10_000).raise_on_node_error);
        assert!(!preset("redlock-py", 10_000).raise_on_node_error);
        let (a, b) = (
            preset("redlock-py-1.0.8", 10_000),
            preset("redlock-py", 10_000),
        );
        assert_eq!(
            RedlockOptions {
                raise_on_node_error: false,
                ..a
            },
            b
        );
    }
}
