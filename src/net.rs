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
}

impl DropReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Loss => "lost",
            DropReason::Partition => "partitioned",
            DropReason::Down => "destination down",
        }
    }
}

#[derive(Clone, Debug)]
struct Link {
    spec: LinkSpec,
    extra_latency_ns: u64,
    blocked: bool,
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
}

impl Network {
    pub fn new(n: usize, seed: Seed, default: LinkSpec) -> Network {
        let link = Link {
            spec: default,
            extra_latency_ns: 0,
            blocked: false,
            last_delivery: SimTime::ZERO,
            rng: None,
        };
        Network {
            n,
            seed,
            links: vec![link; n * n],
        }
    }

    fn idx(&self, from: ProcId, to: ProcId) -> usize {
        debug_assert!(from.index() < self.n && to.index() < self.n);
        from.index() * self.n + to.index()
    }

    pub fn set_link(&mut self, from: ProcId, to: ProcId, spec: LinkSpec) {
        let i = self.idx(from, to);
        self.links[i].spec = spec;
    }

    pub fn link(&self, from: ProcId, to: ProcId) -> LinkSpec {
        self.links[self.idx(from, to)].spec
    }

    /// Blocks (or unblocks) the directed link `from → to`.
    pub fn set_blocked(&mut self, from: ProcId, to: ProcId, blocked: bool) {
        let i = self.idx(from, to);
        self.links[i].blocked = blocked;
    }

    pub fn is_blocked(&self, from: ProcId, to: ProcId) -> bool {
        self.links[self.idx(from, to)].blocked
    }

    /// Adds latency to a link (a spike); 0 removes it.
    pub fn set_extra_latency(&mut self, from: ProcId, to: ProcId, extra_ns: u64) {
        let i = self.idx(from, to);
        self.links[i].extra_latency_ns = extra_ns;
    }

    pub fn set_loss(&mut self, from: ProcId, to: ProcId, loss: Ratio) {
        let i = self.idx(from, to);
        self.links[i].spec.loss = loss;
    }

    /// Routes a message sent at `now`: its delivery time, or why it is dropped.
    #[inline]
    pub fn route(&mut self, now: SimTime, from: ProcId, to: ProcId) -> Result<SimTime, DropReason> {
        let i = self.idx(from, to);
        let seed = self.seed;
        let n = self.n as u64;
        let link = &mut self.links[i];
        if link.blocked {
            return Err(DropReason::Partition);
        }
        let rng = link
            .rng
            .get_or_insert_with(|| Box::new(seed.stream("net", (from.0 as u64) * n + to.0 as u64)));
        if !link.spec.loss.is_never() && rng.chance(link.spec.loss) {
            return Err(DropReason::Loss);
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
        net.set_blocked(a, b, true);
        assert_eq!(net.route(SimTime::ZERO, a, b), Err(DropReason::Partition));
        assert_eq!(net.route(SimTime::ZERO, b, a), Ok(SimTime(10)));
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
