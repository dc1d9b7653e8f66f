//! How a real server's INFO reply (`(info) "..."` in a corpus) compares with the model's:
//! the sections the model answers (those of `redis::node::info::INFO_FIELDS`) must be the
//! server's, in its order; within each, the fields listed there must be the same fields in
//! the same order, with the same values where the list compares them. Fields the model
//! does not list (the build, the process, memory, stats...) are not compared.

use crate::redis::node::info::{INFO_FIELDS, InfoCompare};

/// `# Section` headers and their `field:value` lines.
type Sections = Vec<(String, Vec<(String, String)>)>;

fn sections(text: &[u8]) -> Sections {
    let text = String::from_utf8_lossy(text);
    let mut out: Sections = Vec::new();
    for line in text.split("\r\n") {
        if let Some(name) = line.strip_prefix("# ") {
            out.push((name.to_string(), Vec::new()));
        } else if let (Some((k, v)), Some(last)) = (line.split_once(':'), out.last_mut()) {
            last.1.push((k.to_string(), v.to_string()));
        }
    }
    out
}

/// How a field of a section compares, if the model answers it.
fn compare_of(section: &str, field: &str) -> Option<InfoCompare> {
    INFO_FIELDS
        .iter()
        .find(|(s, n, _)| *s == section && n.matches(field))
        .map(|(_, _, c)| *c)
}

fn modelled(section: &str) -> bool {
    INFO_FIELDS.iter().any(|(s, _, _)| *s == section)
}

/// `k=v,k=v` subfields.
fn subfield<'a>(value: &'a str, key: &str) -> Option<&'a str> {
    value.split(',').find_map(|kv| {
        kv.split_once('=')
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| v)
    })
}

fn values_match(compare: InfoCompare, server: &str, model: &str) -> bool {
    match compare {
        InfoCompare::Exact => server == model,
        InfoCompare::Masked => true,
        InfoCompare::Subfields(keys) => keys.iter().all(|k| {
            let s = subfield(server, k);
            s.is_some() && s == subfield(model, k)
        }),
    }
}

/// Does the model's INFO text match the server's?
pub fn info_matches(server: &[u8], model: &[u8]) -> bool {
    let server: Sections = sections(server)
        .into_iter()
        .filter(|(s, _)| modelled(s))
        .collect();
    let model = sections(model);
    if server.len() != model.len() {
        return false;
    }
    server.iter().zip(&model).all(|((ss, sf), (ms, mf))| {
        let sf: Vec<&(String, String)> = sf
            .iter()
            .filter(|(k, _)| compare_of(ss, k).is_some())
            .collect();
        ss == ms
            && sf.len() == mf.len()
            && sf.iter().zip(mf).all(|((sk, sv), (mk, mv))| {
                sk == mk && compare_of(ss, sk).is_some_and(|c| values_match(c, sv, mv))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MASTER: &str = "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\nprocess_id:25586\r\nserver_time_usec:1796666808268504\r\nuptime_in_seconds:7239\r\nhz:10\r\nconfigured_hz:10\r\nio_threads_active:0\r\n\r\n# Clients\r\nconnected_clients:3\r\n\r\n# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=127.0.0.1,port=7500,state=online,offset=32918,lag=1\r\nmaster_failover_state:no-failover\r\nmaster_replid:b02cf98ee563e94f34eb2305e0bd6ff9225e6731\r\nmaster_repl_offset:32918\r\nsecond_repl_offset:-1\r\n\r\n# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=4999\r\n";

    const MODEL: &str = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\nserver_time_usec:1700000000000000\r\nhz:10\r\nconfigured_hz:10\r\n\r\n# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=replica,port=6379,state=online,offset=32900,lag=0\r\nmaster_failover_state:no-failover\r\nmaster_repl_offset:32900\r\n\r\n# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=5000\r\n";

    #[test]
    fn the_fields_the_model_answers_compare_and_the_rest_are_left_out() {
        assert!(info_matches(MASTER.as_bytes(), MODEL.as_bytes()));
        // A compared value, a compared subfield, a field or a db line missing: no match.
        for (from, to) in [
            ("connected_slaves:1", "connected_slaves:2"),
            ("state=online", "state=wait_bgsave"),
            ("hz:10\r\nconfigured", "configured"),
            ("db0:keys=3,expires=1,avg_ttl=5000\r\n", ""),
            ("keys=3,expires=1", "keys=3,expires=2"),
        ] {
            let changed = MODEL.replacen(from, to, 1);
            assert_ne!(changed, MODEL, "{from}");
            assert!(
                !info_matches(MASTER.as_bytes(), changed.as_bytes()),
                "{from} -> {to}"
            );
        }
        // A field the model does not declare may not appear in its reply.
        let extra = MODEL.replacen("hz:10", "hz:10\r\nprocess_id:1", 1);
        assert!(!info_matches(MASTER.as_bytes(), extra.as_bytes()));
        // An unknown section: nothing on either side.
        assert!(info_matches(b"", b""));
        assert!(!info_matches(b"", MODEL.as_bytes()));
    }
}
