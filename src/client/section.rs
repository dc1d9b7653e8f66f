//! The critical section every lock client runs once it believes it holds the lock, written
//! once: read the resource → hold → write it → release → think → next round. An algorithm
//! supplies its acquire and release protocol and a few hooks (`SectionHost`); the section
//! owns what happens between "acquired" and "give it back": the resource requests, the
//! version read, the hold and think draws, the `Released` and `Lost` observations and the
//! count of rounds done.
//!
//! The hooks leave each algorithm its own request bookkeeping (ids, deadlines and timeouts)
//! because those are what its trace is made of; the section only says when to send what.

use crate::client::timer::NsRange;
use crate::history::Observation;
use crate::process::Cx;
use crate::proto::{Bytes, Msg};
use crate::time::ProcId;

/// Where the section is. Outside it the algorithm's own phase rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Outside,
    /// Waiting for the resource's answer to the read that opens the section.
    Reading,
    /// Holding (a step timer armed for the hold).
    Holding,
    /// Waiting for the resource's answer to the write that closes the section.
    Writing,
}

/// The section's state and the parts of the client's configuration it runs on.
#[derive(Clone, Debug)]
pub struct Section {
    /// Index of the lock in the model's lock table.
    pub lock: u32,
    pub resource: Option<ProcId>,
    /// Time spent between reading and writing the resource.
    pub hold: NsRange,
    /// Time between a release and the next attempt.
    pub think: NsRange,
    /// Stop after this many completed sections (None: run until the end).
    pub rounds: Option<u64>,
    /// With no think time (`think.max == 0`), start the next attempt at once rather than
    /// through a timer event. Every client does, but the consensus client, which arms a
    /// zero-length timer (and draws for it): kept so, as its traces were pinned with it.
    pub think_zero_at_once: bool,
    stage: Stage,
    /// The fencing token the resource operations carry (None: the algorithm has none).
    fence: Option<u64>,
    /// The resource's version as read at the start of this section; the write is based on it.
    base_version: u64,
    /// `Lost` was reported in this section: the client no longer believes it holds the lock,
    /// so its release reports no `Released`.
    lost: bool,
    // Invariant: counts sections whose release was started, less those given back unwritten.
    rounds_done: u64,
}

impl Section {
    pub fn new(
        lock: u32,
        resource: Option<ProcId>,
        hold: NsRange,
        think: NsRange,
        rounds: Option<u64>,
    ) -> Section {
        Section {
            lock,
            resource,
            hold,
            think,
            rounds,
            think_zero_at_once: true,
            stage: Stage::Outside,
            fence: None,
            base_version: 0,
            lost: false,
            rounds_done: 0,
        }
    }

    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// All `rounds` are done: the client stops.
    pub fn finished(&self) -> bool {
        self.rounds.is_some_and(|r| self.rounds_done >= r)
    }

    pub fn rounds_done(&self) -> u64 {
        self.rounds_done
    }

    /// `Lost` was reported since the lock was last acquired.
    pub fn lost(&self) -> bool {
        self.lost
    }

    /// The section ended without a release of the section's own (a reported loss, a crash):
    /// the next resource answer or hold timer belongs to no section.
    pub fn abandon(&mut self) {
        self.stage = Stage::Outside;
        self.lost = false;
    }
}

/// What an algorithm gives the section. Everything with a default is the section itself.
pub trait SectionHost {
    fn section(&mut self) -> &mut Section;
    /// The token of the lock held (named in `Released` and `Lost`).
    fn token(&self) -> Bytes;
    /// A fresh request id for a resource operation, noted as the one awaited.
    fn resource_request_id(&mut self) -> u64;
    /// Resource request `id` was sent: its timeout starts.
    fn await_resource(&mut self, cx: &mut Cx<'_>, id: u64);
    /// Arms the step timer (the hold, or the think before the next attempt); an earlier one
    /// goes stale.
    fn arm_step(&mut self, cx: &mut Cx<'_>, after_ns: u64);
    /// The algorithm's phase becomes "in the critical section" (the section's stage rules).
    fn enter_phase_section(&mut self);
    /// The algorithm's phase becomes "waiting for the step timer to start an attempt".
    fn enter_phase_waiting(&mut self);
    /// The release protocol, after `Released` was observed.
    fn release_lock(&mut self, cx: &mut Cx<'_>);
    /// The next acquisition attempt (or the end, when `finished`).
    fn next_attempt(&mut self, cx: &mut Cx<'_>);

    /// The lock is held (the algorithm observed `Acquired`): read the resource, or hold at
    /// once when there is none. `fence` goes with every resource operation of the section.
    fn enter_section(&mut self, cx: &mut Cx<'_>, fence: Option<u64>) {
        self.enter_phase_section();
        let s = self.section();
        s.fence = fence;
        s.lost = false;
        match s.resource {
            Some(resource) => {
                s.stage = Stage::Reading;
                let id = self.resource_request_id();
                cx.send(resource, Msg::ResourceRead { id, token: fence });
                self.await_resource(cx, id);
            }
            None => self.hold(cx),
        }
    }

    fn hold(&mut self, cx: &mut Cx<'_>) {
        let s = self.section();
        s.stage = Stage::Holding;
        let h = s.hold;
        let d = cx.rng.range_inclusive(h.min, h.max);
        self.arm_step(cx, d);
    }

    /// The hold is over: write the resource, or release when there is none.
    fn end_section(&mut self, cx: &mut Cx<'_>) {
        let s = self.section();
        match s.resource {
            Some(resource) => {
                s.stage = Stage::Writing;
                let (fence, base_version) = (s.fence, s.base_version);
                let id = self.resource_request_id();
                cx.send(
                    resource,
                    Msg::ResourceWrite {
                        id,
                        token: fence,
                        base_version,
                    },
                );
                self.await_resource(cx, id);
            }
            None => self.release(cx),
        }
    }

    /// The resource answered the awaited request (the host matched its id).
    fn on_resource_ack(&mut self, cx: &mut Cx<'_>, version: u64) {
        match self.section().stage {
            Stage::Reading => {
                self.section().base_version = version;
                self.hold(cx);
            }
            Stage::Writing => self.release(cx),
            Stage::Outside | Stage::Holding => {}
        }
    }

    /// A timer the section waits on fired: the hold's step timer, or the timeout of the
    /// awaited resource request (the host decided it is current).
    ///
    /// An unanswered read leaves the client not knowing the resource's state, so it must not
    /// write: a write on the previous round's `base_version` would be a lost update no real
    /// client makes. A real client's read raises a timeout error, and its `with lock:` (or
    /// `try … finally: unlock`) gives the lock back on the way out, without writing; so does
    /// this one. (Re-reading instead would keep the lock through an outage of the resource,
    /// and a TTL is not meant for that.) An unanswered write ends the section as an answered
    /// one does.
    fn on_section_timer(&mut self, cx: &mut Cx<'_>) {
        match self.section().stage {
            Stage::Reading | Stage::Writing => self.on_resource_timeout(cx),
            Stage::Holding => self.on_hold_timer(cx),
            Stage::Outside => {}
        }
    }

    /// The awaited resource request went unanswered (see `on_section_timer`).
    fn on_resource_timeout(&mut self, cx: &mut Cx<'_>) {
        match self.section().stage {
            Stage::Reading => self.give_back(cx),
            Stage::Writing => self.release(cx),
            Stage::Holding | Stage::Outside => {}
        }
    }

    /// The hold's step timer fired: the hold is over.
    fn on_hold_timer(&mut self, cx: &mut Cx<'_>) {
        if self.section().stage == Stage::Holding {
            self.end_section(cx);
        }
    }

    /// Ends the section: the round counts, `Released` is observed (unless `Lost` was), the
    /// lock is given back.
    fn release(&mut self, cx: &mut Cx<'_>) {
        let s = self.section();
        s.stage = Stage::Outside;
        s.rounds_done += 1;
        if !s.lost {
            let lock = s.lock;
            let token = self.token();
            cx.observe(Observation::Released { lock, token });
        }
        self.release_lock(cx);
    }

    /// Ends a section that did not happen (no fencing token, no read): the lock is released
    /// as usual, but the round does not count towards `rounds`, so the client tries again.
    fn give_back(&mut self, cx: &mut Cx<'_>) {
        self.release(cx);
        self.section().rounds_done -= 1;
    }

    /// The client stops believing it holds the lock, for `reason`. How the section ends is the
    /// algorithm's choice (cut short and released, or left for the next round).
    fn report_lost(&mut self, cx: &mut Cx<'_>, reason: &'static str) {
        let s = self.section();
        s.lost = true;
        let lock = s.lock;
        let token = self.token();
        cx.observe(Observation::Lost {
            lock,
            token,
            reason,
        });
    }

    /// After a release: the think time, then the next attempt (at once with no think time,
    /// without a timer event).
    fn think(&mut self, cx: &mut Cx<'_>) {
        let (t, at_once) = (self.section().think, self.section().think_zero_at_once);
        if at_once && t.max == 0 {
            self.next_attempt(cx);
            return;
        }
        self.enter_phase_waiting();
        let d = cx.rng.range_inclusive(t.min, t.max);
        self.arm_step(cx, d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::Output;
    use crate::rng::Seed;

    const RESOURCE: ProcId = ProcId(9);

    /// A host with no protocol of its own: it counts what the section asks of it.
    struct Host {
        section: Section,
        next_id: u64,
        releases: u32,
        attempts: u32,
        waiting: bool,
    }

    impl SectionHost for Host {
        fn section(&mut self) -> &mut Section {
            &mut self.section
        }
        fn token(&self) -> Bytes {
            Bytes::from("t-1")
        }
        fn resource_request_id(&mut self) -> u64 {
            self.next_id += 1;
            self.next_id
        }
        fn await_resource(&mut self, _cx: &mut Cx<'_>, _id: u64) {}
        fn arm_step(&mut self, cx: &mut Cx<'_>, after_ns: u64) {
            cx.set_timer(after_ns, 0);
        }
        fn enter_phase_section(&mut self) {
            self.waiting = false;
        }
        fn enter_phase_waiting(&mut self) {
            self.waiting = true;
        }
        fn release_lock(&mut self, _cx: &mut Cx<'_>) {
            self.releases += 1;
        }
        fn next_attempt(&mut self, _cx: &mut Cx<'_>) {
            self.attempts += 1;
        }
    }

    fn host(resource: Option<ProcId>, think: NsRange) -> Host {
        Host {
            section: Section::new(0, resource, NsRange::fixed(5), think, Some(1)),
            next_id: 0,
            releases: 0,
            attempts: 0,
            waiting: false,
        }
    }

    fn run(h: &mut Host, f: impl FnOnce(&mut Host, &mut Cx<'_>)) -> Vec<Output> {
        let mut prng = Seed(1).stream("section", 0);
        let mut out = Vec::new();
        let mut cx = Cx::new(ProcId(1), 0, 0, &mut prng, &mut out);
        f(h, &mut cx);
        out
    }

    fn released(out: &[Output]) -> usize {
        out.iter()
            .filter(|o| matches!(o, Output::Observe(Observation::Released { .. })))
            .count()
    }

    #[test]
    fn a_section_writes_on_the_version_it_read_with_its_fence_and_counts_its_round() {
        let mut h = host(Some(RESOURCE), NsRange::fixed(0));
        let out = run(&mut h, |h, cx| h.enter_section(cx, Some(4)));
        assert!(matches!(
            out[..],
            [Output::Send {
                to: RESOURCE,
                msg: Msg::ResourceRead {
                    id: 1,
                    token: Some(4)
                }
            }]
        ));
        let out = run(&mut h, |h, cx| h.on_resource_ack(cx, 7));
        assert!(matches!(out[..], [Output::Timer { after_ns: 5, .. }]));
        assert_eq!(h.section.stage(), Stage::Holding);
        let out = run(&mut h, |h, cx| h.on_section_timer(cx));
        assert!(matches!(
            out[..],
            [Output::Send {
                msg: Msg::ResourceWrite {
                    id: 2,
                    token: Some(4),
                    base_version: 7
                },
                ..
            }]
        ));
        let out = run(&mut h, |h, cx| h.on_resource_ack(cx, 8));
        assert_eq!(released(&out), 1);
        assert_eq!((h.releases, h.section.rounds_done()), (1, 1));
        assert!(h.section.finished());
    }

    #[test]
    fn a_read_that_times_out_gives_the_lock_back_unwritten_and_the_round_does_not_count() {
        let mut h = host(Some(RESOURCE), NsRange::fixed(0));
        run(&mut h, |h, cx| h.enter_section(cx, None));
        let out = run(&mut h, |h, cx| h.on_section_timer(cx));
        assert!(
            !out.iter().any(|o| matches!(
                o,
                Output::Send {
                    msg: Msg::ResourceWrite { .. },
                    ..
                }
            )),
            "{out:?}"
        );
        assert_eq!(released(&out), 1);
        assert_eq!((h.releases, h.section.rounds_done()), (1, 0));
        assert!(!h.section.finished());
        // A late answer to the read belongs to no section now.
        let out = run(&mut h, |h, cx| h.on_resource_ack(cx, 3));
        assert!(out.is_empty(), "{out:?}");
    }

    #[test]
    fn a_release_after_a_reported_loss_observes_lost_and_no_released() {
        let mut h = host(None, NsRange::fixed(0));
        run(&mut h, |h, cx| h.enter_section(cx, None));
        let out = run(&mut h, |h, cx| {
            h.report_lost(cx, "validity ran out");
            h.release(cx);
        });
        assert!(matches!(
            out[..],
            [Output::Observe(Observation::Lost {
                reason: "validity ran out",
                ..
            })]
        ));
        assert_eq!(h.releases, 1);
        // The next section reports its release again.
        run(&mut h, |h, cx| h.enter_section(cx, None));
        assert_eq!(released(&run(&mut h, |h, cx| h.release(cx))), 1);
    }

    #[test]
    fn no_think_time_starts_at_once_unless_the_client_keeps_its_zero_timer() {
        let mut h = host(None, NsRange::fixed(0));
        let out = run(&mut h, |h, cx| h.think(cx));
        assert!(out.is_empty() && h.attempts == 1 && !h.waiting);
        h.section.think_zero_at_once = false;
        let out = run(&mut h, |h, cx| h.think(cx));
        assert!(matches!(out[..], [Output::Timer { after_ns: 0, .. }]));
        assert!(h.attempts == 1 && h.waiting);
    }
}
