//! W2 (Redlock sweep under faults) on a hand-written loop that keeps what distlock-sim must
//! keep: a floor under the simulator's cost, beside the bare loop `w2-bare` (the issue 16
//! yardstick), of which this is a copy with four additions, each behind a cargo feature so
//! that its cost is measured alone (see `../w1-floor` and `docs/benchmarks.md`, "The floor"):
//!
//! - `links`: each directed link draws its latency from its own named RNG stream (a fault on
//!   one link does not shift another's draws); the bare loop has FIFO order and cuts already;
//! - `procs`: each reaction of a client reads its monotonic clock, and a client's validity is
//!   measured on it (the bare loop uses true time; no drift here, so the figures are equal);
//! - `redis`: requests are Redis commands (`SET key token NX PX 10000`, the unlock script by
//!   EVAL) with byte strings and a fresh token per attempt counted up in place, replies carry
//!   the request id; the node compares the key and token as bytes (`slab`: events wait in a
//!   slab, so the heap moves 24 bytes, not a command);
//! - `checks`: client and node observations are records (time, process, what) streamed to the
//!   mutual-exclusion checker W2 runs (validity intervals of the clients' beliefs).
//!
//! With no feature this is `w2-bare` (same draws, same events).
//!
//! The bare loop's own description follows.
//!
//! Workload W2 (times virtual, integer ns):
//! * five independent Redis masters (one key each, lazy expiry on access against the node's
//!   wall clock, `now > expire_at` as Redis 7); three Redlock clients;
//! * client: fresh token; `SET lock tok NX PX 10000` to all five; the fan-out ends when all
//!   five answered or its 50 ms per-node timeout passed (one pending timeout timer per
//!   client, re-armed for a later deadline, as the project coalesces it); acquired iff
//!   >= 3 OK and `ttl - elapsed - (1 % ttl + 2 ms) > 0`;
//!   - acquired: hold U[50, 500] ms, then the unlock script to all five, wait for all
//!     answers (or the timeout), think U[0, 100] ms, start over;
//!   - failed: the unlock script to all five (not awaited); after 3 tries give up and think
//!     U[0, 100] ms, else wait U[0, 200] ms (0: at once) and try again;
//! * links: one-way delay U[0.1, 2] ms per message, FIFO per directed link;
//! * swarm faults drawn per seed (each kind on with chance 1/2; `every` upper bound drawn in
//!   [10 s, 60 s], magnitude upper bound drawn in its range): client pauses up to 15 s (what
//!   reaches a paused client waits and is handled at the resume, in arrival order), wall-clock
//!   steps up to +-20 s on the nodes, crash-restart without persistence (down 0.1-5 s;
//!   everything sent to an older incarnation is lost), isolation of one process (0.1-10 s;
//!   a heal unblocks the process's links, as the project does);
//! * 60 s per seed.
//!
//! Event-free shortcuts, each exact for this workload: a message sent on a blocked link or
//! to a node that is down at send time is dropped at once (it could never be delivered: a
//! restart changes the incarnation); Redis's active expiry (the 10 Hz cron) is not simulated
//! by default because every command checks expiry first and nothing else reads the keys
//! (`--cron` simulates it as the project does: one tick per node per 100 ms).

// Each feature subset leaves some types and fields unused: they are the other features'.
#![allow(dead_code, unused_variables)]
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Instant;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;
const NODES: usize = 5;
const CLIENTS: usize = 3;
const PROCS: usize = NODES + CLIENTS;
const QUORUM: u8 = 3;
const NET_MIN: u64 = 100_000;
const NET_MAX: u64 = 2 * MS;
const TTL_MS: i64 = 10_000;
const TTL_NS: i64 = TTL_MS * MS as i64;
const DRIFT_NS: i64 = TTL_NS / 100 + 2 * MS as i64;
const NODE_TIMEOUT: u64 = 50 * MS;
const TRIES: u32 = 3;
const RETRY_MAX: u64 = 200 * MS;
const HOLD: (u64, u64) = (50 * MS, 500 * MS);
const THINK: (u64, u64) = (0, 100 * MS);
const CRON: u64 = 100 * MS;
const EPOCH_MS: i64 = 1_700_000_000_000;

/// A byte string kept inline (keys and tokens are short).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Small {
    len: u8,
    buf: [u8; 23],
}

impl Small {
    #[allow(dead_code)]
    fn new(b: &[u8]) -> Small {
        let mut s = Small {
            len: b.len() as u8,
            buf: [0; 23],
        };
        s.buf[..b.len()].copy_from_slice(b);
        s
    }
    #[allow(dead_code)]
    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
    /// The next token: the decimal counter after the prefix counted up in place.
    #[allow(dead_code)]
    fn advance(&mut self, prefix_len: usize) {
        let mut i = self.len as usize;
        while i > prefix_len {
            i -= 1;
            if self.buf[i] < b'9' {
                self.buf[i] += 1;
                return;
            }
            self.buf[i] = b'0';
        }
        self.buf
            .copy_within(prefix_len..self.len as usize, prefix_len + 1);
        self.buf[prefix_len] = b'1';
        self.len += 1;
    }
}

#[cfg(feature = "redis")]
#[derive(Clone, Copy)]
enum Cmd {
    Set {
        key: Small,
        value: Small,
        nx: bool,
        px_ms: i64,
    },
    /// EVAL of a script named by its SHA1's first word (the node checks it is the unlock).
    Eval { script: u64, key: Small, arg: Small },
}

#[cfg(feature = "redis")]
#[derive(Clone, Copy)]
enum Reply {
    Ok,
    Nil,
    Int(i64),
}

#[cfg(feature = "redis")]
const UNLOCK_SHA: u64 = 0x6e4c_1d1c_2e0b_51f7;

#[derive(Clone, Copy)]
enum Ev {
    #[cfg(not(feature = "redis"))]
    Req {
        node: u8,
        client: u8,
        inc: u32,
        id: u32,
        unlock: bool,
        token: u64,
    },
    #[cfg(not(feature = "redis"))]
    Rep {
        client: u8,
        node: u8,
        id: u32,
        ok: bool,
    },
    #[cfg(feature = "redis")]
    Req {
        node: u8,
        client: u8,
        inc: u32,
        id: u32,
        cmd: Cmd,
    },
    #[cfg(feature = "redis")]
    Rep {
        client: u8,
        node: u8,
        id: u32,
        reply: Reply,
    },
    State {
        client: u8,
        generation: u32,
    },
    Timeout {
        client: u8,
    },
    Cron {
        node: u8,
        inc: u32,
    },
}

struct Entry {
    time: u64,
    seq: u64,
    #[cfg(not(feature = "slab"))]
    ev: Ev,
    #[cfg(feature = "slab")]
    slot: u32,
}
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Max-heap reversed: the earliest (time, seq) pops first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

#[derive(Clone, Copy)]
enum Fault {
    Pause(u8),
    Resume(u8),
    Crash(u8),
    Restart(u8),
    Step(u8, i64),
    Isolate(u8, bool),
}

struct Node {
    up: bool,
    inc: u32,
    offset_ms: i64,
    #[cfg(not(feature = "redis"))]
    key: Option<(u64, i64)>,
    #[cfg(feature = "redis")]
    key: Option<(Small, i64)>,
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Acquiring,
    Holding,
    Releasing,
    Waiting,
}

struct Client {
    phase: Phase,
    attempt: u32,
    tries: u32,
    #[cfg(not(feature = "redis"))]
    token: u64,
    #[cfg(feature = "redis")]
    token: Small,
    #[cfg(feature = "redis")]
    prefix_len: usize,
    /// The client's monotonic clock origin (`procs`): no drift, so it reads true time.
    #[cfg(feature = "procs")]
    mono_origin_ns: u64,
    #[cfg(feature = "procs")]
    drift_ppm: i64,
    fan: bool,
    fan_release: bool,
    fan_start: u64,
    fan_deadline: u64,
    ids: [u32; NODES],
    votes: [u8; NODES], // 0 pending, 1 for, 2 against
    pending: u8,
    ok: u8,
    next_id: u32,
    generation: u32,
    timeout_armed: bool,
    paused: bool,
    parked: Vec<Ev>,
}

#[derive(Default, Clone, Copy)]
struct Stats {
    events: u64,
    requests: u64,
    replies: u64,
    client_timers: u64,
    timeouts: u64,
    cron: u64,
    drops_in_flight: u64,
    drops_at_send: u64,
    faults: u64,
    acquisitions: u64,
    fingerprint: u64,
    records: u64,
    violations: u64,
}

struct W {
    rng: ChaCha8Rng,
    heap: BinaryHeap<Entry>,
    seq: u64,
    now: u64,
    nodes: [Node; NODES],
    clients: Vec<Client>,
    blocked: [[bool; PROCS]; PROCS],
    last: [[u64; PROCS]; PROCS],
    s: Stats,
    #[cfg(feature = "slab")]
    slab: Vec<Option<Ev>>,
    #[cfg(feature = "slab")]
    free: Vec<u32>,
    #[cfg(feature = "links")]
    link_rng: Vec<ChaCha8Rng>,
    #[cfg(feature = "checks")]
    checks: Checks,
}

#[cfg(feature = "procs")]
#[inline(never)]
fn slow_mono(origin_ns: u64, drift_ppm: i64, now: u64) -> u64 {
    origin_ns + (now as i128 * (1_000_000 + drift_ppm) as i128 / 1_000_000) as u64
}

/// A history record, streamed to the checker.
#[cfg(feature = "checks")]
#[derive(Clone, Copy)]
struct Record {
    at: u64,
    proc: u8,
    what: What,
}

#[cfg(feature = "checks")]
#[derive(Clone, Copy)]
enum What {
    /// A client starts a round.
    Attempt,
    /// A client believes it holds the lock until `valid_until` (true time).
    Acquired { valid_until: u64 },
    /// A client ends its critical section.
    Released,
    /// A node wrote the key (a grant) with this token.
    KeyWritten { node: u8, token: Small },
    /// A node deleted the key.
    KeyDeleted { node: u8 },
}

#[cfg(feature = "checks")]
#[derive(Default)]
struct Checks {
    holders: Vec<(u8, u64)>,
    mutual_exclusion_broken: u64,
    granted: [Option<Small>; NODES],
    records: u64,
}

#[cfg(feature = "checks")]
impl Checks {
    #[inline]
    fn push(&mut self, r: Record) {
        self.records += 1;
        match r.what {
            What::Attempt => {}
            What::Acquired { valid_until } => {
                self.holders.retain(|&(_, until)| until > r.at);
                if !self.holders.is_empty() {
                    self.mutual_exclusion_broken += 1;
                }
                self.holders.push((r.proc, valid_until));
            }
            What::Released => self.holders.retain(|&(p, _)| p != r.proc),
            What::KeyWritten { node, token } => self.granted[node as usize] = Some(token),
            What::KeyDeleted { node } => self.granted[node as usize] = None,
        }
    }
}

impl W {
    #[inline]
    fn push(&mut self, t: u64, ev: Ev) {
        #[cfg(not(feature = "slab"))]
        self.heap.push(Entry {
            time: t,
            seq: self.seq,
            ev,
        });
        #[cfg(feature = "slab")]
        {
            let slot = match self.free.pop() {
                Some(i) => {
                    self.slab[i as usize] = Some(ev);
                    i
                }
                None => {
                    self.slab.push(Some(ev));
                    (self.slab.len() - 1) as u32
                }
            };
            self.heap.push(Entry {
                time: t,
                seq: self.seq,
                slot,
            });
        }
        self.seq += 1;
    }
    #[cfg(feature = "checks")]
    #[inline]
    fn record(&mut self, proc: u8, what: What) {
        let at = self.now;
        self.checks.push(Record { at, proc, what });
    }
    /// A client's monotonic clock (`procs`).
    #[cfg(feature = "procs")]
    #[inline]
    fn mono_ns(&self, c: usize) -> u64 {
        let cl = &self.clients[c];
        if cl.drift_ppm == 0 {
            return cl.mono_origin_ns + self.now;
        }
        slow_mono(cl.mono_origin_ns, cl.drift_ppm, self.now)
    }
    #[inline]
    fn route(&mut self, from: usize, to: usize) -> Option<u64> {
        if self.blocked[from][to] {
            self.s.drops_at_send += 1;
            return None;
        }
        #[cfg(feature = "links")]
        let d = self.link_rng[from * PROCS + to].random_range(NET_MIN..=NET_MAX);
        #[cfg(not(feature = "links"))]
        let d = self.rng.random_range(NET_MIN..=NET_MAX);
        let at = (self.now + d).max(self.last[from][to]);
        self.last[from][to] = at;
        Some(at)
    }
    fn wall_ms(&self, n: usize) -> i64 {
        EPOCH_MS + (self.now / MS) as i64 + self.nodes[n].offset_ms
    }
    fn send_req(&mut self, c: usize, node: usize, unlock: bool) -> u32 {
        let cl = &mut self.clients[c];
        cl.next_id += 1;
        let (id, token) = (cl.next_id, cl.token);
        if !self.nodes[node].up {
            self.s.drops_at_send += 1;
            return id;
        }
        if let Some(at) = self.route(NODES + c, node) {
            let inc = self.nodes[node].inc;
            #[cfg(not(feature = "redis"))]
            self.push(
                at,
                Ev::Req {
                    node: node as u8,
                    client: c as u8,
                    inc,
                    id,
                    unlock,
                    token,
                },
            );
            #[cfg(feature = "redis")]
            {
                let key = Small::new(b"lock");
                let cmd = if unlock {
                    Cmd::Eval {
                        script: UNLOCK_SHA,
                        key,
                        arg: token,
                    }
                } else {
                    Cmd::Set {
                        key,
                        value: token,
                        nx: true,
                        px_ms: TTL_MS,
                    }
                };
                self.push(
                    at,
                    Ev::Req {
                        node: node as u8,
                        client: c as u8,
                        inc,
                        id,
                        cmd,
                    },
                );
            }
        }
        id
    }
    fn start_fanout(&mut self, c: usize, release: bool) {
        for n in 0..NODES {
            let id = self.send_req(c, n, release);
            self.clients[c].ids[n] = id;
        }
        let now = self.now;
        let cl = &mut self.clients[c];
        cl.votes = [0; NODES];
        cl.pending = NODES as u8;
        cl.ok = 0;
        cl.fan = true;
        cl.fan_release = release;
        #[cfg(feature = "procs")]
        let now = {
            let _ = now;
            self.mono_ns(c)
        };
        let cl = &mut self.clients[c];
        cl.fan_start = now;
        cl.fan_deadline = now + NODE_TIMEOUT;
        self.ensure_timeout(c);
    }
    fn ensure_timeout(&mut self, c: usize) {
        let cl = &mut self.clients[c];
        if cl.fan && !cl.timeout_armed {
            cl.timeout_armed = true;
            let at = cl.fan_deadline;
            self.push(at, Ev::Timeout { client: c as u8 });
        }
    }
    fn arm_state(&mut self, c: usize, after: u64) {
        let cl = &mut self.clients[c];
        cl.generation += 1;
        let generation = cl.generation;
        let at = self.now + after;
        self.push(
            at,
            Ev::State {
                client: c as u8,
                generation,
            },
        );
    }
    fn start_attempt(&mut self, c: usize) {
        let cl = &mut self.clients[c];
        cl.attempt += 1;
        cl.tries += 1;
        #[cfg(not(feature = "redis"))]
        {
            cl.token = ((c as u64) << 32) | cl.attempt as u64;
        }
        #[cfg(feature = "redis")]
        cl.token.advance(cl.prefix_len);
        cl.phase = Phase::Acquiring;
        #[cfg(feature = "checks")]
        if cl.tries == 1 {
            self.record((NODES + c) as u8, What::Attempt);
        }
        self.start_fanout(c, false);
    }
    fn think(&mut self, c: usize) {
        self.clients[c].phase = Phase::Waiting;
        let d = self.rng.random_range(THINK.0..=THINK.1);
        self.arm_state(c, d);
    }
    fn conclude(&mut self, c: usize) {
        let now = self.now;
        let cl = &mut self.clients[c];
        cl.fan = false;
        if cl.fan_release {
            self.think(c);
            return;
        }
        #[cfg(feature = "procs")]
        let elapsed = {
            let m = self.mono_ns(c);
            m - self.clients[c].fan_start
        };
        #[cfg(not(feature = "procs"))]
        let elapsed = now - cl.fan_start;
        let cl = &mut self.clients[c];
        let validity = TTL_NS - elapsed as i64 - DRIFT_NS;
        if cl.ok >= QUORUM && validity > 0 {
            cl.tries = 0;
            #[cfg(feature = "checks")]
            self.record(
                (NODES + c) as u8,
                What::Acquired {
                    valid_until: now + validity as u64,
                },
            );
            let cl = &mut self.clients[c];
            cl.phase = Phase::Holding;
            self.s.acquisitions += 1;
            self.s.fingerprint = self.s.fingerprint.rotate_left(5) ^ now ^ (c as u64) << 56;
            let d = self.rng.random_range(HOLD.0..=HOLD.1);
            self.arm_state(c, d);
        } else {
            for n in 0..NODES {
                self.send_req(c, n, true);
            }
            if self.clients[c].tries >= TRIES {
                self.clients[c].tries = 0;
                self.think(c);
            } else {
                let d = self.rng.random_range(0..=RETRY_MAX);
                if d == 0 {
                    self.start_attempt(c);
                } else {
                    self.clients[c].phase = Phase::Waiting;
                    self.arm_state(c, d);
                }
            }
        }
    }

    fn client_reply(&mut self, c: usize, node: u8, id: u32, ok: bool) {
        self.s.replies += 1;
        let now = self.now;
        #[cfg(feature = "procs")]
        let _ = self.mono_ns(c);
        let cl = &mut self.clients[c];
        if !cl.fan {
            return;
        }
        if now > cl.fan_deadline {
            self.conclude(c);
            return;
        }
        let n = node as usize;
        if cl.ids[n] != id || cl.votes[n] != 0 {
            return;
        }
        let yes = cl.fan_release || ok;
        cl.votes[n] = if yes { 1 } else { 2 };
        cl.ok += yes as u8;
        cl.pending -= 1;
        if cl.pending == 0 {
            self.conclude(c);
        }
    }

    /// A reply or timer of a client that is not paused.
    fn client_event(&mut self, c: usize, ev: Ev) {
        match ev {
            #[cfg(not(feature = "redis"))]
            Ev::Rep { node, id, ok, .. } => self.client_reply(c, node, id, ok),
            #[cfg(feature = "redis")]
            Ev::Rep {
                node, id, reply, ..
            } => {
                let ok = match reply {
                    Reply::Ok => true,
                    Reply::Nil => false,
                    Reply::Int(n) => n == 1,
                };
                self.client_reply(c, node, id, ok);
            }
            Ev::State { generation, .. } => {
                self.s.client_timers += 1;
                let cl = &self.clients[c];
                if generation != cl.generation {
                    return;
                }
                #[cfg(feature = "procs")]
                let _ = self.mono_ns(c);
                let cl = &self.clients[c];
                match cl.phase {
                    Phase::Holding => {
                        #[cfg(feature = "checks")]
                        self.record((NODES + c) as u8, What::Released);
                        self.clients[c].phase = Phase::Releasing;
                        self.start_fanout(c, true);
                    }
                    Phase::Waiting => self.start_attempt(c),
                    _ => {}
                }
            }
            Ev::Timeout { .. } => {
                self.s.timeouts += 1;
                let now = self.now;
                let cl = &mut self.clients[c];
                cl.timeout_armed = false;
                if cl.fan && cl.fan_deadline <= now {
                    self.conclude(c);
                }
                self.ensure_timeout(c);
            }
            _ => unreachable!(),
        }
    }

    #[cfg(not(feature = "redis"))]
    fn node_request(&mut self, n: usize, c: usize, inc: u32, id: u32, unlock: bool, token: u64) {
        self.s.requests += 1;
        let node = &self.nodes[n];
        if self.blocked[NODES + c][n] || !node.up || node.inc != inc {
            self.s.drops_in_flight += 1;
            return;
        }
        let wall = self.wall_ms(n);
        let node = &mut self.nodes[n];
        if let Some((_, exp)) = node.key
            && wall > exp
        {
            node.key = None;
        }
        let ok = if unlock {
            match node.key {
                Some((t, _)) if t == token => {
                    node.key = None;
                    true
                }
                _ => false,
            }
        } else if node.key.is_none() {
            node.key = Some((token, wall + TTL_MS));
            true
        } else {
            false
        };
        if let Some(at) = self.route(n, NODES + c) {
            self.push(
                at,
                Ev::Rep {
                    client: c as u8,
                    node: n as u8,
                    id,
                    ok,
                },
            );
        }
    }

    /// A Redis command at a node: the key and token compared as bytes, the script checked.
    #[cfg(feature = "redis")]
    fn node_request(&mut self, n: usize, c: usize, inc: u32, id: u32, cmd: Cmd) {
        self.s.requests += 1;
        let node = &self.nodes[n];
        if self.blocked[NODES + c][n] || !node.up || node.inc != inc {
            self.s.drops_in_flight += 1;
            return;
        }
        let wall = self.wall_ms(n);
        let lock = Small::new(b"lock");
        let node = &mut self.nodes[n];
        if let Some((_, exp)) = node.key
            && wall > exp
        {
            node.key = None;
        }
        let reply = match cmd {
            Cmd::Eval { script, key, arg } => {
                assert_eq!(script, UNLOCK_SHA, "unknown script");
                match node.key {
                    Some((t, _)) if key == lock && t == arg => {
                        node.key = None;
                        #[cfg(feature = "checks")]
                        self.record(n as u8, What::KeyDeleted { node: n as u8 });
                        Reply::Int(1)
                    }
                    _ => Reply::Int(0),
                }
            }
            Cmd::Set {
                key,
                value,
                nx,
                px_ms,
            } => {
                if key == lock && (!nx || node.key.is_none()) {
                    node.key = Some((value, wall + px_ms));
                    #[cfg(feature = "checks")]
                    self.record(
                        n as u8,
                        What::KeyWritten {
                            node: n as u8,
                            token: value,
                        },
                    );
                    Reply::Ok
                } else {
                    Reply::Nil
                }
            }
        };
        if let Some(at) = self.route(n, NODES + c) {
            self.push(
                at,
                Ev::Rep {
                    client: c as u8,
                    node: n as u8,
                    id,
                    reply,
                },
            );
        }
    }

    fn fault(&mut self, f: Fault, cron: bool) {
        self.s.faults += 1;
        self.s.events += 1;
        match f {
            Fault::Pause(c) => self.clients[c as usize].paused = true,
            Fault::Resume(c) => {
                let c = c as usize;
                self.clients[c].paused = false;
                // Handled now, in arrival order; the Vec's allocation is kept.
                let mut parked = std::mem::take(&mut self.clients[c].parked);
                for ev in parked.drain(..) {
                    self.push(self.now, ev);
                }
                self.clients[c].parked = parked;
            }
            Fault::Crash(n) => {
                let node = &mut self.nodes[n as usize];
                if node.up {
                    node.up = false;
                    node.inc += 1;
                }
            }
            Fault::Restart(n) => {
                let node = &mut self.nodes[n as usize];
                if !node.up {
                    node.up = true;
                    node.key = None;
                    if cron {
                        let inc = node.inc;
                        self.push(self.now + CRON, Ev::Cron { node: n, inc });
                    }
                }
            }
            Fault::Step(n, d) => self.nodes[n as usize].offset_ms += d,
            Fault::Isolate(p, b) => {
                let p = p as usize;
                for q in 0..PROCS {
                    if q != p {
                        self.blocked[p][q] = b;
                        self.blocked[q][p] = b;
                    }
                }
            }
        }
    }
}

/// The seed's swarm: each kind on with chance 1/2, its `every` and magnitude upper bounds
/// drawn in their ranges, then a schedule per target (`t += U[10 s, every]`).
fn faults(rng: &mut ChaCha8Rng, end: u64) -> Vec<(u64, Fault)> {
    let mut out = Vec::new();
    let every = |rng: &mut ChaCha8Rng| rng.random_range(10 * S..=60 * S);
    // pause c1..c3, up to 15 s
    let (on, e, dmax) = (
        rng.random_bool(0.5),
        every(rng),
        rng.random_range(100 * MS..=15 * S),
    );
    if on {
        for c in 0..CLIENTS as u8 {
            let mut t = 0;
            loop {
                t += rng.random_range(10 * S..=e);
                if t >= end {
                    break;
                }
                let d = rng.random_range(100 * MS..=dmax);
                out.push((t, Fault::Pause(c)));
                t += d;
                out.push((t, Fault::Resume(c)));
            }
        }
    }
    // wall-clock steps on r1..r5, +-20 s
    let (on, e) = (rng.random_bool(0.5), every(rng));
    let (hi, lo) = (
        rng.random_range(0..=20_000i64),
        rng.random_range(-20_000i64..=0),
    );
    if on {
        for n in 0..NODES as u8 {
            let mut t = 0;
            loop {
                t += rng.random_range(10 * S..=e);
                if t >= end {
                    break;
                }
                out.push((t, Fault::Step(n, rng.random_range(lo..=hi))));
            }
        }
    }
    // crash-restart r1..r5 (empty), down up to 5 s
    let (on, e, dmax) = (
        rng.random_bool(0.5),
        every(rng),
        rng.random_range(100 * MS..=5 * S),
    );
    if on {
        for n in 0..NODES as u8 {
            let mut t = 0;
            loop {
                t += rng.random_range(10 * S..=e);
                if t >= end {
                    break;
                }
                let d = rng.random_range(100 * MS..=dmax);
                out.push((t, Fault::Crash(n)));
                t += d;
                out.push((t, Fault::Restart(n)));
            }
        }
    }
    // isolation of any process, up to 10 s
    let (on, e, dmax) = (
        rng.random_bool(0.5),
        every(rng),
        rng.random_range(100 * MS..=10 * S),
    );
    if on {
        for p in 0..PROCS as u8 {
            let mut t = 0;
            loop {
                t += rng.random_range(10 * S..=e);
                if t >= end {
                    break;
                }
                let d = rng.random_range(100 * MS..=dmax);
                out.push((t, Fault::Isolate(p, true)));
                t += d;
                out.push((t, Fault::Isolate(p, false)));
            }
        }
    }
    out.sort_by_key(|&(t, _)| t); // stable: ties keep their drawing order
    out
}

fn run(seed: u64, end: u64, cron: bool) -> Stats {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let faults = faults(&mut rng, end);
    let mut w = W {
        rng,
        heap: BinaryHeap::with_capacity(64),
        seq: 0,
        now: 0,
        nodes: std::array::from_fn(|_| Node {
            up: true,
            inc: 0,
            offset_ms: 0,
            key: None,
        }),
        clients: (0..CLIENTS)
            .map(|_c| Client {
                phase: Phase::Waiting,
                attempt: 0,
                tries: 0,
                #[cfg(not(feature = "redis"))]
                token: 0,
                #[cfg(feature = "redis")]
                token: Small::new(format!("c{_c}:0").as_bytes()),
                #[cfg(feature = "redis")]
                prefix_len: format!("c{_c}:").len(),
                #[cfg(feature = "procs")]
                mono_origin_ns: 0,
                #[cfg(feature = "procs")]
                drift_ppm: 0,
                fan: false,
                fan_release: false,
                fan_start: 0,
                fan_deadline: 0,
                ids: [0; NODES],
                votes: [0; NODES],
                pending: 0,
                ok: 0,
                next_id: 0,
                generation: 0,
                timeout_armed: false,
                paused: false,
                parked: Vec::new(),
            })
            .collect(),
        blocked: [[false; PROCS]; PROCS],
        last: [[0; PROCS]; PROCS],
        s: Stats::default(),
        #[cfg(feature = "slab")]
        slab: Vec::new(),
        #[cfg(feature = "slab")]
        free: Vec::new(),
        #[cfg(feature = "links")]
        link_rng: (0..PROCS * PROCS)
            .map(|i| ChaCha8Rng::seed_from_u64(seed ^ (0x6e65_7400_0000_0000 | i as u64)))
            .collect(),
        #[cfg(feature = "checks")]
        checks: Checks::default(),
    };
    if cron {
        for n in 0..NODES as u8 {
            w.push(CRON, Ev::Cron { node: n, inc: 0 });
        }
    }
    for c in 0..CLIENTS {
        w.start_attempt(c);
    }
    let mut fi = 0;
    loop {
        // Faults were scheduled first: at equal times they go before queued events.
        let top = w.heap.peek().map(|e| e.time);
        if fi < faults.len() && top.is_none_or(|t| faults[fi].0 <= t) {
            let (t, f) = faults[fi];
            if t > end {
                break;
            }
            fi += 1;
            w.now = t;
            w.fault(f, cron);
            continue;
        }
        let Some(e) = w.heap.pop() else { break };
        if e.time > end {
            break;
        }
        w.now = e.time;
        w.s.events += 1;
        #[cfg(not(feature = "slab"))]
        let ev = e.ev;
        #[cfg(feature = "slab")]
        let ev = {
            w.free.push(e.slot);
            w.slab[e.slot as usize].take().expect("queued")
        };
        match ev {
            #[cfg(not(feature = "redis"))]
            Ev::Req {
                node,
                client,
                inc,
                id,
                unlock,
                token,
            } => w.node_request(node as usize, client as usize, inc, id, unlock, token),
            #[cfg(feature = "redis")]
            Ev::Req {
                node,
                client,
                inc,
                id,
                cmd,
            } => w.node_request(node as usize, client as usize, inc, id, cmd),
            Ev::Rep { client, node, .. } => {
                let c = client as usize;
                if w.blocked[node as usize][NODES + c] {
                    w.s.drops_in_flight += 1;
                } else if w.clients[c].paused {
                    w.clients[c].parked.push(ev);
                } else {
                    w.client_event(c, ev);
                }
            }
            Ev::State { client, .. } | Ev::Timeout { client } => {
                let c = client as usize;
                if w.clients[c].paused {
                    w.clients[c].parked.push(ev);
                } else {
                    w.client_event(c, ev);
                }
            }
            Ev::Cron { node, inc } => {
                w.s.cron += 1;
                let n = node as usize;
                if !w.nodes[n].up || w.nodes[n].inc != inc {
                    continue;
                }
                let wall = w.wall_ms(n);
                if let Some((_, exp)) = w.nodes[n].key
                    && wall > exp
                {
                    w.nodes[n].key = None;
                }
                w.push(w.now + CRON, Ev::Cron { node, inc });
            }
        }
    }
    w.s.fingerprint ^= w.s.events.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    #[cfg(feature = "checks")]
    {
        w.s.records = w.checks.records;
        w.s.violations = w.checks.mutual_exclusion_broken;
        let _ = w.checks.granted;
    }
    w.s
}

fn main() {
    let (mut a, mut b) = (0u64, 1000u64);
    let mut t_secs = 60u64;
    let mut cron = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seeds" => {
                let v = args.next().expect("--seeds A..B");
                let (x, y) = v.split_once("..").expect("--seeds A..B");
                (a, b) = (x.parse().unwrap(), y.parse().unwrap());
            }
            "--t" => t_secs = args.next().unwrap().parse().unwrap(),
            "--cron" => cron = true,
            "-h" | "--help" => {
                println!("w2-bare [--seeds A..B=0..1000] [--t SECONDS=60] [--cron]");
                return;
            }
            other => panic!("unknown arg {other}"),
        }
    }
    let end = t_secs * S;
    let start = Instant::now();
    let mut tot = Stats::default();
    for seed in a..b {
        let s = run(seed, end, cron);
        tot.events += s.events;
        tot.requests += s.requests;
        tot.replies += s.replies;
        tot.client_timers += s.client_timers;
        tot.timeouts += s.timeouts;
        tot.cron += s.cron;
        tot.drops_in_flight += s.drops_in_flight;
        tot.drops_at_send += s.drops_at_send;
        tot.faults += s.faults;
        tot.acquisitions += s.acquisitions;
        tot.records += s.records;
        tot.violations += s.violations;
        tot.fingerprint = tot.fingerprint.rotate_left(1) ^ s.fingerprint;
    }
    let wall = start.elapsed().as_secs_f64();
    let n = (b - a) as f64;
    println!("mode=w2 seeds={a}..{b} sim_s_each={t_secs} cron={cron}");
    println!(
        "per_seed: events={:.0} requests={:.0} replies={:.0} client_timers={:.0} timeouts={:.0} cron={:.0} drops_in_flight={:.0} drops_at_send={:.0} faults={:.0} acquisitions={:.1}",
        tot.events as f64 / n,
        tot.requests as f64 / n,
        tot.replies as f64 / n,
        tot.client_timers as f64 / n,
        tot.timeouts as f64 / n,
        tot.cron as f64 / n,
        tot.drops_in_flight as f64 / n,
        tot.drops_at_send as f64 / n,
        tot.faults as f64 / n,
        tot.acquisitions as f64 / n
    );
    println!(
        "fingerprint={:016x} records={} violations={}",
        tot.fingerprint, tot.records, tot.violations
    );
    println!(
        "RESULT name=bare-w2 seeds_per_s={:.1} events_per_s={:.0} events_per_seed={:.0} wall_s={wall:.3}",
        n / wall,
        tot.events as f64 / wall,
        tot.events as f64 / n
    );
}
