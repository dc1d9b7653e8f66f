//! INFO: the fields of Redis 7.0.15's server, replication and keyspace sections that the
//! model can answer truthfully, in Redis's order and format (`# Section`, `field:value`
//! lines ending in CRLF, sections one blank line apart). The other sections (clients,
//! memory, persistence, stats, cpu, modules, commandstats, errorstats, latencystats,
//! cluster) and the other fields of these (the build, the OS, the process id, the run id,
//! the port, uptime, the replication ids and backlog) describe a process and a machine the
//! model does not have: they are left out, not made up.
//!
//! [`INFO_FIELDS`] lists every field the model gives and how a reply of a real server is
//! compared with it (`conformance::info`): some values describe this server and no other
//! (its clock, its peers' addresses, its offsets, which count bytes the model frames a
//! little differently), so only their presence is compared.

use crate::proto::{Bytes, Reply};
use crate::redis::node::RedisNode;
use crate::redis::replication::{LinkState, Role};
use crate::time::NS_PER_S;

/// How a field of a real server's INFO compares with the model's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfoCompare {
    /// The same value.
    Exact,
    /// Present in both; the value is the server's own.
    Masked,
    /// A `k=v,k=v` value: these subfields compare, the others are the server's own.
    Subfields(&'static [&'static str]),
}

/// A field's name: as written, or a stem followed by a number (`slave0`, `db3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfoName {
    Exact(&'static str),
    Numbered(&'static str),
}

impl InfoName {
    pub fn matches(self, field: &str) -> bool {
        match self {
            InfoName::Exact(n) => field == n,
            InfoName::Numbered(stem) => field
                .strip_prefix(stem)
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_digit())),
        }
    }
}

/// Every field the model gives, by section (as Redis heads it), with its comparison. A field
/// of a real server's reply listed here must be in the model's too, and the other way.
pub const INFO_FIELDS: &[(&str, InfoName, InfoCompare)] = &[
    (
        "Server",
        InfoName::Exact("redis_version"),
        InfoCompare::Exact,
    ),
    ("Server", InfoName::Exact("redis_mode"), InfoCompare::Exact),
    (
        "Server",
        InfoName::Exact("server_time_usec"),
        InfoCompare::Masked,
    ),
    ("Server", InfoName::Exact("hz"), InfoCompare::Exact),
    (
        "Server",
        InfoName::Exact("configured_hz"),
        InfoCompare::Exact,
    ),
    ("Replication", InfoName::Exact("role"), InfoCompare::Exact),
    (
        "Replication",
        InfoName::Exact("master_host"),
        InfoCompare::Masked,
    ),
    (
        "Replication",
        InfoName::Exact("master_port"),
        InfoCompare::Masked,
    ),
    (
        "Replication",
        InfoName::Exact("master_link_status"),
        InfoCompare::Exact,
    ),
    (
        "Replication",
        InfoName::Exact("slave_repl_offset"),
        InfoCompare::Masked,
    ),
    (
        "Replication",
        InfoName::Exact("slave_read_only"),
        InfoCompare::Exact,
    ),
    (
        "Replication",
        InfoName::Exact("connected_slaves"),
        InfoCompare::Exact,
    ),
    (
        "Replication",
        InfoName::Numbered("slave"),
        InfoCompare::Subfields(&["state"]),
    ),
    (
        "Replication",
        InfoName::Exact("master_failover_state"),
        InfoCompare::Exact,
    ),
    (
        "Replication",
        InfoName::Exact("master_repl_offset"),
        InfoCompare::Masked,
    ),
    (
        "Keyspace",
        InfoName::Numbered("db"),
        InfoCompare::Subfields(&["keys", "expires"]),
    ),
];

/// The sections the model answers, in the order Redis writes them.
const SECTIONS: [&str; 3] = ["server", "replication", "keyspace"];

impl RedisNode {
    /// INFO [section ...]: no argument, `default`, `all` and `everything` give every section
    /// the model answers; a section it leaves out, or an unknown one, gives nothing.
    pub(super) fn info(&mut self, now: i64, args: &[Bytes]) -> Reply {
        let wanted: Vec<String> = args
            .iter()
            .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
            .collect();
        let every = wanted.is_empty()
            || wanted
                .iter()
                .any(|w| matches!(w.as_str(), "default" | "all" | "everything"));
        let mut out: Vec<String> = Vec::new();
        for s in SECTIONS {
            if !(every || wanted.iter().any(|w| w == s)) {
                continue;
            }
            out.push(match s {
                "server" => Self::info_server(now),
                "replication" => self.info_replication(),
                _ => self.info_keyspace(now),
            });
        }
        Reply::Bulk(out.join("\r\n").into_bytes())
    }

    fn info_server(now: i64) -> String {
        lines(
            "Server",
            &[
                ("redis_version", "7.0.15".into()),
                ("redis_mode", "standalone".into()),
                ("server_time_usec", (i128::from(now) * 1000).to_string()),
                ("hz", "10".into()),
                ("configured_hz", "10".into()),
            ],
        )
    }

    fn info_replication(&self) -> String {
        let offset = self.repl.offset.to_string();
        let mut fields: Vec<(String, String)> = Vec::new();
        let mut add = |k: &str, v: String| fields.push((k.to_string(), v));
        match self.role {
            Role::Master => {
                add("role", "master".into());
                add("connected_slaves", self.repl.replicas.len().to_string());
                for (i, r) in self.repl.replicas.iter().enumerate() {
                    let lag_s = self.repl.mono_ns.saturating_sub(r.last_ack_mono_ns) / NS_PER_S;
                    let state = if r.online { "online" } else { "wait_bgsave" };
                    let name = String::from_utf8_lossy(&self.peer_name(r.proc)).into_owned();
                    add(
                        &format!("slave{i}"),
                        format!(
                            "ip={name},port=6379,state={state},offset={},lag={lag_s}",
                            r.ack_offset
                        ),
                    );
                }
            }
            Role::Replica { master, state } => {
                add("role", "slave".into());
                let name = String::from_utf8_lossy(&self.peer_name(master)).into_owned();
                add("master_host", name);
                add("master_port", "6379".into());
                let link = match state {
                    LinkState::Connected => "up",
                    LinkState::Connecting => "down",
                };
                add("master_link_status", link.into());
                add("slave_repl_offset", offset.clone());
                add("slave_read_only", "1".into());
                add("connected_slaves", "0".into());
            }
        }
        add("master_failover_state", "no-failover".into());
        add("master_repl_offset", offset);
        let pairs: Vec<(&str, String)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        lines("Replication", &pairs)
    }

    /// `dbN:keys=K,expires=E,avg_ttl=T` for each db that holds keys (logically expired ones
    /// included, as Redis counts them until they are removed); `avg_ttl` here is the exact
    /// mean of the live deadlines' remaining ms (Redis estimates it from the expire cycle's
    /// samples: masked in comparisons).
    fn info_keyspace(&self, now: i64) -> String {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for d in 0..crate::redis::node::connection::DATABASES as u8 {
            let Some(ks) = self.db_ref(d).filter(|ks| !ks.is_empty()) else {
                continue;
            };
            let deadlines: Vec<i64> = ks.iter().filter_map(|(_, e)| e.expire_at_ms).collect();
            let live: Vec<i128> = deadlines
                .iter()
                .filter(|t| **t > now)
                .map(|t| i128::from(*t) - i128::from(now))
                .collect();
            let avg = if live.is_empty() {
                0
            } else {
                live.iter().sum::<i128>() / live.len() as i128
            };
            pairs.push((
                format!("db{d}"),
                format!(
                    "keys={},expires={},avg_ttl={avg}",
                    ks.len(),
                    deadlines.len()
                ),
            ));
        }
        let pairs: Vec<(&str, String)> =
            pairs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        lines("Keyspace", &pairs)
    }
}

/// A section as Redis writes it: its header, then `field:value` lines, each ending in CRLF.
fn lines(section: &str, fields: &[(&str, String)]) -> String {
    let mut s = format!("# {section}\r\n");
    for (k, v) in fields {
        s.push_str(k);
        s.push(':');
        s.push_str(v);
        s.push_str("\r\n");
    }
    s
}
