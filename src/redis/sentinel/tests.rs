use std::collections::VecDeque;

use super::*;
use crate::process::Output;
use crate::rng::{Prng, Seed};

const ME: ProcId = ProcId(10);
const S1: ProcId = ProcId(11);
const S2: ProcId = ProcId(12);
const M: ProcId = ProcId(0);
const R1: ProcId = ProcId(1);
const R2: ProcId = ProcId(2);
const S: u64 = NS_PER_S;

fn config(priorities: [u32; 3]) -> SentinelConfig {
    SentinelConfig {
        sentinels: vec![ME, S1, S2],
        nodes: vec![
            (M, "m".into(), priorities[0]),
            (R1, "r1".into(), priorities[1]),
            (R2, "r2".into(), priorities[2]),
        ],
        initial_master: M,
        quorum: 2,
        down_after_ns: 5 * S,
        failover_timeout_ns: 60 * S,
        ping_period_ns: S,
    }
}

/// A Redis node as the tests play it: answers PING and ROLE when alive, obeys REPLICAOF.
#[derive(Clone, Debug)]
struct FakeNode {
    alive: bool,
    /// While not alive: its host refuses connections (a killed process) instead of
    /// staying silent (a stopped or powered-off one).
    refuses: bool,
    /// None: master.
    follows: Option<String>,
    offset: i64,
}

impl FakeNode {
    fn answer(&mut self, cmd: &Command) -> Option<Reply> {
        if !self.alive {
            return None;
        }
        Some(match cmd {
            Command::Ping(_) => Reply::Status("PONG".into()),
            Command::Role => self.role(),
            Command::ReplicaOf(target) => {
                self.follows = target
                    .as_ref()
                    .map(|(h, _)| String::from_utf8(h.to_vec()).unwrap());
                Reply::Ok
            }
            other => panic!("unexpected command {other:?}"),
        })
    }

    fn role(&self) -> Reply {
        match &self.follows {
            None => Reply::Array(vec![
                Reply::Bulk(b"master".to_vec()),
                Reply::Int(self.offset),
                Reply::Array(vec![]),
            ]),
            Some(m) => Reply::Array(vec![
                Reply::Bulk(b"slave".to_vec()),
                Reply::Bulk(m.as_bytes().to_vec()),
                Reply::Bulk(b"6379".to_vec()),
                Reply::Bulk(b"connected".to_vec()),
                Reply::Int(self.offset),
            ]),
        }
    }
}

/// How the other two sentinels answer IsMasterDown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Peers {
    /// Messages to them are lost.
    Silent,
    /// They see the master down and grant every vote asked for.
    DownAndGrant,
    /// They see the master down and have voted for S1 in whatever epoch is asked.
    DownVotedForS1,
}

/// A one-sentinel world with zero latency: every message is answered at once by the fake
/// nodes and peers, timers fire in due order.
struct Rig {
    s: Sentinel,
    prng: Prng,
    now_ns: u64,
    timers: Vec<(u64, u64)>,
    nodes: Vec<FakeNode>,
    peers: Peers,
    log: Vec<(u64, Output)>,
    /// Due time of the first tick (random phase); tick k is at `phase_ns + k s`.
    phase_ns: u64,
}

impl Rig {
    fn new(cfg: SentinelConfig, offsets: [i64; 3]) -> Rig {
        let nodes = (0..3)
            .map(|i| FakeNode {
                alive: true,
                refuses: false,
                follows: (i != 0).then(|| "m".to_string()),
                offset: offsets[i],
            })
            .collect();
        Rig {
            s: Sentinel::new(cfg),
            prng: Seed(1).stream("t", 0),
            now_ns: 0,
            timers: Vec::new(),
            nodes,
            peers: Peers::Silent,
            log: Vec::new(),
            phase_ns: 0,
        }
    }

    fn call(&mut self, f: impl FnOnce(&mut Sentinel, &mut Cx<'_>)) {
        let mut out = Vec::new();
        let mut cx = Cx::new(ME, 0, self.now_ns, &mut self.prng, &mut out);
        f(&mut self.s, &mut cx);
        self.absorb(out);
    }

    /// Records outputs, arms timers and delivers the answers of the fake world.
    fn absorb(&mut self, out: Vec<Output>) {
        let mut queue = VecDeque::new();
        for o in out {
            match &o {
                Output::Timer { after_ns, tag } => {
                    self.timers.push((self.now_ns + after_ns, *tag));
                }
                Output::Send { to, msg } => {
                    if let Some(answer) = self.answer(*to, msg) {
                        queue.push_back((*to, answer));
                    }
                }
                Output::Observe(_) => {}
            }
            self.log.push((self.now_ns, o));
        }
        while let Some((from, msg)) = queue.pop_front() {
            self.call(|s, cx| s.on_message(cx, from, msg));
        }
    }

    fn answer(&mut self, to: ProcId, msg: &Msg) -> Option<Msg> {
        match msg {
            Msg::Request { id, cmd } => {
                let node = &mut self.nodes[to.index()];
                if !node.alive && node.refuses {
                    return Some(Msg::Refused { id: *id });
                }
                let reply = node.answer(cmd)?;
                Some(Msg::Reply { id: *id, reply })
            }
            Msg::SentinelReq {
                id,
                req:
                    SentinelRequest::IsMasterDown {
                        epoch, vote_for, ..
                    },
            } => {
                let leader = match (self.peers, vote_for) {
                    (Peers::Silent, _) => return None,
                    (_, None) => None,
                    (Peers::DownAndGrant, Some(c)) => Some(*c),
                    (Peers::DownVotedForS1, Some(_)) => Some(S1),
                };
                let resp = SentinelResponse::MasterDown {
                    down: true,
                    leader,
                    leader_epoch: if leader.is_some() { *epoch } else { 0 },
                };
                Some(Msg::SentinelResp { id: *id, resp })
            }
            _ => None,
        }
    }

    fn start(&mut self) {
        self.timers.clear();
        self.call(|s, cx| s.on_start(cx));
        assert_eq!(self.timers.len(), 1, "one tick armed, nothing sent");
        self.phase_ns = self.timers[0].0;
        assert!(self.phase_ns < self.now_ns + S);
    }

    /// True time of tick `k`.
    fn t(&self, k: u64) -> u64 {
        self.phase_ns + k * S
    }

    /// Fires every timer due up to `t_ns` (in due order), then sets the clock to `t_ns`.
    fn run_until(&mut self, t_ns: u64) {
        while let Some(k) = (0..self.timers.len())
            .filter(|&k| self.timers[k].0 <= t_ns)
            .min_by_key(|&k| self.timers[k])
        {
            let (due, tag) = self.timers.remove(k);
            self.now_ns = due;
            self.call(|s, cx| s.on_timer(cx, tag));
        }
        self.now_ns = t_ns;
    }

    fn recv(&mut self, from: ProcId, msg: Msg) {
        self.call(|s, cx| s.on_message(cx, from, msg));
    }

    /// Sends a request from `from` and returns the sentinel's answer.
    fn ask(&mut self, from: ProcId, req: SentinelRequest) -> SentinelResponse {
        let mark = self.log.len();
        self.recv(from, Msg::SentinelReq { id: 7, req });
        self.log[mark..]
            .iter()
            .find_map(|(_, o)| match o {
                Output::Send {
                    to,
                    msg: Msg::SentinelResp { id: 7, resp },
                } if *to == from => Some(resp.clone()),
                _ => None,
            })
            .expect("an answer")
    }

    fn events(&self) -> Vec<(u64, String)> {
        self.log
            .iter()
            .filter_map(|(t, o)| match o {
                Output::Observe(Observation::Sentinel { what }) => Some((*t, what.clone())),
                _ => None,
            })
            .collect()
    }

    /// When the first event starting with `prefix` happened.
    fn when(&self, prefix: &str) -> Option<u64> {
        self.events()
            .into_iter()
            .find(|(_, e)| e.starts_with(prefix))
            .map(|(t, _)| t)
    }

    fn has_event(&self, what: &str) -> bool {
        self.events().iter().any(|(_, e)| e == what)
    }

    /// REPLICAOF commands sent, in order: (to, target host).
    fn replicaofs(&self) -> Vec<(u64, ProcId, Option<String>)> {
        self.log
            .iter()
            .filter_map(|(t, o)| match o {
                Output::Send {
                    to,
                    msg:
                        Msg::Request {
                            cmd: Command::ReplicaOf(target),
                            ..
                        },
                } => Some((
                    *t,
                    *to,
                    target
                        .as_ref()
                        .map(|(h, _)| String::from_utf8(h.to_vec()).unwrap()),
                )),
                _ => None,
            })
            .collect()
    }

    fn kill(&mut self, node: ProcId) {
        self.nodes[node.index()].alive = false;
    }

    /// When PINGs went to `node`, in order.
    fn pings_to(&self, node: ProcId) -> Vec<u64> {
        self.log
            .iter()
            .filter_map(|(t, o)| match o {
                Output::Send {
                    to,
                    msg:
                        Msg::Request {
                            cmd: Command::Ping(_),
                            ..
                        },
                } if *to == node => Some(*t),
                _ => None,
            })
            .collect()
    }

    /// The gaps between consecutive ticks so far.
    fn tick_gaps(&self) -> Vec<u64> {
        let ticks: Vec<u64> = self
            .log
            .iter()
            .filter_map(|(t, o)| match o {
                Output::Timer { after_ns, .. } => Some(*t + after_ns),
                _ => None,
            })
            .collect();
        ticks.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

/// The longest tick: hz 10.
const TICK_MAX_NS: u64 = 100 * NS_PER_MS;

/// Master answers until 2 s, then nothing; peers agree it is down and grant votes.
fn failover_rig(priorities: [u32; 3], offsets: [i64; 3]) -> Rig {
    let mut rig = Rig::new(config(priorities), offsets);
    rig.start();
    rig.run_until(rig.t(2));
    rig.kill(M);
    rig.peers = Peers::DownAndGrant;
    rig
}

#[test]
fn a_silent_master_is_sdown_down_after_past_its_first_unanswered_ping_checked_on_the_tick() {
    let mut rig = Rig::new(config([100, 100, 100]), [0, 0, 0]);
    rig.start();
    rig.run_until(rig.t(2));
    let kill = rig.now_ns;
    rig.kill(M);
    rig.run_until(rig.t(20));
    // The first PING after the master went silent starts the clock (act_ping_time).
    let first_unanswered = *rig.pings_to(M).iter().find(|&&t| t > kill).unwrap();
    assert!(first_unanswered <= kill + S + TICK_MAX_NS);
    let sdown = rig.when("+sdown master m").unwrap();
    assert!(
        sdown > first_unanswered + 5 * S && sdown <= first_unanswered + 5 * S + TICK_MAX_NS,
        "sdown {sdown} vs first unanswered ping {first_unanswered}"
    );
    // Replicas answering all along are never down.
    assert!(!rig.events().iter().any(|(_, e)| e.contains("sdown slave")));
    // Nobody agrees (peers silent): no ODOWN, no failover.
    assert_eq!(rig.when("+odown"), None);
    assert_eq!(rig.when("+try-failover"), None);
    // It answers again: -sdown on the tick after the next PING (pings every half second
    // while one is unanswered).
    let back = rig.now_ns;
    rig.nodes[0].alive = true;
    rig.run_until(rig.t(22));
    let up = rig.when("-sdown master m").unwrap();
    assert!(
        up > back && up <= back + S / 2 + 2 * TICK_MAX_NS,
        "{up} vs {back}"
    );
    assert_eq!(rig.s.master(), Some(M));
}

#[test]
fn the_timer_ticks_at_a_random_ten_to_nineteen_hz() {
    let mut rig = Rig::new(config([100, 100, 100]), [0, 0, 0]);
    rig.start();
    rig.run_until(rig.t(30));
    let gaps = rig.tick_gaps();
    let allowed: Vec<u64> = (10..20).map(|hz| 1000 / hz * NS_PER_MS).collect();
    assert!(gaps.iter().all(|g| allowed.contains(g)), "{gaps:?}");
    // Every rate is drawn at some point over 300+ ticks.
    for a in &allowed {
        assert!(gaps.contains(a), "{a} never drawn");
    }
}

#[test]
fn info_goes_every_ten_seconds_and_every_second_to_replicas_of_an_odown_master() {
    let mut rig = failover_rig([100, 100, 100], [0, 0, 0]);
    let roles_to = |rig: &Rig, node: ProcId, from: u64, to: u64| {
        rig.log
                .iter()
                .filter(|(t, o)| {
                    (from..to).contains(t)
                        && matches!(o, Output::Send { to: n, msg: Msg::Request { cmd: Command::Role, .. } } if *n == node)
                })
                .count()
    };
    // Before the failure: one ROLE per 10 s (plus the first at the start).
    assert_eq!(roles_to(&rig, R1, 0, rig.t(2)), 1);
    rig.run_until(rig.t(20));
    let odown = rig.when("+odown").unwrap();
    // From the ODOWN on, one a second to each replica: the first on the ODOWN's own
    // tick, the next a second after its answer.
    assert_eq!(roles_to(&rig, R2, odown, odown + 1), 1);
    assert_eq!(roles_to(&rig, R2, odown + 1, odown + S), 0);
    assert_eq!(
        roles_to(&rig, R2, odown + S, odown + S + TICK_MAX_NS + 1),
        1
    );
}
#[test]
fn quorum_then_majority_vote_promotes_the_replica_with_the_highest_offset() {
    let mut rig = failover_rig([100, 100, 100], [500, 100, 200]);
    rig.run_until(rig.t(13));
    let e: Vec<String> = rig.events().into_iter().map(|(_, e)| e).collect();
    let expect = [
        "+sdown master m",
        "+odown master m #quorum 3/2",
        "+new-epoch 1",
        "+try-failover master m",
        "+vote-for-leader sentinel#10 1",
        "+elected-leader master m",
        "+failover-state-select-slave master m",
        "+selected-slave r2 (priority 100, offset 200)",
        "+failover-state-send-slaveof-noone r2",
        "+failover-state-wait-promotion r2",
    ];
    assert_eq!(e[..expect.len()], expect);
    // One step per tick: elected, selected, REPLICAOF NO ONE on three successive ticks.
    let (elected, selected, noone) = (
        rig.when("+elected-leader").unwrap(),
        rig.when("+selected-slave").unwrap(),
        rig.when("+failover-state-wait-promotion").unwrap(),
    );
    assert!(elected < selected && selected < noone && noone <= elected + 2 * TICK_MAX_NS);
    assert_eq!(rig.replicaofs()[0], (noone, R2, None));
    // The next ROLE (1 s after the one sent at ODOWN) shows r2 as master: promoted, and
    // from then on clients are sent to r2 though the switch is still to come.
    let promoted = rig.when("+promoted-slave r2").unwrap();
    let odown = rig.when("+odown").unwrap();
    assert!(promoted > odown + S && promoted <= odown + S + 2 * TICK_MAX_NS);
    // r1 is pointed at r2 on the next tick; the failover ends once r1 reports following
    // r2 (its next ROLE, a second later), and the switch comes on that tick.
    let reconf = rig.when("+slave-reconf-sent r1").unwrap();
    assert!(reconf > promoted && reconf <= promoted + TICK_MAX_NS);
    let end = rig.when("+failover-end master m").unwrap();
    assert_eq!(rig.when("+switch-master m r2 epoch 1"), Some(end));
    assert!(end > reconf && end <= reconf + S + 2 * TICK_MAX_NS);
    assert_eq!(
        rig.replicaofs()[..2],
        [(noone, R2, None), (reconf, R1, Some("r2".into()))]
    );
    let hellos = rig
        .log
        .iter()
        .filter(|(t, o)| {
            *t == end
                && matches!(
                    o,
                    Output::Send {
                        msg: Msg::SentinelReq {
                            req: SentinelRequest::Hello {
                                master: R2,
                                config_epoch: 1
                            },
                            ..
                        },
                        ..
                    }
                )
        })
        .count();
    assert_eq!(hellos, 2);
    assert_eq!(
        rig.ask(ProcId(99), SentinelRequest::GetMaster),
        SentinelResponse::Master {
            master: Some(R2),
            config_epoch: 1
        }
    );
    assert_eq!((rig.s.master(), rig.s.config_epoch()), (Some(R2), 1));
}

#[test]
fn clients_are_sent_to_the_promoted_replica_from_its_promotion_before_the_switch() {
    let mut rig = failover_rig([100, 100, 100], [500, 100, 200]);
    rig.run_until(rig.t(3));
    let mut answers = Vec::new();
    while rig.s.master() == Some(M) && rig.now_ns < rig.t(20) {
        let t = rig.now_ns + 10 * NS_PER_MS;
        rig.run_until(t);
        answers.push((t, rig.ask(ProcId(99), SentinelRequest::GetMaster)));
    }
    let promoted = rig.when("+promoted-slave r2").unwrap();
    for (t, a) in answers {
        let want = if t < promoted {
            (Some(M), 0)
        } else {
            (Some(R2), 1)
        };
        assert_eq!(
            a,
            SentinelResponse::Master {
                master: want.0,
                config_epoch: want.1
            },
            "at {t}"
        );
    }
}
#[test]
fn a_returning_old_master_is_converted_after_it_settled() {
    let mut rig = failover_rig([100, 100, 100], [500, 100, 200]);
    rig.run_until(rig.t(12));
    assert_eq!(rig.s.master(), Some(R2));
    // The old master comes back, still believing it is master.
    let back = rig.now_ns;
    rig.nodes[0].alive = true;
    rig.run_until(rig.t(60));
    let up = rig.when("-sdown slave m").unwrap();
    assert!(up > back && up <= back + S + 2 * TICK_MAX_NS);
    // Its role is read by INFO every 10 s; converted on the first one 8 s or more after
    // it was first seen reporting master.
    let convert = rig.when("+convert-to-slave m").unwrap();
    assert!(
        convert >= back + 8 * S && convert <= back + 21 * S,
        "{convert} vs {back}"
    );
    assert_eq!(
        rig.replicaofs().last(),
        Some(&(convert, M, Some("r2".into())))
    );
    // Once it follows r2 it is left alone.
    let n = rig.replicaofs().len();
    rig.run_until(rig.t(120));
    assert_eq!(rig.replicaofs().len(), n);
}
#[test]
fn priority_comes_first_then_offset_then_name() {
    let cfg = SentinelConfig {
        nodes: vec![
            (M, "m".into(), 1),
            (R1, "r1".into(), 10),
            (R2, "r2".into(), 5),
            (ProcId(3), "r3".into(), 5),
            (ProcId(4), "r0".into(), 5),
        ],
        ..config([1, 1, 1])
    };
    let mut s = Sentinel::new(cfg);
    let now = 10 * S;
    let offsets = [0, 900, 100, 300, 300];
    for (i, v) in s.nodes.iter_mut().enumerate() {
        v.last_valid_ns = now;
        v.role_reply_ns = Some(now);
        v.role = Some(Reported::Replica {
            following: Some(0),
            offset: offsets[i],
        });
    }
    // r1 has the largest offset but the worst priority; among priority 5, r3 and r0 tie
    // on offset 300 and r0 wins by name.
    assert_eq!(s.select_replica(now), Some(4));
    s.nodes[4].sdown = true;
    assert_eq!(s.select_replica(now), Some(3));
    s.nodes[3].role = Some(Reported::Master { offset: 300 });
    assert_eq!(s.select_replica(now), Some(2));
    // A replica whose ROLE is older than five periods is not trusted.
    s.nodes[2].role_reply_ns = Some(now - 6 * S);
    assert_eq!(s.select_replica(now), Some(1));
}

#[test]
fn replica_priority_zero_is_never_selected() {
    // r2 has the best offset but priority 0.
    let mut rig = failover_rig([100, 100, 0], [500, 100, 900]);
    rig.run_until(rig.t(12));
    assert!(rig.has_event("+selected-slave r1 (priority 100, offset 100)"));
    assert_eq!(rig.s.master(), Some(R1));

    // With only priority-0 replicas the failover is abandoned.
    let mut rig = failover_rig([100, 0, 0], [500, 100, 900]);
    rig.run_until(rig.t(12));
    assert!(rig.has_event("-failover-abort-no-good-slave master m"));
    assert!(rig.replicaofs().is_empty());
    assert_eq!(rig.s.master(), Some(M));
}
#[test]
fn a_sentinel_votes_at_most_once_per_epoch() {
    let mut rig = Rig::new(config([100, 100, 100]), [0, 0, 0]);
    rig.start();
    let ask = |epoch, c| SentinelRequest::IsMasterDown {
        master: M,
        epoch,
        vote_for: Some(c),
    };
    let answer = |leader, leader_epoch| SentinelResponse::MasterDown {
        down: false,
        leader: Some(leader),
        leader_epoch,
    };
    assert_eq!(rig.ask(S1, ask(5, S1)), answer(S1, 5));
    assert_eq!(rig.ask(S2, ask(5, S2)), answer(S1, 5));
    assert_eq!(rig.ask(S1, ask(5, S1)), answer(S1, 5));
    // An older epoch gets the standing vote, a newer one a new vote.
    assert_eq!(rig.ask(S2, ask(4, S2)), answer(S1, 5));
    assert_eq!(rig.ask(S2, ask(6, S2)), answer(S2, 6));
    let votes: Vec<String> = rig
        .events()
        .into_iter()
        .map(|(_, e)| e)
        .filter(|e| e.contains("epoch") || e.contains("vote"))
        .collect();
    assert_eq!(
        votes,
        [
            "+new-epoch 5",
            "+vote-for-leader sentinel#11 5",
            "+new-epoch 6",
            "+vote-for-leader sentinel#12 6"
        ]
    );
    // A question about a node that is not its master gets no vote.
    let other = SentinelRequest::IsMasterDown {
        master: R1,
        epoch: 9,
        vote_for: Some(S1),
    };
    assert_eq!(
        rig.ask(S1, other),
        SentinelResponse::MasterDown {
            down: false,
            leader: None,
            leader_epoch: 0
        }
    );
}

#[test]
fn a_candidate_keeps_its_own_vote_in_its_epoch() {
    let mut rig = failover_rig([100, 100, 100], [0, 0, 0]);
    rig.peers = Peers::Silent;
    rig.run_until(rig.t(9));
    assert!(rig.has_event("+sdown master m"));
    // A peer agrees: ODOWN and a candidacy in epoch 1 on the next tick, with its own vote.
    rig.recv(
        S1,
        Msg::SentinelResp {
            id: rig.s.peers[1].ask.sent_id,
            resp: SentinelResponse::MasterDown {
                down: true,
                leader: None,
                leader_epoch: 0,
            },
        },
    );
    let t = rig.now_ns + TICK_MAX_NS;
    rig.run_until(t);
    assert!(rig.has_event("+vote-for-leader sentinel#10 1"));
    let req = SentinelRequest::IsMasterDown {
        master: M,
        epoch: 1,
        vote_for: Some(S2),
    };
    assert_eq!(
        rig.ask(S2, req),
        SentinelResponse::MasterDown {
            down: true,
            leader: Some(ME),
            leader_epoch: 1
        }
    );
}
#[test]
fn a_split_vote_is_abandoned_and_retried_after_twice_the_failover_timeout() {
    let mut rig = failover_rig([100, 100, 100], [0, 0, 0]);
    rig.peers = Peers::DownVotedForS1;
    rig.run_until(rig.t(10));
    let tried = rig.when("+try-failover").unwrap();
    let start_ns = rig.s.failover_start_ns.unwrap();
    assert!((tried..tried + S).contains(&start_ns), "desync below 1 s");
    // Election timeout: 10 s after the (desynchronised) start, checked on the tick.
    rig.run_until(rig.t(30));
    let abort = rig.when("-failover-abort-not-elected master m").unwrap();
    assert!(abort > start_ns + 10 * S && abort <= start_ns + 10 * S + TICK_MAX_NS);
    // Still ODOWN, but no new attempt before start + 2 × 60 s; then on the next tick.
    let retry_ns = start_ns + 120 * S;
    rig.run_until(retry_ns - 1);
    assert!(!rig.has_event("+new-epoch 2"));
    rig.run_until(retry_ns + S);
    let again = rig.when("+new-epoch 2").unwrap();
    assert!(again >= retry_ns && again <= retry_ns + TICK_MAX_NS);
    assert_eq!(rig.s.master(), Some(M));
}
#[test]
fn a_hello_with_a_higher_config_epoch_switches_the_master_and_ends_a_failover() {
    let mut rig = failover_rig([100, 100, 100], [0, 0, 0]);
    rig.peers = Peers::DownVotedForS1;
    rig.run_until(rig.t(8));
    assert!(rig.has_event("+try-failover master m"));
    let hello = |master, config_epoch| SentinelRequest::Hello {
        master,
        config_epoch,
    };
    rig.recv(
        S1,
        Msg::SentinelReq {
            id: 1,
            req: hello(R1, 1),
        },
    );
    assert_eq!((rig.s.master(), rig.s.config_epoch()), (Some(R1), 1));
    assert!(rig.has_event("+config-update-from sentinel#11"));
    assert!(rig.has_event("+switch-master m r1 epoch 1"));
    assert_eq!(rig.s.failover, Failover::Idle);
    // Older or equal epochs change nothing.
    rig.recv(
        S2,
        Msg::SentinelReq {
            id: 2,
            req: hello(R2, 1),
        },
    );
    rig.recv(
        S2,
        Msg::SentinelReq {
            id: 3,
            req: hello(M, 0),
        },
    );
    assert_eq!(
        rig.ask(ProcId(99), SentinelRequest::GetMaster),
        SentinelResponse::Master {
            master: Some(R1),
            config_epoch: 1
        }
    );
    // It never promoted anything itself.
    rig.run_until(rig.t(12));
    assert!(
        rig.replicaofs()
            .iter()
            .all(|(_, _, target)| target.is_some())
    );
}

#[test]
fn config_survives_a_restart_and_only_a_lost_disk_resets_it() {
    let mut rig = Rig::new(config([100, 100, 100]), [0, 0, 0]);
    rig.start();
    let hello = SentinelRequest::Hello {
        master: R2,
        config_epoch: 4,
    };
    rig.recv(S1, Msg::SentinelReq { id: 1, req: hello });
    rig.s.on_restart(true);
    rig.start();
    assert_eq!((rig.s.master(), rig.s.config_epoch()), (Some(R2), 4));
    rig.s.on_restart(false);
    rig.start();
    assert_eq!((rig.s.master(), rig.s.config_epoch()), (Some(M), 0));
}

#[test]
fn stale_and_foreign_replies_are_ignored() {
    let mut rig = Rig::new(config([100, 100, 100]), [0, 0, 0]);
    rig.start();
    rig.run_until(rig.t(2));
    rig.kill(M);
    rig.run_until(rig.t(9));
    assert!(rig.has_event("+sdown master m"));
    // A PING reply with an id never sent, or of another kind, does not revive it.
    let bogus = (rig.s.next_seq + 5) << KIND_BITS;
    rig.recv(
        M,
        Msg::Reply {
            id: bogus,
            reply: Reply::Status("PONG".into()),
        },
    );
    let role_id = rig.s.nodes[0].role_req.sent_id;
    rig.recv(
        M,
        Msg::Reply {
            id: role_id,
            reply: Reply::Status("PONG".into()),
        },
    );
    let t = rig.now_ns + TICK_MAX_NS;
    rig.run_until(t);
    assert_eq!(rig.when("-sdown"), None);
    // The answer to the last ping does, on the next tick.
    let ping_id = rig.s.nodes[0].ping.sent_id;
    let at = rig.now_ns;
    rig.recv(
        M,
        Msg::Reply {
            id: ping_id,
            reply: Reply::Status("PONG".into()),
        },
    );
    rig.run_until(at + TICK_MAX_NS);
    let up = rig.when("-sdown master m").unwrap();
    assert!(up > at && up <= at + TICK_MAX_NS);
}

#[test]
fn a_refused_connection_restarts_the_down_after_clock_at_the_reconnect() {
    let mut rig = Rig::new(config([100, 100, 100]), [0, 0, 0]);
    rig.start();
    rig.run_until(rig.t(3));
    // The master's process dies on a live host: its kernel resets the link at once.
    let kill = rig.now_ns;
    rig.kill(M);
    rig.nodes[0].refuses = true;
    rig.recv(M, Msg::Refused { id: 0 });
    rig.run_until(rig.t(20));
    // Reconnected on the next tick with a PING, refused again:
    // SDOWN down-after past that PING, not up to a second later as for silence.
    let reconnect = *rig.pings_to(M).iter().find(|&&t| t >= kill).unwrap();
    assert!(reconnect <= kill + TICK_MAX_NS, "{reconnect} vs {kill}");
    let sdown = rig.when("+sdown master m").unwrap();
    assert!(sdown > reconnect + 5 * S && sdown <= reconnect + 5 * S + TICK_MAX_NS);
    // While the link is down, nothing but the reconnect PING goes out, at most once a
    // second.
    let pings = rig.pings_to(M);
    let after: Vec<u64> = pings.iter().copied().filter(|&t| t >= kill).collect();
    assert!(after.windows(2).all(|w| w[1] - w[0] >= S), "{after:?}");
}
/// Three sentinels and three fake nodes over a network with 1 ms latency.
struct World {
    sentinels: Vec<Sentinel>,
    prngs: Vec<Prng>,
    nodes: Vec<FakeNode>,
    /// (due, seq) → (sentinel index, event); the seq keeps equal times in send order.
    queue: std::collections::BTreeMap<(u64, u64), (usize, WorldEvent)>,
    seq: u64,
    now_ns: u64,
    events: Vec<(u64, ProcId, String)>,
}

enum WorldEvent {
    Timer(u64),
    Deliver(ProcId, Msg),
}

const LATENCY_NS: u64 = NS_PER_MS;

impl World {
    fn new(seed: u64) -> World {
        let cfg = SentinelConfig {
            failover_timeout_ns: 30 * S,
            ..config([100, 100, 100])
        };
        let offsets = [500, 100, 200];
        let mut w = World {
            sentinels: (0..3).map(|_| Sentinel::new(cfg.clone())).collect(),
            prngs: (0..3).map(|k| Seed(seed).stream("sentinel", k)).collect(),
            nodes: (0..3)
                .map(|i| FakeNode {
                    alive: true,
                    refuses: false,
                    follows: (i != 0).then(|| "m".to_string()),
                    offset: offsets[i],
                })
                .collect(),
            queue: Default::default(),
            seq: 0,
            now_ns: 0,
            events: Vec::new(),
        };
        for k in 0..3 {
            w.call(k, |s, cx| s.on_start(cx));
        }
        w
    }

    fn push(&mut self, due_ns: u64, k: usize, ev: WorldEvent) {
        self.seq += 1;
        self.queue.insert((due_ns, self.seq), (k, ev));
    }

    fn call(&mut self, k: usize, f: impl FnOnce(&mut Sentinel, &mut Cx<'_>)) {
        let me = ProcId(10 + k as u32);
        let mut out = Vec::new();
        let mut cx = Cx::new(me, 0, self.now_ns, &mut self.prngs[k], &mut out);
        f(&mut self.sentinels[k], &mut cx);
        let now = self.now_ns;
        for o in out {
            match o {
                Output::Timer { after_ns, tag } => {
                    self.push(now + after_ns, k, WorldEvent::Timer(tag))
                }
                Output::Send { to, msg } if to.0 >= 10 => {
                    let to_k = (to.0 - 10) as usize;
                    self.push(now + LATENCY_NS, to_k, WorldEvent::Deliver(me, msg));
                }
                Output::Send {
                    to,
                    msg: Msg::Request { id, cmd },
                } => {
                    // Answered on arrival, the reply back one latency later.
                    if let Some(reply) = self.nodes[to.index()].answer(&cmd) {
                        let msg = Msg::Reply { id, reply };
                        self.push(now + 2 * LATENCY_NS, k, WorldEvent::Deliver(to, msg));
                    }
                }
                Output::Send { .. } => {}
                Output::Observe(Observation::Sentinel { what }) => {
                    self.events.push((now, me, what))
                }
                Output::Observe(_) => {}
            }
        }
    }

    fn run_until(&mut self, t_ns: u64) {
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > t_ns {
                break;
            }
            let ((due, _), (k, ev)) = entry.remove_entry();
            self.now_ns = due;
            match ev {
                WorldEvent::Timer(tag) => self.call(k, |s, cx| s.on_timer(cx, tag)),
                WorldEvent::Deliver(from, msg) => self.call(k, |s, cx| s.on_message(cx, from, msg)),
            }
        }
        self.now_ns = t_ns;
    }

    fn count(&self, prefix: &str) -> usize {
        self.events
            .iter()
            .filter(|(_, _, e)| e.starts_with(prefix))
            .count()
    }
}

#[test]
fn three_sentinels_agree_on_one_new_master_and_convert_the_old_one() {
    let mut single_candidacy = 0;
    for seed in 0..20 {
        let mut w = World::new(seed);
        w.run_until(10 * S);
        w.nodes[0].alive = false;
        w.run_until(200 * S);
        let views: Vec<_> = w
            .sentinels
            .iter()
            .map(|s| (s.master(), s.config_epoch()))
            .collect();
        assert!(
            views.iter().all(|&(m, _)| m == Some(R2)),
            "seed {seed}: {views:?}"
        );
        assert!(
            views.iter().all(|v| *v == views[0]),
            "seed {seed}: {views:?}"
        );
        assert_eq!(w.count("+promoted-slave r2"), 1, "seed {seed}");
        assert_eq!(w.nodes[1].follows.as_deref(), Some("r2"), "seed {seed}");
        if w.count("+try-failover") == 1 {
            single_candidacy += 1;
        }
        // The old master returns as a master and is turned into a replica of r2.
        w.nodes[0].alive = true;
        w.run_until(230 * S);
        assert_eq!(w.nodes[0].follows.as_deref(), Some("r2"), "seed {seed}");
        assert!(w.count("+convert-to-slave m") >= 1, "seed {seed}");
    }
    // Random tick phases keep the sentinels out of lockstep, and a candidate asks every
    // peer for its vote at once: competing candidacies are the exception. (With all
    // phases at 0 every one of these seeds splits its first vote.)
    assert!(
        single_candidacy >= 18,
        "only {single_candidacy}/20 had a single candidacy"
    );
}
