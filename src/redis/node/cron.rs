//! The server cron as a periodic timer of the engine (`sim::periodic`): a tick every 100 ms
//! of the node's monotonic clock, an event only where a tick can change what anyone
//! observes — a key is due, or the node has replicas, blocked WAIT clients, BLPOP clients
//! with a timeout or keys outside db 0 (`tick_due`). Every other tick only moves state
//! nobody sees until the next event at the node (table sizes, the replication ack clock,
//! the disk): the engine hands those to the node, in order and at their own clock readings,
//! before the node next handles anything (`skipped_ticks`). So removal times, their records
//! and every later tick are those of a server that ticked throughout; the node itself reads
//! only its local clocks.

use crate::process::{Cx, SkippedTicks, TickDue};
use crate::redis::node::{CRON_PERIOD_NS, RedisProcess, TIMER_CRON};
use crate::redis::replication::ACK_PERIOD_NS;

/// Which cron ticks are events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CronMode {
    /// Every tick, each re-armed by the one before (the reference the sleeping cron is
    /// compared with, and what a node driven by hand gets).
    EveryTick,
    /// Only the points where a tick can change what is observed (the engine's periodic
    /// timer).
    WhenDue,
}

/// The node's side of the cron.
#[derive(Clone, Debug)]
pub struct CronState {
    pub mode: CronMode,
    /// The node arms its own next tick after each one (`EveryTick`, or a sink that keeps no
    /// periodic timer).
    self_driven: bool,
    /// Inputs (keys, keys with a deadline) for which the tables are known to be where a
    /// skipped tick leaves them.
    tables_settled_for: Option<(u64, u64)>,
}

impl Default for CronState {
    fn default() -> Self {
        CronState {
            mode: CronMode::WhenDue,
            self_driven: false,
            tables_settled_for: None,
        }
    }
}

impl RedisProcess {
    /// Which cron ticks are events (before the run starts; `WhenDue` by default).
    pub fn set_cron_mode(&mut self, mode: CronMode) {
        self.cron.mode = mode;
    }

    /// Arms the first tick of a start, `first_ns` of monotonic time from now.
    pub(super) fn start_cron(&mut self, cx: &mut Cx<'_>, first_ns: u64) {
        self.cron.tables_settled_for = None;
        self.cron.self_driven = !(self.cron.mode == CronMode::WhenDue
            && cx.start_periodic(first_ns, CRON_PERIOD_NS, TIMER_CRON));
        if self.cron.self_driven {
            cx.set_timer(first_ns, TIMER_CRON);
        }
    }

    /// A cron tick: the node's cron, then (when the node drives its own ticks) the next one.
    pub(super) fn cron_timer(&mut self, cx: &mut Cx<'_>) {
        for (to, id, reply) in self.node.cron(cx.wall_ms, cx.mono_ns) {
            cx.send(to, crate::proto::Msg::Reply { id, reply });
        }
        self.flush(cx);
        self.cron.tables_settled_for = None;
        if self.cron.self_driven {
            cx.set_timer(CRON_PERIOD_NS, TIMER_CRON);
        }
    }

    /// Ticks the engine did not make events of, before the node's next event. Returns
    /// whether they may have changed what `cron_due` reads.
    pub(super) fn skipped_ticks(&mut self, ticks: &SkippedTicks<'_>) -> bool {
        let n = ticks.count();
        if !self.node.cron_is_light() {
            self.cron.tables_settled_for = None;
            // A whole skipped tick (of a node with a disk to write, say) runs the node's
            // cron: taken as a change for the plan too. A light one moves only the tables
            // and the ack clock, which the plan does not read.
            for k in 0..n {
                self.node.skipped_cron(ticks.wall_ms(k), ticks.mono_ns(k));
            }
            return true;
        }
        let inputs = self.node.light_tick_inputs();
        if self.cron.tables_settled_for != Some(inputs) {
            for _ in 0..n {
                if !self.node.skipped_light_tables(inputs) {
                    self.cron.tables_settled_for = Some(inputs);
                    break;
                }
            }
        }
        // The replication cron of a master without replicas: its ack clock moves to a
        // tick's reading once a second has passed on it.
        let last_mono_ns = ticks.mono_ns(n - 1);
        let repl = &mut self.node.repl;
        if last_mono_ns.saturating_sub(repl.last_ack_sent_mono_ns) >= ACK_PERIOD_NS {
            for k in 0..n {
                let mono_ns = ticks.mono_ns(k);
                if mono_ns.saturating_sub(repl.last_ack_sent_mono_ns) >= ACK_PERIOD_NS {
                    repl.last_ack_sent_mono_ns = mono_ns;
                }
            }
        }
        repl.mono_ns = last_mono_ns;
        false
    }

    /// Which ticks can change what is observed.
    pub(super) fn cron_due(&mut self) -> TickDue {
        if self.node.cron_must_tick() {
            return TickDue::Every;
        }
        match self.node.earliest_expiry_ms() {
            Some(t) => TickDue::WallPast(t),
            None => TickDue::Never,
        }
    }

    /// After a message: tells the engine when what `cron_due` reads may have changed — a
    /// command propagated an effect or ran a Lua script, or the process handled a message
    /// other than a lock command on its fast path (`RedisNode::wrote`). The fast path's
    /// other outcomes (a refused SET NX, an unlock of a key that changed hands) change no
    /// deadline, role, replica, WAIT client or db.
    #[inline]
    pub(super) fn cron_after_message(&mut self, cx: &mut Cx<'_>) {
        if std::mem::take(&mut self.node.wrote) {
            cx.tick_due_changed();
        }
    }
}
