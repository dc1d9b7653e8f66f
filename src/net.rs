//! The simulated network: per-link latency, loss, partitions and FIFO connections.
//!
//! A *connection* is one directed pair (from, to). Delivery on a connection is FIFO: a
//! message is never delivered before one sent earlier on the same connection (its delivery
//! time is at least the previous one's, and the loop breaks ties by send order). Every
//! directed link draws latency and loss from its own RNG stream, so adding a process does not
//! change what existing links draw.

use crate::rng::{Prng, Ratio, Seed};
use crate::time::{ProcId, SimTime};

/// Largest one-way latency a link accepts (1 hour): beyond it a model is a typo.
pub const LATENCY_NS_LIMIT: u64 = 3_600 * crate::time::NS_PER_S;

/// How one directed link behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSpec {
    pub latency_ns_min: u64,
    // Invariant: latency_ns_min <= latency_ns_max <= LATENCY_NS_LIMIT.
    pub latency_ns_max: u64,
    pub loss: Ratio,
}

impl LinkSpec {
    pub fn new(latency_ns_min: u64, latency_ns_max: u64, loss: Ratio) -> LinkSpec {
        assert!(latency_ns_min <= latency_ns_max && latency_ns_max <= LATENCY_NS_LIMIT);
        LinkSpec {
            latency_ns_min,
            latency_ns_max,
            loss,
        }
    }
}

/// Why a message did not arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    Loss,
    Partition,
    /// The destination was down (crashed) or restarted since the message was sent.
    Down,
    /// The destination had crashed on a host that stayed up: the request was refused, and
    /// the sender is told so (`Msg::Refused`).
    Refused,
}

impl DropReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Loss => "lost",
            DropReason::Partition => "partitioned",
            DropReason::Down => "destination down",
            DropReason::Refused => "connection refused",
        }
    }
}

#[derive(Clone, Debug)]
struct Link {
    spec: LinkSpec,
    /// Sum of the open latency spikes on this link.
    extra_latency_ns: u64,
    /// Open cuts of this link: it carries only while none is open (overlapping partitions
    /// compose, the end of one does not heal another).
    cuts: u32,
    /// Open loss windows on this link (their ratios are in `Network::loss_windows`).
    loss_windows: u32,
    last_delivery: SimTime,
    /// Made on the link's first message, boxed: an n×n matrix of unused links stays small
    /// (a 320-process model has 102,400 links, most never used).
    rng: Option<Box<Prng>>,
}

/// All links of a world, as an n×n matrix of directed links.
#[derive(Clone, Debug)]
pub struct Network {
    n: usize,
    seed: Seed,
    // Invariant: links.len() == n * n; index from * n + to.
    links: Vec<Link>,
    /// The open loss windows of each link that has any, by link index, in opening order.
    // Invariant: loss_windows[i].len() == links[i].loss_windows, and no entry is empty.
    loss_windows: std::collections::BTreeMap<usize, Vec<Ratio>>,
}

impl Network {
    pub fn new(n: usize, seed: Seed, default: LinkSpec) -> Network {
        let link = Link {
            spec: default,
            extra_latency_ns: 0,
            cuts: 0,
            loss_windows: 0,
            last_delivery: SimTime::ZERO,
            rng: None,
        };
        Network {
            n,
            seed,
            links: vec![link; n * n],
            loss_windows: Default::default(),
        }
    }

    fn idx(&self, from: ProcId, to: ProcId) -> usize {
        debug_assert!(from.index() < self.n && to.index() < self.n);
        from.index() * self.n + to.index()
    }

    pub fn link(&self, from: ProcId, to: ProcId) -> LinkSpec {
        self.links[self.idx(from, to)].spec
    }

    /// Opens (`open`) or closes one cut of the directed link `from → to`.
    pub fn cut(&mut self, from: ProcId, to: ProcId, open: bool) {
        let i = self.idx(from, to);
        let cuts = &mut self.links[i].cuts;
        if open {
            *cuts += 1;
        } else {
            assert!(*cuts > 0, "a cut closed that was never opened");
            *cuts -= 1;
        }
    }

    pub fn is_blocked(&self, from: ProcId, to: ProcId) -> bool {
        self.links[self.idx(from, to)].cuts > 0
    }

    /// Opens or closes a latency spike of `extra_ns` on a link; spikes add up.
    pub fn spike(&mut self, from: ProcId, to: ProcId, extra_ns: u64, open: bool) {
        let i = self.idx(from, to);
        let extra = &mut self.links[i].extra_latency_ns;
        if open {
            *extra = extra.saturating_add(extra_ns);
        } else {
            assert!(*extra >= extra_ns, "a spike closed that was never opened");
            *extra -= extra_ns;
        }
    }

    /// Opens or closes a loss window on a link; each open window drops independently.
    pub fn loss_window(&mut self, from: ProcId, to: ProcId, loss: Ratio, open: bool) {
        let i = self.idx(from, to);
        if open {
            self.loss_windows.entry(i).or_default().push(loss);
            self.links[i].loss_windows += 1;
        } else {
            let ws = self
                .loss_windows
                .get_mut(&i)
                .expect("a loss window closed that was never opened");
            let k = ws
                .iter()
                .position(|w| *w == loss)
                .expect("a loss window closed that was never opened");
            ws.remove(k);
            if ws.is_empty() {
                self.loss_windows.remove(&i);
            }
            self.links[i].loss_windows -= 1;
        }
    }

    /// Routes a message sent at `now`: its delivery time, or why it is dropped.
    #[inline]
    pub fn route(&mut self, now: SimTime, from: ProcId, to: ProcId) -> Result<SimTime, DropReason> {
        let i = self.idx(from, to);
        let seed = self.seed;
        let n = self.n as u64;
        let link = &mut self.links[i];
        let windows = &self.loss_windows;
        if link.cuts > 0 {
            return Err(DropReason::Partition);
        }
        let rng = link
            .rng
            .get_or_insert_with(|| Box::new(seed.stream("net", (from.0 as u64) * n + to.0 as u64)));
        if !link.spec.loss.is_never() && rng.chance(link.spec.loss) {
            return Err(DropReason::Loss);
        }
        if link.loss_windows > 0 {
            // One draw per open window, in opening order: independent causes of loss.
            for w in &windows[&i] {
                if rng.chance(*w) {
                    return Err(DropReason::Loss);
                }
            }
        }
        let latency = rng.range_inclusive(link.spec.latency_ns_min, link.spec.latency_ns_max);
        let at = now
            .plus_ns(latency.saturating_add(link.extra_latency_ns))
            .max(link.last_delivery);
        link.last_delivery = at;
        Ok(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_fifo_even_when_latency_shrinks() {
        let mut net = Network::new(2, Seed(3), LinkSpec::new(1_000, 1_000_000, Ratio::NEVER));
        let (a, b) = (ProcId(0), ProcId(1));
        let mut last = SimTime::ZERO;
        for i in 0..1000u64 {
            let at = net.route(SimTime(i * 10), a, b).unwrap();
            assert!(at >= last);
            last = at;
        }
    }

    #[test]
    fn partitions_can_be_one_way() {
        let mut net = Network::new(2, Seed(3), LinkSpec::new(10, 10, Ratio::NEVER));
        let (a, b) = (ProcId(0), ProcId(1));
        net.cut(a, b, true);
        assert_eq!(net.route(SimTime::ZERO, a, b), Err(DropReason::Partition));
        assert_eq!(net.route(SimTime::ZERO, b, a), Ok(SimTime(10)));
    }

    #[test]
    fn a_cut_inside_a_longer_cut_does_not_heal_the_link_when_it_ends() {
        let mut net = Network::new(2, Seed(3), LinkSpec::new(10, 10, Ratio::NEVER));
        let (a, b) = (ProcId(0), ProcId(1));
        net.cut(a, b, true);
        net.cut(a, b, true);
        net.cut(a, b, false);
        assert_eq!(net.route(SimTime::ZERO, a, b), Err(DropReason::Partition));
        net.cut(a, b, false);
        assert_eq!(net.route(SimTime::ZERO, a, b), Ok(SimTime(10)));
    }

    #[test]
    fn overlapping_latency_spikes_add_up_and_end_separately() {
        let mut net = Network::new(2, Seed(3), LinkSpec::new(10, 10, Ratio::NEVER));
        let (a, b) = (ProcId(0), ProcId(1));
        net.spike(a, b, 100, true);
        net.spike(a, b, 1_000, true);
        assert_eq!(net.route(SimTime::ZERO, a, b), Ok(SimTime(1_110)));
        net.spike(a, b, 100, false);
        assert_eq!(net.route(SimTime(10_000), a, b), Ok(SimTime(11_010)));
    }

    #[test]
    fn the_end_of_a_loss_window_keeps_the_base_loss_and_the_other_windows() {
        let quarter = Ratio::new(1, 4).unwrap();
        let mut net = Network::new(2, Seed(9), LinkSpec::new(10, 10, quarter));
        let (a, b) = (ProcId(0), ProcId(1));
        let lost = |net: &mut Network| {
            (0..4000)
                .filter(|_| net.route(SimTime::ZERO, a, b).is_err())
                .count()
        };
        net.loss_window(a, b, Ratio::ALWAYS, true);
        net.loss_window(a, b, Ratio::new(1, 2).unwrap(), true);
        assert_eq!(lost(&mut net), 4000);
        net.loss_window(a, b, Ratio::ALWAYS, false);
        // 1 - 3/4 * 1/2 = 5/8 of 4000 = 2500.
        let l = lost(&mut net);
        assert!((2350..2650).contains(&l), "{l}");
        net.loss_window(a, b, Ratio::new(1, 2).unwrap(), false);
        let l = lost(&mut net);
        assert!((850..1150).contains(&l), "{l}");
    }

    #[test]
    fn loss_drops_roughly_its_share() {
        let mut net = Network::new(2, Seed(9), LinkSpec::new(10, 10, Ratio::new(1, 4).unwrap()));
        let lost = (0..4000)
            .filter(|_| net.route(SimTime::ZERO, ProcId(0), ProcId(1)).is_err())
            .count();
        assert!((800..1200).contains(&lost), "{lost}");
    }
}
