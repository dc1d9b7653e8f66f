//! A world cloned mid-run continues byte-identically to the original: same trace, same
//! history. `explore` resumes every schedule from such a clone, so a clone that drifted
//! would make its searches search something other than the model.

use std::path::Path;

use distlock_sim::clock::NodeClock;
use distlock_sim::history::Observation;
use distlock_sim::net::LinkSpec;
use distlock_sim::process::{Cx, Process};
use distlock_sim::proto::command::ScriptRef;
use distlock_sim::proto::{Bytes, Command, Msg, Script};
use distlock_sim::redis::{RedisConfig, RedisProcess};
use distlock_sim::rng::{Ratio, Seed};
use distlock_sim::scenario;
use distlock_sim::sim::{Actor, Limits, ProcSpec, TraceMode, World};
use distlock_sim::time::{NS_PER_MS, ProcId, SimTime};

/// Everything a run leaves behind, as text: the trace and every history record.
fn transcript(w: &World) -> String {
    let names = w.names();
    let mut text = w.trace.render_text(&|p| names[p.index()].clone());
    for r in &w.history.records {
        text.push_str(&format!("{} {} {:?}\n", r.at, names[r.proc.index()], r.obs));
    }
    text.push_str(&format!(
        "events {} now {} digest {:x}\n",
        w.events_handled(),
        w.now(),
        w.trace.digest()
    ));
    text
}

/// Runs `w` to `at`, clones it, runs both to the end; returns both transcripts.
fn original_and_clone(mut w: World, at: SimTime) -> (String, String) {
    assert!(
        w.run_until(at).is_none(),
        "the run ended before the clone point"
    );
    let mut copy = w.snapshot().expect("this world can be cloned");
    w.run();
    copy.run();
    (transcript(&w), transcript(&copy))
}

fn model(name: &str) -> scenario::Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("models")
        .join(format!("{name}.ron"));
    scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_catalogue_world_cloned_mid_run_continues_byte_identically() {
    // One of each actor kind: single-instance clients, Redlock, watchdog, the consensus
    // service and its clients, sentinels with replicas, the resource; random faults,
    // triggers and scripted faults in flight at the clone point.
    let models = [
        "single-px-del-pause",
        "redlock-clock-jump",
        "redlock-validity-respected",
        "watchdog-pause",
        "consensus-pause-no-fencing",
        "failover-lost-lock",
        "redlock-restart-no-fsync",
        // Redisson's hash scripts, pub/sub waiters and watchdog; redis-py's own client.
        "redisson-watchdog-stops-after-sync-error",
        "redisson-renewal-starved",
        "redis-py-lock-timeout",
        "redlock-node-using-extends",
    ];
    for name in models {
        let sc = model(name);
        for seed in [0u64, 7] {
            let (w, _) = sc.build(seed, TraceMode::Full);
            let mid = SimTime(sc.model.duration.ns() / 3);
            let (a, b) = original_and_clone(w, mid);
            assert!(a.len() > 1_000, "{name} seed {seed}: too little happened");
            assert!(a == b, "{name} seed {seed}: the clone diverged");
            // And the original is the run nobody cloned.
            let (mut fresh, _) = sc.build(seed, TraceMode::Full);
            fresh.run();
            assert!(
                transcript(&fresh) == a,
                "{name} seed {seed}: cloning changed the original"
            );
        }
    }
}

/// Sends EVALs of a script that draws from `math.random`, whose state carries over from
/// script to script inside one Lua state: the part of a node's Lua state a clone rebuilds.
#[derive(Clone)]
struct RandomScripts {
    redis: ProcId,
    next_id: u64,
    script: Script,
}

impl Process for RandomScripts {
    fn on_start(&mut self, cx: &mut Cx<'_>) {
        cx.set_timer(NS_PER_MS, 0);
    }
    fn on_message(&mut self, cx: &mut Cx<'_>, _from: ProcId, msg: Msg) {
        if let Msg::Reply { id, reply } = msg {
            cx.observe(Observation::Note(format!("#{id} -> {reply}")));
        }
    }
    fn on_timer(&mut self, cx: &mut Cx<'_>, _tag: u64) {
        self.next_id += 1;
        let cmd = Command::Eval {
            script: ScriptRef::Source(self.script.clone()),
            keys: [Bytes::from("k")].into(),
            args: [].into(),
            read_only: false,
        };
        let id = self.next_id;
        cx.send(self.redis, Msg::Request { id, cmd });
        cx.set_timer(5 * NS_PER_MS, 0);
    }
    fn on_restart(&mut self, _keep_data: bool) {}
    fn clone_box(&self) -> Option<Box<dyn Process>> {
        Some(Box::new(self.clone()))
    }
}

fn lua_world() -> World {
    let epoch = 1_700_000_000_000;
    let src = b"local r = math.random(1000000) redis.call('SET', KEYS[1], r) return r";
    let procs = vec![
        ProcSpec {
            name: "redis".into(),
            actor: Actor::Redis(Box::new(RedisProcess::new(RedisConfig::default()))),
            clock: NodeClock::new(epoch, 0, 0),
            start_at: SimTime::ZERO,
        },
        ProcSpec {
            name: "lua".into(),
            actor: Actor::Custom(Box::new(RandomScripts {
                redis: ProcId(0),
                next_id: 0,
                script: Script::new(src),
            })),
            clock: NodeClock::new(epoch, 0, 0),
            start_at: SimTime::ZERO,
        },
    ];
    let limits = Limits {
        max_time: SimTime::from_ms(200),
        max_events: 100_000,
    };
    let link = LinkSpec::new(100_000, 2 * NS_PER_MS, Ratio::new(0, 1).unwrap());
    World::new(Seed(3), limits, link, procs, TraceMode::Full)
}

#[test]
fn a_node_whose_lua_state_is_rebuilt_by_a_clone_draws_the_same_random_numbers() {
    let (a, b) = original_and_clone(lua_world(), SimTime::from_ms(100));
    let replies: std::collections::BTreeSet<&str> = a
        .lines()
        .filter_map(|l| l.split_once("-> ").map(|(_, r)| r))
        .collect();
    // Distinct replies: the scripts ran and drew different numbers (not one error text).
    assert!(replies.len() > 20, "too few scripts ran: {replies:?}");
    assert!(a == b, "the clone's scripts drew other numbers");
}

/// A custom process that cannot be copied.
struct Opaque;

impl Process for Opaque {
    fn on_start(&mut self, _cx: &mut Cx<'_>) {}
    fn on_message(&mut self, _cx: &mut Cx<'_>, _from: ProcId, _msg: Msg) {}
    fn on_timer(&mut self, _cx: &mut Cx<'_>, _tag: u64) {}
    fn on_restart(&mut self, _keep_data: bool) {}
}

#[test]
fn a_world_with_a_process_that_cannot_be_copied_has_no_snapshot() {
    let procs = vec![ProcSpec {
        name: "opaque".into(),
        actor: Actor::Custom(Box::new(Opaque)),
        clock: NodeClock::perfect(0),
        start_at: SimTime::ZERO,
    }];
    let limits = Limits {
        max_time: SimTime::from_ms(10),
        max_events: 10,
    };
    let link = LinkSpec::new(0, 0, Ratio::new(0, 1).unwrap());
    let w = World::new(Seed(0), limits, link, procs, TraceMode::Off);
    assert!(w.snapshot().is_none());
}

/// redis-py's `thread_local=False` members share one token slot; a copy of one would still
/// write the original's, so the world says it cannot be copied (explore re-simulates it).
#[test]
fn a_world_whose_clients_share_a_token_slot_has_no_snapshot() {
    let (w, _) = model("redis-py-shared-lock-object").build(0, TraceMode::Off);
    assert!(w.snapshot().is_none());
    let (w, _) = model("redis-py-thread-local-lock").build(0, TraceMode::Off);
    assert!(w.snapshot().is_some());
}

#[test]
fn a_clone_has_the_fingerprint_of_its_original_until_one_of_them_moves() {
    let sc = model("redlock-clock-jump");
    let (mut w, _) = sc.build(0, TraceMode::Off);
    assert!(w.run_until(SimTime(sc.model.duration.ns() / 2)).is_none());
    let copy = w.snapshot().unwrap();
    assert_eq!(w.fingerprint(), copy.fingerprint());
    assert!(w.fingerprint().is_some());
    w.step();
    assert_ne!(w.fingerprint(), copy.fingerprint());
}
