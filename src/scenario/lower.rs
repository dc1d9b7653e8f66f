//! A scenario built into a world for one seed: its processes, network and clocks, the
//! scripted faults, the random ones the seed draws (the swarm's narrowed first) and the
//! triggers.

use crate::client::Resource;
use crate::client::consensus::{ConsensusService, ConsensusServiceConfig};
use crate::clock::NodeClock;
use crate::net::LinkSpec;
use crate::redis::node::{Fsync, Persistence};
use crate::redis::sentinel::{Sentinel, SentinelConfig};
use crate::redis::{RedisConfig, RedisProcess};
use crate::rng::{Ratio, Seed};
use crate::scenario::clients::ClientFactory;
use crate::scenario::faults::{FaultEntry, Span, When};
use crate::scenario::model::{ProcKind, Scenario};
use crate::scenario::schema::*;
use crate::scenario::units::{ClockSpec, Name};
use crate::sim::adversary::Trigger;
use crate::sim::{Actor, Fault, ProcSpec, TraceMode, World};
use crate::time::{NS_PER_MS, NS_PER_S, ProcId, SimTime};

impl Scenario {
    pub(crate) fn clock(&self, spec: &ClockSpec) -> crate::clock::NodeClock {
        spec.clock(self.epoch_unix_ms)
    }

    /// Builds the world for `seed`: processes, network, scripted faults and the random
    /// faults this seed draws (returned as the realised schedule).
    pub fn build(&self, seed: u64, trace: TraceMode) -> (World, Vec<Fault>) {
        self.build_with(seed, trace, None)
    }

    /// Like `build`, but every client is made by `custom` from the configuration the model
    /// gives it: run your own lock algorithm in the model's world (nodes, resource, network,
    /// faults) on the same engine. See docs/custom-algorithm.md.
    pub fn build_with(
        &self,
        seed: u64,
        trace: TraceMode,
        custom: Option<&ClientFactory>,
    ) -> (World, Vec<Fault>) {
        let m = &self.model;
        let mut specs = Vec::with_capacity(self.procs.len());
        let peers: Vec<(crate::proto::Bytes, ProcId)> = m
            .nodes
            .iter()
            .map(|n| {
                (
                    crate::proto::Bytes::from(n.name.0.as_str()),
                    self.proc_id(&n.name.0),
                )
            })
            .collect();
        for (node_index, n) in m.nodes.iter().enumerate() {
            let config = RedisConfig {
                observe_keys: true,
                name: crate::proto::Bytes::from(n.name.0.as_str()),
                peers: peers.clone(),
                replica_of: n.replica_of.as_ref().map(|r| self.proc_id(&r.0)),
                min_replicas_to_write: n.min_replicas_to_write.map_or(0, |b| b.0 as u32),
                min_replicas_max_lag_s: n.min_replicas_max_lag.map_or(10, |d| d.ns() / NS_PER_S),
                relative_ttl_propagation: n.relative_ttl_propagation,
                persistence: match n.persistence.map(|p| p.value) {
                    None | Some(PersistenceSpec::None) => Persistence::None,
                    Some(PersistenceSpec::Rdb { every }) => Persistence::Rdb {
                        every_ns: every.ns(),
                    },
                    Some(PersistenceSpec::Aof { fsync }) => Persistence::Aof(match fsync {
                        FsyncSpec::Always => Fsync::Always,
                        FsyncSpec::Everysec => Fsync::EverySec,
                        FsyncSpec::No => Fsync::No,
                    }),
                },
            };
            specs.push(ProcSpec {
                name: n.name.0.clone(),
                actor: Actor::Redis(Box::new(
                    RedisProcess::new(config)
                        .with_cron_phase(Seed(seed).stream("cron-phase", node_index as u64)),
                )),
                clock: self.clock(&n.clock),
                start_at: crate::time::SimTime::ZERO,
            });
        }
        let sentinel_ids: Vec<ProcId> = self
            .procs
            .iter()
            .enumerate()
            .filter(|(_, (_, k))| *k == ProcKind::Sentinel)
            .map(|(i, _)| ProcId(i as u32))
            .collect();
        let resource_id = m.resource.as_ref().map(|r| {
            specs.push(ProcSpec {
                name: r.name.0.clone(),
                actor: Actor::Resource(Resource::new(r.fencing)),
                clock: NodeClock::perfect(self.epoch_unix_ms),
                start_at: crate::time::SimTime::ZERO,
            });
            ProcId((specs.len() - 1) as u32)
        });
        let proc_id = |n: &str| self.proc_id(n);
        let lowering = crate::scenario::clients::Lowering {
            proc_id: &proc_id,
            epoch_unix_ms: self.epoch_unix_ms,
            seed: Seed(seed),
            resource: resource_id,
            sentinels: &sentinel_ids,
            consensus: m.consensus.as_ref().map(|c| self.proc_id(&c.name.0)),
            custom,
        };
        let keys = self.lock_keys();
        for g in m.clients.iter() {
            let key = g.key_bytes();
            let lock = keys
                .iter()
                .position(|k| *k == key)
                .expect("every key listed") as u32;
            g.lower(&lowering, lock, &mut specs);
        }
        if let Some(sp) = &m.sentinels {
            let nodes: Vec<(ProcId, String, u32)> = m
                .nodes
                .iter()
                .map(|n| {
                    (
                        self.proc_id(&n.name.0),
                        n.name.0.clone(),
                        n.priority.map_or(100, |p| p.0 as u32),
                    )
                })
                .collect();
            for &id in &sentinel_ids {
                let config = SentinelConfig {
                    sentinels: sentinel_ids.clone(),
                    nodes: nodes.clone(),
                    initial_master: self.proc_id(&sp.monitor.0),
                    quorum: sp.quorum.0 as usize,
                    down_after_ns: sp.down_after.map_or(30 * NS_PER_S, |d| d.ns()),
                    failover_timeout_ns: sp.failover_timeout.map_or(180 * NS_PER_S, |d| d.ns()),
                    ping_period_ns: NS_PER_S,
                };
                debug_assert_eq!(id.index(), specs.len());
                specs.push(ProcSpec {
                    name: self.procs[id.index()].0.clone(),
                    actor: Actor::Sentinel(Box::new(Sentinel::new(config))),
                    clock: NodeClock::perfect(self.epoch_unix_ms),
                    start_at: crate::time::SimTime::ZERO,
                });
            }
        }
        if let Some(c) = &m.consensus {
            let mut config = ConsensusServiceConfig::default();
            if let Some(t) = c.tick {
                config.tick_ms = (t.ns() / NS_PER_MS).max(1);
            }
            specs.push(ProcSpec {
                name: c.name.0.clone(),
                actor: Actor::ConsensusService(Box::new(ConsensusService::new(config))),
                clock: NodeClock::perfect(self.epoch_unix_ms),
                start_at: crate::time::SimTime::ZERO,
            });
        }
        assert_eq!(
            specs.len(),
            self.procs.len(),
            "every named process is built"
        );
        let link = LinkSpec::new(
            m.network.latency.min.ns(),
            m.network.latency.max.ns(),
            Ratio::per_million(m.network.loss_ppm.map_or(0, |b| b.0 as u32)).expect("bounded"),
        );
        let mut world = World::new(Seed(seed), self.limits, link, specs, trace);
        let schedule = self.fault_schedule(seed);
        world.schedule_all(schedule.clone());
        for (i, t) in self.model.triggers.iter().enumerate() {
            world.add_trigger(self.trigger(t, Seed(seed), i as u64));
        }
        (world, schedule)
    }

    fn trigger(&self, t: &FaultEntry, seed: Seed, index: u64) -> Trigger {
        let When::On(on) = &t.when else {
            unreachable!("`triggers` reads only triggered entries")
        };
        let (chance, max) = (on.chance_ppm, on.max);
        let kind = t.trigger_kind(&|n: &Name| self.proc_id(&n.0));
        Trigger {
            kind,
            chance: Ratio::per_million(chance.map_or(1_000_000, |c| c.0 as u32)).expect("bounded"),
            max_firings: max.map_or(1, |m| m.0 as u32),
            fired: 0,
            keep: self.fault_keep,
            // Its own stream: adding a trigger changes nothing else a seed draws.
            rng: seed.stream("trigger", index),
        }
    }

    /// This seed's swarm: for each swarm entry, `None` (off) or the entry narrowed to the
    /// intensity drawn (a shorter `every` and a larger magnitude within the given ranges).
    pub fn swarm_draw(&self, seed: Seed) -> Vec<Option<FaultEntry>> {
        let Some(sw) = &self.model.swarm else {
            return Vec::new();
        };
        let enable =
            Ratio::per_million(sw.enable_ppm.map_or(500_000, |b| b.0 as u32)).expect("bounded");
        let mut rng = seed.stream("swarm", 0);
        sw.faults
            .iter()
            .map(|f| {
                // Draw every entry's values whether on or off, so that one entry's switch
                // does not shift what the others draw.
                let on = rng.chance(enable);
                let drawn = f.narrowed(&mut rng);
                on.then_some(drawn)
            })
            .collect()
    }

    /// The swarm configuration a seed drew, in words (empty without a swarm).
    pub fn swarm_text(&self, seed: u64) -> Vec<String> {
        self.swarm_draw(Seed(seed))
            .iter()
            .zip(self.model.swarm.iter().flat_map(|s| s.faults.iter()))
            .map(|(d, f)| {
                let kind = f.name();
                let Some(d) = d else {
                    return format!("{kind}: off");
                };
                let every = d.every().expect("a swarm entry is random").value;
                format!(
                    "{kind}: every {}..{}, {}",
                    every.min,
                    every.max,
                    d.describe_magnitude()
                )
            })
            .collect()
    }

    /// Faults one random entry draws over the run: one stream per (entry, target), so removing
    /// an entry or a target does not change what the others draw (one stream per entry for
    /// `at_once` and link faults, whose draws hit several targets together).
    fn random_faults(
        &self,
        f: &FaultEntry,
        prefix: &str,
        i: u64,
        seed: Seed,
        out: &mut Vec<Fault>,
    ) {
        let end = self.limits.max_time;
        // Stream names as they were when each kind had its own spelling: unchanged draws.
        let kind = match f.name() {
            "clock_step" => "clock-step",
            "latency_spike" => "latency-spike",
            other => other,
        };
        let stream = format!("{prefix}-{kind}");
        let thin_stream = format!("{prefix}-{kind}-thin");
        let targets = self.ids(f.targets());
        let every = f.every().expect("a random entry has `every`").value;
        let links = match &f.span {
            Span::Links { to, .. } => Some(self.ids(to)),
            Span::One(_) | Span::Each(_) => None,
        };
        let links = links.as_deref();
        for j in 0..f.streams() {
            let mut rng = seed.stream(&stream, (i << 32) | j as u64);
            // Thinning draws from its own stream: a thinned schedule is a subset of the full
            // one, fault for fault, and an unthinned one draws nothing more.
            let mut thin = (self.fault_keep != Ratio::ALWAYS)
                .then(|| seed.stream(&thin_stream, (i << 32) | j as u64));
            let mut t = SimTime::ZERO;
            loop {
                t = t.plus_ns(rng.range_inclusive(every.min.ns(), every.max.ns()));
                if t >= end {
                    break;
                }
                let keep = thin.as_mut().is_none_or(|r| r.chance(self.fault_keep));
                // Who this draw hits: the stream's own target, `at_once` of the list, or
                // (a link fault) the links from all of them at once.
                let hit: Vec<ProcId> = match (f.at_once(), links) {
                    (_, Some(_)) => vec![targets[0]],
                    (None, None) => vec![targets[j]],
                    (Some(k), None) => {
                        let mut pool = targets.clone();
                        (0..k.value.0)
                            .map(|_| pool.swap_remove(rng.below(pool.len() as u64) as usize))
                            .collect()
                    }
                };
                let first = out.len();
                let mut window = 0;
                for p in hit {
                    let (kind, open) = f.draw(p, &targets, links, &mut rng);
                    window = open.unwrap_or(0);
                    out.push(Fault::new(t, open, kind));
                }
                // The next fault of this stream comes after this one's window (the longest of
                // the draw's): a target's own faults never overlap each other.
                t = t.plus_ns(window);
                if !keep {
                    out.truncate(first);
                }
            }
        }
    }

    fn ids(&self, names: &[Name]) -> Vec<ProcId> {
        names.iter().map(|n| self.proc_id(&n.0)).collect()
    }

    /// Scripted faults plus the random ones this seed draws, in time order (faults due at
    /// the same instant in declaration order).
    pub fn fault_schedule(&self, seed: u64) -> Vec<Fault> {
        let mut out: Vec<Fault> = Vec::new();
        for f in &self.model.faults {
            out.push(self.scripted(f));
        }
        let seed = Seed(seed);
        for (i, f) in self.model.random_faults.iter().enumerate() {
            self.random_faults(f, "fault", i as u64, seed, &mut out);
        }
        for (i, f) in self.swarm_draw(seed).into_iter().enumerate() {
            if let Some(f) = f {
                self.random_faults(&f, "swarm", i as u64, seed, &mut out);
            }
        }
        // Stable sort: faults at the same instant keep their declaration order.
        out.sort_by_key(|f| f.at);
        out
    }

    /// A scripted fault as the loop runs it.
    pub fn scripted(&self, f: &FaultEntry) -> Fault {
        f.scripted_fault(&|n: &Name| self.proc_id(&n.0))
    }
}
