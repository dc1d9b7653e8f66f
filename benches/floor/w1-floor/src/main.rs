//! W1 on a hand-written loop that keeps what distlock-sim must keep: a floor under the
//! simulator's cost, measured beside the bare loop (`w1-bare`, the issue 16 yardstick).
//!
//! The bare loop is W1 and nothing else. The simulator's model has, on every event, things the
//! workload never exercises but the product exists for. This loop is the bare loop's W1 with
//! them added, each behind a cargo feature so that its cost is measured alone
//! (`docs/benchmarks.md`, "The floor"). Each is written the cheapest way we know by hand:
//!
//! - `links`: the network is links. Each (from, to) pair has its own state, read on every
//!   send: cut count (partitions), loss windows, extra latency (spikes), its own named RNG
//!   stream (so a fault on one link does not shift another's draws) and FIFO order (a TCP
//!   connection delivers in order, so a message never overtakes the previous one). The
//!   per-link streams are a feature of their own, `link-streams`.
//! - `procs`: processes have clocks and lives. Each delivery and timer checks the receiver's
//!   run state and incarnation (a crash voids what was addressed to the old one); each
//!   reaction gets the process's wall clock (ms, what Redis reads for PX) and monotonic clock
//!   (ns, what clients measure validity with); timers are armed in local time and converted.
//! - `redis`: messages are Redis commands and replies. The client builds `SET key token NX PX
//!   30` with byte strings and a fresh token per attempt (a prefix and a counter, as the
//!   simulator's clients do), and unlocks with the compare-and-delete script by EVAL; the
//!   server matches the command, checks the script, compares bytes; replies carry request ids
//!   that the client matches.
//! - `checks`: a history. Client and server observations are records (time, process, what)
//!   streamed to the three checkers W1 runs: mutual exclusion from the clients' beliefs
//!   (validity on each client's clock), foreign unlock from the server's deletes, liveness.
//!
//! With no feature this is the bare loop (same draws, same events, same figures).

// Each feature subset leaves some types and fields unused: they are the other features'.
#![allow(dead_code, unused_variables)]
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MS: u64 = 1_000_000;
const NET_MIN: u64 = 100_000; // 0.1 ms
const NET_MAX: u64 = 1_000_000; // 1.0 ms
const HOLD: u64 = 5 * MS;
const BACKOFF_MAX: u64 = 2 * MS;
const TTL_MS: u64 = 30; // PX 30
const TTL: u64 = TTL_MS * MS;

/// A byte string kept inline (keys and tokens are short).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Small {
    len: u8,
    buf: [u8; 23],
}

impl Small {
    fn new(b: &[u8]) -> Small {
        let mut s = Small {
            len: b.len() as u8,
            buf: [0; 23],
        };
        s.buf[..b.len()].copy_from_slice(b);
        s
    }
    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
    /// The next token: the decimal counter after the client's prefix counted up in place
    /// (a fresh token per attempt, as the simulator's clients make it).
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
        // All nines: one more digit.
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
        px_ms: u64,
    },
    /// EVAL of a script by its SHA1's first word (the server checks it is the unlock script).
    Eval { script: u64, key: Small, arg: Small },
}

#[cfg(feature = "redis")]
#[derive(Clone, Copy)]
enum Rep {
    Ok,
    Nil,
    Int(i64),
}

#[cfg(feature = "redis")]
const UNLOCK_SHA: u64 = 0x6e4c_1d1c_2e0b_51f7;

/// What travels. Without `redis`, the bare loop's fixed messages.
#[derive(Clone, Copy)]
enum Msg {
    #[cfg(not(feature = "redis"))]
    SetReq { token: u64 },
    #[cfg(not(feature = "redis"))]
    SetRep { ok: bool },
    #[cfg(not(feature = "redis"))]
    CadReq { token: u64 },
    #[cfg(not(feature = "redis"))]
    CadRep { deleted: bool },
    #[cfg(feature = "redis")]
    Request { id: u64, cmd: Cmd },
    #[cfg(feature = "redis")]
    Reply { id: u64, reply: Rep },
}

#[derive(Clone, Copy)]
enum Ev {
    Deliver {
        from: u32,
        to: u32,
        #[cfg(feature = "procs")]
        to_incarnation: u32,
        msg: Msg,
    },
    Timer {
        proc: u32,
        #[cfg(feature = "procs")]
        incarnation: u32,
        tag: u8,
    },
}

const HOLD_DONE: u8 = 0;
const BACKOFF_DONE: u8 = 1;

/// A queued event: inline in the heap, or (`slab`, for messages larger than a few words) its
/// slot in a slab, so that sifting moves 24 bytes, not a message.
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
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

#[cfg(feature = "links")]
struct Link {
    cuts: u32,
    loss_windows: u32,
    extra_latency_ns: u64,
    last_delivery: u64,
    #[cfg(feature = "link-streams")]
    rng: ChaCha8Rng,
}

#[cfg(feature = "procs")]
#[derive(PartialEq, Eq, Clone, Copy)]
enum RunState {
    Up,
    #[allow(dead_code)]
    Paused,
    #[allow(dead_code)]
    Down,
}

#[cfg(feature = "procs")]
struct Proc {
    state: RunState,
    incarnation: u32,
    /// Wall clock origin (ns since 1970 at true time 0) and drift (ppm): the fast path is a
    /// clock without drift or steps.
    wall_origin_ns: u64,
    drift_ppm: i64,
}

#[cfg(feature = "procs")]
impl Proc {
    #[inline]
    fn wall_ms(&self, now: u64) -> i64 {
        if self.drift_ppm == 0 {
            return ((self.wall_origin_ns + now) / MS) as i64;
        }
        slow_clock(self, now) as i64 / MS as i64
    }
    #[inline]
    fn mono_ns(&self, now: u64) -> u64 {
        if self.drift_ppm == 0 {
            return now;
        }
        slow_clock(self, now)
    }
    #[inline]
    fn true_after(&self, local_ns: u64) -> u64 {
        if self.drift_ppm == 0 {
            return local_ns;
        }
        (local_ns as i128 * 1_000_000 / (1_000_000 + self.drift_ppm) as i128) as u64
    }
}

#[cfg(feature = "procs")]
#[inline(never)]
fn slow_clock(p: &Proc, now: u64) -> u64 {
    (now as i128 * (1_000_000 + p.drift_ppm) as i128 / 1_000_000) as u64
}

/// A history record, streamed to the checkers.
#[cfg(feature = "checks")]
#[derive(Clone, Copy)]
struct Record {
    at: u64,
    proc: u32,
    what: What,
}

#[cfg(feature = "checks")]
#[derive(Clone, Copy)]
enum What {
    /// A client starts a round.
    Attempt,
    /// A client believes it holds the lock until `valid_until` (true time of its validity on
    /// its own clock).
    Acquired { token: Small, valid_until: u64 },
    /// A client ends its critical section and sends the unlock.
    Released,
    /// The server wrote the key (a grant) with this token.
    KeyWritten { token: Small },
    /// The server deleted the key for a requester with this token.
    KeyDeleted { token: Small, requester: Small },
}

#[cfg(feature = "checks")]
#[derive(Default)]
struct Checks {
    // mutual exclusion: the clients that believe they hold, with their validity
    holders: Vec<(u32, u64)>,
    mutual_exclusion_broken: u64,
    // foreign unlock: the token the server last granted
    granted: Option<Small>,
    foreign_unlocks: u64,
    // liveness: per client, when it last started a round and whether it acquired since
    waiting_since: Vec<Option<u64>>,
    longest_wait_ns: u64,
    records: u64,
}

#[cfg(feature = "checks")]
impl Checks {
    #[inline]
    fn push(&mut self, r: Record) {
        self.records += 1;
        match r.what {
            What::Attempt => {
                let w = &mut self.waiting_since[r.proc as usize];
                if w.is_none() {
                    *w = Some(r.at);
                }
            }
            What::Acquired { valid_until, .. } => {
                self.holders.retain(|&(_, until)| until > r.at);
                if !self.holders.is_empty() {
                    self.mutual_exclusion_broken += 1;
                }
                self.holders.push((r.proc, valid_until));
                if let Some(since) = self.waiting_since[r.proc as usize].take() {
                    self.longest_wait_ns = self.longest_wait_ns.max(r.at - since);
                }
            }
            What::Released => self.holders.retain(|&(p, _)| p != r.proc),
            What::KeyWritten { token } => self.granted = Some(token),
            What::KeyDeleted { token, requester } => {
                if token != requester {
                    self.foreign_unlocks += 1;
                }
                self.granted = None;
            }
        }
    }
}

#[derive(Default, Clone, Copy, Debug, PartialEq)]
struct Stats {
    events: u64,
    acquisitions: u64,
    commands: u64,
    expired_while_held: u64,
    failed_releases: u64,
    max_client_holders: u32,
    client_lost_locks: u64,
    fingerprint: u64,
    records: u64,
    checker_violations: u64,
}

struct Val {
    #[cfg(not(feature = "redis"))]
    token: u64,
    #[cfg(feature = "redis")]
    token: Small,
    expires_at: u64,
}

/// Server is process 0; clients are 1..=C.
fn run(seed: u64, clients: u32, t_end: u64, hold: u64) -> Stats {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut heap: BinaryHeap<Entry> = BinaryHeap::with_capacity(4 * clients as usize);
    #[cfg(feature = "slab")]
    let (mut slab, mut free): (Vec<Option<Ev>>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut seq: u64 = 0;
    let mut keyspace: HashMap<Vec<u8>, Val> = HashMap::new();
    let mut server_owner: Option<u64> = None;
    let mut client_token = vec![0u64; clients as usize + 1];
    let mut next_token: u64 = 1;
    let mut holders: u32 = 0;
    let mut s = Stats::default();
    let n = clients as usize + 1;

    #[cfg(feature = "links")]
    let mut links: Vec<Link> = (0..n * n)
        .map(|_i| Link {
            cuts: 0,
            loss_windows: 0,
            extra_latency_ns: 0,
            last_delivery: 0,
            #[cfg(feature = "link-streams")]
            rng: ChaCha8Rng::seed_from_u64(seed ^ (0x6e65_7400_0000_0000 | _i as u64)),
        })
        .collect();
    #[cfg(feature = "procs")]
    let procs: Vec<Proc> = (0..n)
        .map(|_| Proc {
            state: RunState::Up,
            incarnation: 0,
            wall_origin_ns: 1_700_000_000_000 * MS,
            drift_ppm: 0,
        })
        .collect();
    #[cfg(feature = "redis")]
    let mut pending_id = vec![0u64; n];
    #[cfg(feature = "redis")]
    let mut next_id = vec![1u64; n];
    #[cfg(feature = "redis")]
    let prefixes: Vec<Small> = (0..n)
        .map(|c| Small::new(format!("c{c}:").as_bytes()))
        .collect();
    #[cfg(feature = "redis")]
    let mut tokens: Vec<Small> = prefixes
        .iter()
        .map(|p| {
            let mut t = *p;
            t.buf[t.len as usize] = b'0';
            t.len += 1;
            t
        })
        .collect();
    #[cfg(feature = "redis")]
    let lock_key = Small::new(b"lock");
    #[cfg(feature = "checks")]
    let mut checks = Checks {
        waiting_since: vec![None; n],
        ..Checks::default()
    };
    #[cfg(feature = "checks")]
    let mut round_start = vec![0u64; n];
    let _ = n;

    macro_rules! push {
        ($t:expr, $ev:expr) => {{
            #[cfg(not(feature = "slab"))]
            heap.push(Entry {
                time: $t,
                seq,
                ev: $ev,
            });
            #[cfg(feature = "slab")]
            {
                let slot = match free.pop() {
                    Some(i) => {
                        slab[i as usize] = Some($ev);
                        i
                    }
                    None => {
                        slab.push(Some($ev));
                        (slab.len() - 1) as u32
                    }
                };
                heap.push(Entry {
                    time: $t,
                    seq,
                    slot,
                });
            }
            seq += 1;
        }};
    }
    // Sends `msg` from `from` to `to` at `now`: the link decides when it arrives.
    macro_rules! send {
        ($now:expr, $from:expr, $to:expr, $msg:expr) => {{
            let (from, to): (u32, u32) = ($from, $to);
            #[cfg(feature = "links")]
            let at = {
                let link = &mut links[from as usize * n + to as usize];
                if link.cuts > 0 || link.loss_windows > 0 {
                    None
                } else {
                    #[cfg(feature = "link-streams")]
                    let d = link.rng.random_range(NET_MIN..=NET_MAX);
                    #[cfg(not(feature = "link-streams"))]
                    let d = rng.random_range(NET_MIN..=NET_MAX);
                    let at = ($now + d + link.extra_latency_ns).max(link.last_delivery);
                    link.last_delivery = at;
                    Some(at)
                }
            };
            #[cfg(not(feature = "links"))]
            let at = Some($now + rng.random_range(NET_MIN..=NET_MAX));
            if let Some(at) = at {
                push!(
                    at,
                    Ev::Deliver {
                        from,
                        to,
                        #[cfg(feature = "procs")]
                        to_incarnation: procs[to as usize].incarnation,
                        msg: $msg,
                    }
                );
            }
        }};
    }
    macro_rules! timer {
        ($now:expr, $proc:expr, $after:expr, $tag:expr) => {{
            let proc: u32 = $proc;
            #[cfg(feature = "procs")]
            let after = procs[proc as usize].true_after($after);
            #[cfg(not(feature = "procs"))]
            let after = $after;
            push!(
                $now + after,
                Ev::Timer {
                    proc,
                    #[cfg(feature = "procs")]
                    incarnation: procs[proc as usize].incarnation,
                    tag: $tag,
                }
            );
        }};
    }
    #[cfg(feature = "checks")]
    macro_rules! record {
        ($at:expr, $proc:expr, $what:expr) => {
            checks.push(Record {
                at: $at,
                proc: $proc,
                what: $what,
            })
        };
    }
    macro_rules! start_attempt {
        ($now:expr, $c:expr) => {{
            let c: u32 = $c;
            let token = next_token;
            next_token += 1;
            client_token[c as usize] = token;
            #[cfg(feature = "checks")]
            {
                round_start[c as usize] = $now;
                record!($now, c, What::Attempt);
            }
            #[cfg(feature = "redis")]
            {
                let id = next_id[c as usize];
                next_id[c as usize] += 1;
                pending_id[c as usize] = id;
                tokens[c as usize].advance(prefixes[c as usize].len as usize);
                let t = tokens[c as usize];
                send!(
                    $now,
                    c,
                    0,
                    Msg::Request {
                        id,
                        cmd: Cmd::Set {
                            key: lock_key,
                            value: t,
                            nx: true,
                            px_ms: TTL_MS,
                        },
                    }
                );
            }
            #[cfg(not(feature = "redis"))]
            send!($now, c, 0, Msg::SetReq { token });
        }};
    }

    for c in 1..=clients {
        start_attempt!(0, c);
    }

    while let Some(e) = heap.pop() {
        if e.time > t_end {
            break;
        }
        let now = e.time;
        s.events += 1;
        #[cfg(not(feature = "slab"))]
        let ev = e.ev;
        #[cfg(feature = "slab")]
        let ev = {
            free.push(e.slot);
            slab[e.slot as usize].take().expect("queued")
        };
        match ev {
            Ev::Deliver {
                from,
                to,
                #[cfg(feature = "procs")]
                to_incarnation,
                msg,
            } => {
                #[cfg(feature = "links")]
                if links[from as usize * n + to as usize].cuts > 0 {
                    continue;
                }
                #[cfg(feature = "procs")]
                let (wall_ms, mono_ns) = {
                    let p = &procs[to as usize];
                    if p.state != RunState::Up || p.incarnation != to_incarnation {
                        continue;
                    }
                    (p.wall_ms(now), p.mono_ns(now))
                };
                #[cfg(not(feature = "procs"))]
                let (wall_ms, mono_ns) = ((now / MS) as i64, now);
                let _ = (wall_ms, mono_ns);
                if to == 0 {
                    // The server.
                    s.commands += 1;
                    let client = from;
                    #[cfg(feature = "redis")]
                    let Msg::Request { id, cmd } = msg else {
                        unreachable!()
                    };
                    #[cfg(feature = "redis")]
                    let reply = match cmd {
                        Cmd::Set {
                            key,
                            value,
                            nx,
                            px_ms,
                        } => {
                            let wall = wall_ms as u64 * MS;
                            let live = match keyspace.get(key.as_bytes()) {
                                Some(v) if v.expires_at > wall => true,
                                Some(_) => {
                                    keyspace.remove(key.as_bytes());
                                    false
                                }
                                None => false,
                            };
                            if nx && live {
                                Rep::Nil
                            } else {
                                keyspace.insert(
                                    key.as_bytes().to_vec(),
                                    Val {
                                        token: value,
                                        expires_at: wall + px_ms * MS,
                                    },
                                );
                                s.acquisitions += 1;
                                if server_owner.is_some() {
                                    s.expired_while_held += 1;
                                }
                                server_owner = Some(client_token[client as usize]);
                                s.fingerprint =
                                    s.fingerprint.rotate_left(7) ^ now ^ (client as u64) << 48;
                                #[cfg(feature = "checks")]
                                record!(now, 0, What::KeyWritten { token: value });
                                Rep::Ok
                            }
                        }
                        Cmd::Eval { script, key, arg } => {
                            assert_eq!(script, UNLOCK_SHA, "unknown script");
                            let wall = wall_ms as u64 * MS;
                            let deleted = match keyspace.get(key.as_bytes()) {
                                Some(v) if v.expires_at > wall && v.token == arg => {
                                    keyspace.remove(key.as_bytes());
                                    #[cfg(feature = "checks")]
                                    record!(
                                        now,
                                        0,
                                        What::KeyDeleted {
                                            token: arg,
                                            requester: arg
                                        }
                                    );
                                    true
                                }
                                Some(v) if v.expires_at <= wall => {
                                    keyspace.remove(key.as_bytes());
                                    false
                                }
                                _ => false,
                            };
                            if deleted {
                                server_owner = None;
                            } else {
                                s.failed_releases += 1;
                            }
                            Rep::Int(deleted as i64)
                        }
                    };
                    #[cfg(feature = "redis")]
                    send!(now, 0, client, Msg::Reply { id, reply });
                    #[cfg(not(feature = "redis"))]
                    match msg {
                        Msg::SetReq { token } => {
                            let live = match keyspace.get(b"lock".as_slice()) {
                                Some(v) if v.expires_at > now => true,
                                Some(_) => {
                                    keyspace.remove(b"lock".as_slice());
                                    false
                                }
                                None => false,
                            };
                            let ok = !live;
                            if ok {
                                keyspace.insert(
                                    b"lock".to_vec(),
                                    Val {
                                        token,
                                        expires_at: now + TTL,
                                    },
                                );
                                s.acquisitions += 1;
                                if server_owner.is_some() {
                                    s.expired_while_held += 1;
                                }
                                server_owner = Some(token);
                                s.fingerprint =
                                    s.fingerprint.rotate_left(7) ^ now ^ (client as u64) << 48;
                            }
                            send!(now, 0, client, Msg::SetRep { ok });
                        }
                        Msg::CadReq { token } => {
                            let deleted = match keyspace.get(b"lock".as_slice()) {
                                Some(v) if v.expires_at > now && v.token == token => {
                                    keyspace.remove(b"lock".as_slice());
                                    true
                                }
                                Some(v) if v.expires_at <= now => {
                                    keyspace.remove(b"lock".as_slice());
                                    false
                                }
                                _ => false,
                            };
                            if deleted {
                                server_owner = None;
                            } else {
                                s.failed_releases += 1;
                            }
                            send!(now, 0, client, Msg::CadRep { deleted });
                        }
                        _ => unreachable!(),
                    }
                } else {
                    // A client.
                    let client = to;
                    #[cfg(feature = "redis")]
                    let (ok, deleted, is_set) = {
                        let Msg::Reply { id, reply } = msg else {
                            unreachable!()
                        };
                        if id != pending_id[client as usize] {
                            continue; // a late reply to an abandoned request
                        }
                        match reply {
                            Rep::Ok => (true, false, true),
                            Rep::Nil => (false, false, true),
                            Rep::Int(n) => (false, n == 1, false),
                        }
                    };
                    #[cfg(not(feature = "redis"))]
                    let (ok, deleted, is_set) = match msg {
                        Msg::SetRep { ok } => (ok, false, true),
                        Msg::CadRep { deleted } => (false, deleted, false),
                        _ => unreachable!(),
                    };
                    if is_set {
                        if ok {
                            holders += 1;
                            s.max_client_holders = s.max_client_holders.max(holders);
                            #[cfg(feature = "checks")]
                            {
                                // validity: TTL from the round's start, on the client's clock
                                let valid_until = round_start[client as usize] + TTL;
                                let _ = mono_ns;
                                record!(
                                    now,
                                    client,
                                    What::Acquired {
                                        token: tokens[client as usize],
                                        valid_until
                                    }
                                );
                            }
                            timer!(now, client, hold, HOLD_DONE);
                        } else {
                            let b = rng.random_range(0..=BACKOFF_MAX);
                            timer!(now, client, b, BACKOFF_DONE);
                        }
                    } else {
                        if !deleted {
                            s.client_lost_locks += 1;
                        }
                        start_attempt!(now, client);
                    }
                }
            }
            Ev::Timer {
                proc,
                #[cfg(feature = "procs")]
                incarnation,
                tag,
            } => {
                #[cfg(feature = "procs")]
                {
                    let p = &procs[proc as usize];
                    if p.state != RunState::Up || p.incarnation != incarnation {
                        continue;
                    }
                    let _ = (p.wall_ms(now), p.mono_ns(now));
                }
                let client = proc;
                if tag == HOLD_DONE {
                    holders -= 1;
                    #[cfg(feature = "checks")]
                    record!(now, client, What::Released);
                    #[cfg(feature = "redis")]
                    {
                        let id = next_id[client as usize];
                        next_id[client as usize] += 1;
                        pending_id[client as usize] = id;
                        send!(
                            now,
                            client,
                            0,
                            Msg::Request {
                                id,
                                cmd: Cmd::Eval {
                                    script: UNLOCK_SHA,
                                    key: lock_key,
                                    arg: tokens[client as usize],
                                },
                            }
                        );
                    }
                    #[cfg(not(feature = "redis"))]
                    {
                        let token = client_token[client as usize];
                        send!(now, client, 0, Msg::CadReq { token });
                    }
                } else {
                    start_attempt!(now, client);
                }
            }
        }
    }
    #[cfg(feature = "checks")]
    {
        s.records = checks.records;
        s.checker_violations = checks.mutual_exclusion_broken + checks.foreign_unlocks;
        let _ = (checks.longest_wait_ns, checks.granted);
    }
    s.fingerprint ^= s.events.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ s.commands;
    s
}

fn main() {
    let mut clients: u32 = 8;
    let mut t_secs: f64 = 10.0;
    let mut seed: u64 = 0;
    let mut reps: u32 = 1;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().expect("missing value");
        match a.as_str() {
            "--clients" => clients = val().parse().unwrap(),
            "--t" => t_secs = val().parse().unwrap(),
            "--seed" => seed = val().parse().unwrap(),
            "--reps" => reps = val().parse().unwrap(),
            other => panic!("unknown arg {other}"),
        }
    }
    let t_end = (t_secs * 1e9) as u64;
    let mut s = Stats::default();
    for r in 0..reps {
        let x = run(seed, clients, t_end, HOLD);
        if r > 0 {
            assert_eq!(x, s, "non-deterministic run");
        }
        s = x;
    }
    println!(
        "events={} acquisitions={} commands={} records={} checker_violations={} expired_while_held={} failed_releases={} max_client_holders={} fingerprint={:016x}",
        s.events,
        s.acquisitions,
        s.commands,
        s.records,
        s.checker_violations,
        s.expired_while_held,
        s.failed_releases,
        s.max_client_holders,
        s.fingerprint
    );
}
