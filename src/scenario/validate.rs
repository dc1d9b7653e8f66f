//! A model's sections checked against each other and their sizes bounded: the process table,
//! every name a section uses, what each algorithm needs of the rest of the model, the faults'
//! schedule bound, and properties that the model could not violate.

use crate::check::Property;
use crate::proto::Bytes;
use crate::rng::Ratio;
use crate::scenario::clients::{ClientKind, Neighbours};
use crate::scenario::errors::{Invalid, Locator, first_repeat, invalid, quoted};
use crate::scenario::faults::{FaultEntry, KindSpec, Span, Target, When};
use crate::scenario::marks::Mark;
use crate::scenario::model::{ProcKind, Scenario};
use crate::scenario::names::DEFAULT_REPLAY_PROGRAM;
use crate::scenario::schema::*;
use crate::scenario::units::Name;
use crate::sim::Limits;
use crate::time::{NS_PER_MS, NS_PER_S, SimTime};

/// Why `p` cannot be violated in `model` whatever the faults do, if it cannot: a check that
/// cannot fail reads as a guarantee the model never tested.
fn vacuous(
    model: &Model,
    p: Property,
    liveness_bound_ns: u64,
    release_within_ns: u64,
) -> Option<String> {
    // Clients per lock key: a lock needs two clients to be contended.
    let mut per_key: Vec<(Bytes, i64, i64)> = Vec::new();
    for g in model.clients.iter() {
        let k = g.key_bytes();
        let deleters = if g.kind().deletes_keys() {
            g.count()
        } else {
            0
        };
        match per_key.iter_mut().find(|(x, _, _)| *x == k) {
            Some(e) => {
                e.1 += g.count();
                e.2 += deleters;
            }
            None => per_key.push((k, g.count(), deleters)),
        }
    }
    let clients: i64 = per_key.iter().map(|e| e.1).sum();
    match p {
        Property::MutualExclusion => per_key
            .iter()
            .all(|e| e.1 < 2)
            .then(|| "no lock key is used by two clients, so no two can hold one lock".into()),
        Property::ForeignUnlock => per_key.iter().all(|e| e.2 < 2).then(|| {
            "no lock key is used by two clients that delete Redis keys (consensus clients never do)"
                .into()
        }),
        Property::ResourceSafety => match &model.resource {
            None => Some("there is no `resource`".into()),
            Some(_) if clients < 2 => Some("one client cannot interleave with another".into()),
            Some(_) => None,
        },
        Property::FencingMonotonic => match &model.resource {
            None => Some("there is no `resource`".into()),
            // The resource admits a token only if none higher was accepted before, and keeps
            // that across restarts: exactly what the property looks for, refused.
            Some(r) if r.fencing => Some(
                "the resource checks fencing (`fencing: true`) and so refuses every lower token itself; check `resource_safety`".into(),
            ),
            Some(_) if !model.clients.iter().any(|g| g.presents_tokens()) => {
                Some("no client presents fencing tokens".into())
            }
            Some(_) => None,
        },
        Property::Liveness => (liveness_bound_ns >= model.duration.ns()).then(|| {
            format!(
                "liveness_bound {} is not shorter than the run ({})",
                crate::time::fmt_duration_ns(liveness_bound_ns),
                model.duration
            )
        }),
        // Never in a model (`Property::ALL` leaves it out).
        Property::Recorded(_) => None,
        // Only the Redlock clients record their unlock calls (`Fact::UnlockCalled`).
        Property::ReleaseReturns if !model.clients.iter().any(|g| g.kind() == ClientKind::Redlock) => {
            Some("no client records its unlock calls (only `algorithm: \"redlock\"` clients do)".into())
        }
        Property::ReleaseReturns => (release_within_ns >= model.duration.ns()).then(|| {
            format!(
                "release_within {} is not shorter than the run ({})",
                crate::time::fmt_duration_ns(release_within_ns),
                model.duration
            )
        }),
    }
}

/// The process table as it is built: each process with its kind, and how it was described
/// (for the message when two share a name).
#[derive(Default)]
struct ProcTable {
    procs: Vec<(String, ProcKind)>,
    what: Vec<String>,
}

impl ProcTable {
    fn add(&mut self, n: &Name, kind: ProcKind, described: String) -> Result<(), Invalid> {
        if let Some(i) = self.procs.iter().position(|(p, _)| *p == n.0) {
            return Err(invalid(
                format!(
                    "duplicate process name \"{}\": {described} has the name of {}",
                    n.0, self.what[i]
                ),
                quoted(n),
            ));
        }
        self.procs.push((n.0.clone(), kind));
        self.what.push(described);
        Ok(())
    }

    fn lookup(&self, n: &Name) -> Result<(), Invalid> {
        if self.procs.iter().any(|(p, _)| *p == n.0) {
            Ok(())
        } else {
            Err(invalid(format!("unknown process \"{}\"", n.0), quoted(n)))
        }
    }
}

/// The network's latency within the loop's bound.
fn network(model: &Model) -> Result<(), Invalid> {
    if model.network.latency.max.ns() > crate::net::LATENCY_NS_LIMIT {
        return Err(invalid(
            format!(
                "network latency {} is above the limit of 1h",
                model.network.latency.max
            ),
            model.network.latency.mark,
        ));
    }
    Ok(())
}

/// The Redis nodes (each client but a consensus one needs one) and the resource.
fn nodes_and_resource(model: &Model, table: &mut ProcTable) -> Result<(), Invalid> {
    if let Some(g) = model
        .clients
        .iter()
        .find(|g| g.kind() != ClientKind::Consensus)
        && model.nodes.is_empty()
    {
        return Err(invalid(
            format!(
                "algorithm \"{}\" needs a Redis node: `nodes` names none",
                g.kind().name()
            ),
            model.nodes.mark.or(g.algorithm_mark),
        ));
    }
    if model.nodes.len() > MAX_NODES {
        return Err(invalid(
            format!("{} nodes: at most {MAX_NODES} allowed", model.nodes.len()),
            model.nodes.mark,
        ));
    }
    for n in model.nodes.iter() {
        table.add(&n.name, ProcKind::Redis, format!("node \"{}\"", n.name.0))?;
    }
    if let Some(r) = &model.resource {
        table.add(
            &r.name,
            ProcKind::Resource,
            format!("the resource \"{}\"", r.name.0),
        )?;
    }
    Ok(())
}

/// The client groups: their count, their members' names, and what each algorithm needs of
/// the rest of the model.
fn client_groups(model: &Model, table: &mut ProcTable) -> Result<(), Invalid> {
    if model.clients.is_empty() {
        return Err(invalid(
            "a model needs at least one client group in `clients`",
            model.clients.mark,
        ));
    }
    let node_names: Vec<Name> = model.nodes.iter().map(|n| n.name.clone()).collect();
    let neighbours = Neighbours {
        nodes: &node_names,
        fencing_resource: model.resource.as_ref().is_some_and(|r| r.fencing),
        sentinels: model.sentinels.is_some(),
        consensus: model.consensus.is_some(),
    };
    let mut total: i64 = 0;
    for g in model.clients.iter() {
        total += g.count();
        if total as usize > MAX_CLIENTS {
            return Err(invalid(
                format!("{total} clients: at most {MAX_CLIENTS} allowed"),
                g.count.map_or(g.name.1, |c| c.mark),
            ));
        }
    }
    for g in model.clients.iter() {
        for (i, n) in g.members().iter().enumerate() {
            let described = if g.count() == 1 {
                format!("client \"{}\"", n.0)
            } else {
                format!(
                    "client {} of group \"{}\" (count {})",
                    i + 1,
                    g.name.0,
                    g.count()
                )
            };
            table.add(n, ProcKind::Client, described)?;
        }
        g.validate(&neighbours)?;
    }
    Ok(())
}

/// Each replica names its master (no chain, no cycle), and the nodes' persistence settings.
fn replication(model: &Model) -> Result<(), Invalid> {
    for n in model.nodes.iter() {
        if let Some(m) = &n.replica_of {
            if *m == n.name {
                return Err(invalid(
                    format!("node \"{}\" cannot replicate itself", m.0),
                    quoted(m),
                ));
            }
            let Some(master) = model.nodes.iter().find(|x| x.name == *m) else {
                return Err(invalid(
                    format!("replica_of names unknown node \"{}\"", m.0),
                    quoted(m),
                ));
            };
            if let Some(grand) = &master.replica_of {
                // Follow the chain: back to this node is a cycle, which no node would
                // ever master; otherwise a chain, which the simulated replica does not
                // serve (it does not forward the stream it applies).
                let mut chain = vec![n.name.0.clone(), m.0.clone()];
                let mut at = master;
                let cycle = loop {
                    let Some(next) = &at.replica_of else {
                        break false;
                    };
                    chain.push(next.0.clone());
                    if *next == n.name {
                        break true;
                    }
                    match model.nodes.iter().find(|x| x.name == *next) {
                        Some(x) if chain.len() <= model.nodes.len() + 1 => at = x,
                        _ => break false,
                    }
                };
                return Err(invalid(
                    if cycle {
                        format!(
                            "replica_of makes a cycle ({}): every node in it is a replica and none is the master",
                            chain.join(" -> ")
                        )
                    } else {
                        format!(
                            "node \"{}\" is a replica of \"{}\", itself a replica of \"{}\": chained replication is not modelled (a replica does not forward its stream); name the master",
                            n.name.0, m.0, grand.0
                        )
                    },
                    quoted(m),
                ));
            }
        }
        if let Some(lag) = n.min_replicas_max_lag
            && (lag.ns() == 0 || lag.ns() % NS_PER_S != 0)
        {
            return Err(invalid(
                "min_replicas_max_lag is in whole seconds (redis.conf takes seconds), at least 1s",
                lag.mark,
            ));
        }
        if let Some(p) = n.persistence
            && let PersistenceSpec::Rdb { every } = p.value
            && every.ns() < NS_PER_S
        {
            return Err(invalid("rdb snapshots `every` must be at least 1s", p.mark));
        }
    }
    Ok(())
}

/// The sentinels: quorum, timeouts, the master they monitor, and their generated names.
fn sentinels(model: &Model, table: &mut ProcTable) -> Result<(), Invalid> {
    if let Some(sp) = &model.sentinels {
        if sp.quorum.0 > sp.count.0 {
            return Err(invalid(
                format!(
                    "quorum {} is larger than the {} sentinels",
                    sp.quorum.0, sp.count.0
                ),
                sp.quorum.mark,
            ));
        }
        for d in [sp.down_after, sp.failover_timeout].into_iter().flatten() {
            if d.ns() == 0 {
                return Err(invalid(
                    "sentinel timeouts must be above 0 (0 would fail over at every ping)",
                    d.mark,
                ));
            }
        }
        match model.nodes.iter().find(|n| n.name == sp.monitor) {
            None => {
                return Err(invalid(
                    format!("sentinels monitor unknown node \"{}\"", sp.monitor.0),
                    quoted(&sp.monitor),
                ));
            }
            Some(n) if n.replica_of.is_some() => {
                return Err(invalid(
                    "sentinels must monitor the master, not a replica",
                    quoted(&sp.monitor),
                ));
            }
            Some(_) => {}
        }
        // Generated names are reported at the name they are made from, or at `count`.
        let base = sp
            .name
            .clone()
            .unwrap_or_else(|| Name("s".into(), sp.count.mark));
        for i in 1..=sp.count.0 {
            table.add(
                &Name(format!("{}{i}", base.0), base.1),
                ProcKind::Sentinel,
                format!("sentinel {i} (named from \"{}\")", base.0),
            )?;
        }
    }
    Ok(())
}

/// Every fault entry's names, and the counts that bound a run's schedule: entries, faults a
/// seed can draw, trigger firings.
fn fault_entries(model: &Model, table: &ProcTable) -> Result<(), Invalid> {
    let n_faults = model.faults.len() + model.random_faults.len();
    // The marks of every entry in order (scripted, random, swarm, triggers): a count past
    // the limit is located at the first entry beyond it.
    let swarm_entries = model.swarm.as_ref().map_or(&[][..], |s| &s.faults[..]);
    let entry_marks: Vec<Mark> = model
        .faults
        .iter()
        .chain(&model.random_faults)
        .chain(swarm_entries)
        .chain(&model.triggers)
        .map(FaultEntry::mark)
        .collect();
    let beyond =
        |limit: usize| Locator::Mark(entry_marks.get(limit).copied().unwrap_or(Mark::NONE));
    if n_faults > MAX_FAULTS {
        return Err(invalid(
            format!("{n_faults} faults: at most {MAX_FAULTS} allowed"),
            beyond(MAX_FAULTS),
        ));
    }
    for f in &model.faults {
        for n in f.names() {
            table.lookup(n)?;
        }
        if let Span::One(Target::Master(m)) = &f.span
            && model.nodes.is_empty()
        {
            return Err(invalid(
                "a fault aims at \"@master\" but the model has no Redis node",
                Locator::Mark(*m),
            ));
        }
    }
    for t in &model.triggers {
        for n in t.names() {
            table.lookup(n)?;
        }
    }
    let swarm_faults = model.swarm.as_ref().map_or(&[][..], |s| &s.faults[..]);
    let n_entries = n_faults + swarm_faults.len() + model.triggers.len();
    if n_entries > MAX_FAULTS {
        return Err(invalid(
            format!(
                "{n_entries} fault entries (faults, random faults, swarm and triggers): at most {MAX_FAULTS} allowed"
            ),
            beyond(MAX_FAULTS),
        ));
    }
    // An upper bound on the faults a seed can draw, so that the schedule (and the event
    // queue it fills) is bounded before the run, whatever the model says.
    let mut drawable: u64 = model.faults.len() as u64;
    for f in model.random_faults.iter().chain(swarm_faults) {
        random_entry(model, table, f, &mut drawable)?;
    }
    for f in model.random_faults.iter().chain(swarm_faults) {
        if let KindSpec::Drift { ppm, .. } = &f.kind
            && ppm.0.0 > ppm.1.0
        {
            return Err(invalid(
                "drift `ppm` range has its minimum above its maximum",
                Locator::Mark(ppm.mark),
            ));
        }
        if let KindSpec::Loss { loss_ppm, .. } = &f.kind
            && loss_ppm.0.0 > loss_ppm.1.0
        {
            return Err(invalid(
                "`loss_ppm` range has its minimum above its maximum",
                Locator::Mark(loss_ppm.mark),
            ));
        }
    }
    let mut firings: i64 = 0;
    for t in &model.triggers {
        let max = match &t.when {
            When::On(on) => on.max,
            When::At(_) | When::Every { .. } => None,
        };
        firings += max.map_or(1, |m| m.0);
        // Located at the trigger that takes the total over the limit.
        if firings > MAX_TRIGGER_FIRINGS {
            return Err(invalid(
                format!(
                    "the triggers may fire {firings} times in one run: at most {MAX_TRIGGER_FIRINGS} allowed in all"
                ),
                Locator::Mark(t.mark()),
            ));
        }
    }
    Ok(())
}

/// One random entry (or a swarm's): its names, its targets, `at_once`, `every`, and what it
/// adds to `drawable`, the bound on the faults a seed can draw.
fn random_entry(
    model: &Model,
    table: &ProcTable,
    f: &FaultEntry,
    drawable: &mut u64,
) -> Result<(), Invalid> {
    let kind = f.name();
    for n in f.names() {
        table.lookup(n)?;
    }
    if let Some(dup) = first_repeat(f.targets()) {
        return Err(invalid(
            format!("random {kind} names target \"{}\" twice", dup.0),
            quoted(dup),
        ));
    }
    if let Span::Links { to, .. } = &f.span
        && let Some(dup) = first_repeat(to)
    {
        return Err(invalid(
            format!("random {kind} names \"{}\" twice in `to`", dup.0),
            quoted(dup),
        ));
    }
    if f.targets().is_empty() {
        return Err(invalid(
            format!("random {kind} has no targets"),
            Some(kind.into()),
        ));
    }
    if let Some(k) = f.at_once()
        && k.value.0 as usize > f.targets().len()
    {
        return Err(invalid(
            format!(
                "random {kind}: at_once {} is more than its {} targets",
                k.value.0,
                f.targets().len()
            ),
            Locator::Mark(k.mark),
        ));
    }
    let every = f.every().expect("a random entry has `every`");
    let every_at = Locator::Mark(every.mark);
    if every.min.ns() < NS_PER_MS {
        return Err(invalid(
            "`every` must be at least 1ms (faults need time between them)",
            every_at,
        ));
    }
    let per_stream = model.duration.ns() / every.min.ns();
    if per_stream > MAX_RANDOM_FAULTS_PER_TARGET {
        return Err(invalid(
            format!(
                "`every` minimum {} over a {} run could draw more than {MAX_RANDOM_FAULTS_PER_TARGET} faults per target",
                every.min, model.duration
            ),
            every_at,
        ));
    }
    let per_draw = f.at_once().map_or(1, |k| k.value.0 as u64);
    *drawable += (per_stream + 1) * per_draw * f.streams() as u64;
    // Located at the entry that takes the schedule over the limit.
    if *drawable > MAX_SCHEDULED_FAULTS {
        return Err(invalid(
            format!(
                "the random faults could draw up to {drawable} faults in one run by this entry: at most {MAX_SCHEDULED_FAULTS} allowed (raise `every`, or fewer targets)"
            ),
            every_at,
        ));
    }
    Ok(())
}

/// The properties checked (none cannot be violated here), the expectation and witnesses,
/// the liveness bound and the release bound.
fn properties(model: &Model) -> Result<(Vec<Property>, u64, u64), Invalid> {
    if model.check.is_empty() {
        return Err(invalid("`check` names no property", model.check.mark));
    }
    if model.duration.ns() == 0 {
        return Err(invalid("duration must be above 0", model.duration.mark));
    }
    let mut properties: Vec<Property> = model.check.iter().map(|p| p.0).collect();
    properties.sort();
    properties.dedup();
    if let Some(Expect::Violates(v)) = &model.expect {
        if v.is_empty() {
            return Err(invalid(
                "expect: violates([]) names no property; write `expect: holds`",
                Some("violates".into()),
            ));
        }
        for p in v {
            if !properties.contains(&p.0) {
                return Err(invalid(
                    format!("expect names {} but `check` does not", p.0),
                    p.1,
                ));
            }
        }
    }
    for (i, h) in model.witness.iter().enumerate() {
        if model.witness[..i].contains(h) {
            return Err(invalid(
                format!("witness names {} twice", h.0),
                Locator::Mark(h.1),
            ));
        }
    }
    let max_ttl = model.clients.iter().map(|g| g.ttl.ns()).max().unwrap_or(0);
    let liveness_bound_ns = model
        .liveness_bound
        .map_or(3 * max_ttl.max(NS_PER_S), |d| d.ns());
    if let Some(b) = model.liveness_bound {
        if b.ns() == 0 {
            return Err(invalid(
                "liveness_bound must be above 0: every instant the lock is free would violate it",
                b.mark,
            ));
        }
        if !properties.contains(&Property::Liveness) {
            return Err(invalid(
                "liveness_bound is read only by `liveness`, which `check` does not name",
                b.mark,
            ));
        }
    }
    let release_within_ns = model
        .release_within
        .map_or(crate::check::DEFAULT_RELEASE_WITHIN_NS, |d| d.ns());
    if let Some(b) = model.release_within {
        if b.ns() == 0 {
            return Err(invalid(
                "release_within must be above 0: every unlock call takes some time",
                b.mark,
            ));
        }
        if !properties.contains(&Property::ReleaseReturns) {
            return Err(invalid(
                "release_within is read only by `release_returns`, which `check` does not name",
                b.mark,
            ));
        }
    }
    for p in model.check.iter() {
        if let Some(why) = vacuous(model, p.0, liveness_bound_ns, release_within_ns) {
            return Err(invalid(
                format!("`{}` cannot be violated in this model: {why}", p.0),
                p.1,
            ));
        }
    }
    Ok((properties, liveness_bound_ns, release_within_ns))
}

impl Scenario {
    /// Checks cross-references and sizes, and computes the process table: each section in
    /// turn, in the order its errors are reported.
    pub fn new(name: String, path: String, model: Model) -> Result<Scenario, Invalid> {
        network(&model)?;
        let mut table = ProcTable::default();
        nodes_and_resource(&model, &mut table)?;
        client_groups(&model, &mut table)?;
        replication(&model)?;
        sentinels(&model, &mut table)?;
        if let Some(c) = &model.consensus {
            table.add(
                &c.name,
                ProcKind::Consensus,
                format!("the consensus service \"{}\"", c.name.0),
            )?;
        }
        fault_entries(&model, &table)?;
        let (properties, liveness_bound_ns, release_within_ns) = properties(&model)?;
        let limits = Limits {
            max_time: SimTime(model.duration.ns()),
            max_events: model.max_events.map_or(DEFAULT_MAX_EVENTS, |b| b.0 as u64),
        };
        let epoch_unix_ms = model.epoch_unix_ms.map_or(DEFAULT_EPOCH_UNIX_MS, |b| b.0);
        Ok(Scenario {
            name,
            path,
            model,
            procs: table.procs,
            properties,
            liveness_bound_ns,
            release_within_ns,
            limits,
            epoch_unix_ms,
            replay_flags: String::new(),
            replay_program: DEFAULT_REPLAY_PROGRAM.to_string(),
            fault_keep: Ratio::ALWAYS,
            variants: Vec::new(),
        })
    }

    /// This model with exactly these scripted faults and no other source of faults (random,
    /// swarm, triggers) and no expectation: what minimisation runs, on the typed model.
    pub fn with_scripted_faults(&self, faults: Vec<FaultEntry>) -> Result<Scenario, Invalid> {
        let mut m = self.model.clone();
        m.faults = faults;
        m.random_faults.clear();
        m.swarm = None;
        m.triggers.clear();
        m.expect = None;
        Scenario::new(self.name.clone(), self.path.clone(), m)
    }
}
