//! What the Redis-node tests share: a master `M` and its replica `R` joined without a
//! network, their messages delivered by hand.

use distlock_sim::proto::{Msg, Reply};
use distlock_sim::redis::node::RedisNode;
use distlock_sim::time::ProcId;

pub const M: ProcId = ProcId(0);
pub const R: ProcId = ProcId(1);

/// Delivers every queued replication message between the two nodes at `now` (no latency),
/// until both are quiet, and returns the pub/sub pushes they sent: (from, to, message).
pub fn pump(m: &mut RedisNode, r: &mut RedisNode, now: i64) -> Vec<(ProcId, ProcId, Reply)> {
    let mut pushes = Vec::new();
    for _ in 0..10 {
        let from_m: Vec<(ProcId, Msg)> = m.drain_outbox().collect();
        let from_r: Vec<(ProcId, Msg)> = r.drain_outbox().collect();
        if from_m.is_empty() && from_r.is_empty() {
            break;
        }
        for (to, msg) in from_m {
            match msg {
                Msg::Repl(x) if to == R => r.on_repl(now, 0, M, x),
                Msg::Push { reply } => pushes.push((M, to, reply)),
                _ => {}
            }
        }
        for (to, msg) in from_r {
            match msg {
                Msg::Repl(x) if to == M => m.on_repl(now, 0, R, x),
                Msg::Push { reply } => pushes.push((R, to, reply)),
                _ => {}
            }
        }
    }
    pushes
}
