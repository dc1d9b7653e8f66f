//! PUBLISH/SUBSCRIBE as Redis 7.0 has them (no cluster, RESP2), delivered over the simulated
//! network: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, and PUBLISH returning the number
//! of receivers and pushing `message` / `pmessage` arrays to each of them.
//!
//! Checked against redis-server 7.0.15 (tests/conformance/recorded/pubsub.txt):
//! - `SUBSCRIBE a b` answers one `["subscribe", channel, count]` array per channel, `count`
//!   being the connection's channels plus patterns after that step; a repeated channel counts
//!   once. UNSUBSCRIBE and PUNSUBSCRIBE without arguments drop every channel (pattern) and, when
//!   there was none, answer `["unsubscribe", nil, 0]`.
//! - `PUBLISH ch m` counts each channel subscriber and each matching pattern of every
//!   connection (a connection with both counts twice) and sends `["message", ch, m]` and
//!   `["pmessage", pattern, ch, m]`.
//! - A master forces PUBLISH into the replication stream, so a replica delivers it to its own
//!   subscribers (its PUBLISH reply on the master counts only the master's).
//! - A crashed node loses every subscription: a client has to subscribe again.
//! - In RESP2 a connection with a subscription accepts only (P|S)SUBSCRIBE,
//!   (P|S)UNSUBSCRIBE, PING (answered `["pong", msg]`), QUIT and RESET.
//!
//! Connections: the corpus runner (caller `None`) is one connection, so it is held to the
//! subscribed-mode restriction. A simulated client process stands for a library with a
//! dedicated pub/sub connection (Redisson's `PublishSubscribeService`, redis-py's `PubSub`,
//! ioredis's subscriber): its (P)SUBSCRIBEs are on that connection and its other commands on
//! its command connection, so the restriction never applies to them. The first confirmation
//! of a multi-channel (P)(UN)SUBSCRIBE is the reply; the others follow as pushes, as they do
//! on the wire. A bare UNSUBSCRIBE confirms channels in sorted order (Redis uses its dict's
//! order, which no client relies on).

use std::collections::{BTreeMap, BTreeSet};

use crate::proto::{Bytes, Msg, Reply};
use crate::redis::keyspace::glob_match;
use crate::redis::node::RedisNode;
use crate::time::ProcId;

/// A subscriber: a client process's pub/sub connection, or the corpus runner (`None`).
pub type Subscriber = Option<ProcId>;

/// Which kind of subscription a command manages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubKind {
    Channel,
    Pattern,
}

impl SubKind {
    fn subscribe_word(self) -> &'static [u8] {
        match self {
            SubKind::Channel => b"subscribe",
            SubKind::Pattern => b"psubscribe",
        }
    }
    fn unsubscribe_word(self) -> &'static [u8] {
        match self {
            SubKind::Channel => b"unsubscribe",
            SubKind::Pattern => b"punsubscribe",
        }
    }
}

/// The node's subscriptions.
#[derive(Clone, Debug, Default)]
pub struct PubSub {
    // Invariant: `channels[c]` contains s iff `by_subscriber[s].0` contains c (and the same
    // for patterns with `.1`); no set is kept empty.
    channels: BTreeMap<Bytes, BTreeSet<Subscriber>>,
    patterns: BTreeMap<Bytes, BTreeSet<Subscriber>>,
    by_subscriber: BTreeMap<Subscriber, (BTreeSet<Bytes>, BTreeSet<Bytes>)>,
}

impl PubSub {
    /// Channels plus patterns of one subscriber (the count in every confirmation).
    pub fn count_of(&self, s: Subscriber) -> usize {
        self.by_subscriber
            .get(&s)
            .map_or(0, |(c, p)| c.len() + p.len())
    }

    /// Is this connection in RESP2 subscribed mode?
    pub fn is_subscribed(&self, s: Subscriber) -> bool {
        self.count_of(s) > 0
    }

    /// Is nobody subscribed to anything? (PUBLISH's fast path.)
    pub fn is_empty(&self) -> bool {
        self.by_subscriber.is_empty()
    }

    fn table(&mut self, kind: SubKind) -> &mut BTreeMap<Bytes, BTreeSet<Subscriber>> {
        match kind {
            SubKind::Channel => &mut self.channels,
            SubKind::Pattern => &mut self.patterns,
        }
    }

    fn own(&mut self, s: Subscriber, kind: SubKind) -> &mut BTreeSet<Bytes> {
        let e = self.by_subscriber.entry(s).or_default();
        match kind {
            SubKind::Channel => &mut e.0,
            SubKind::Pattern => &mut e.1,
        }
    }

    fn confirmation(word: &[u8], name: Option<&Bytes>, count: usize) -> Reply {
        Reply::Array(vec![
            Reply::Bulk(word.to_vec()),
            name.map_or(Reply::Nil, |n| Reply::Bulk(n.to_vec())),
            Reply::Int(count as i64),
        ])
    }

    /// (P)SUBSCRIBE: one confirmation per name, in order.
    pub fn subscribe(&mut self, s: Subscriber, kind: SubKind, names: &[Bytes]) -> Vec<Reply> {
        let mut out = Vec::with_capacity(names.len());
        for n in names {
            if self.own(s, kind).insert(n.clone()) {
                self.table(kind).entry(n.clone()).or_default().insert(s);
            }
            out.push(Self::confirmation(
                kind.subscribe_word(),
                Some(n),
                self.count_of(s),
            ));
        }
        out
    }

    /// (P)UNSUBSCRIBE: one confirmation per name; no names means all of this kind.
    pub fn unsubscribe(&mut self, s: Subscriber, kind: SubKind, names: &[Bytes]) -> Vec<Reply> {
        let names: Vec<Bytes> = if names.is_empty() {
            self.own(s, kind).iter().cloned().collect()
        } else {
            names.to_vec()
        };
        if names.is_empty() {
            self.drop_if_idle(s);
            return vec![Self::confirmation(kind.unsubscribe_word(), None, 0)];
        }
        let mut out = Vec::with_capacity(names.len());
        for n in &names {
            if self.own(s, kind).remove(n) {
                let table = self.table(kind);
                if let Some(set) = table.get_mut(n) {
                    set.remove(&s);
                    if set.is_empty() {
                        table.remove(n);
                    }
                }
            }
            out.push(Self::confirmation(
                kind.unsubscribe_word(),
                Some(n),
                self.count_of(s),
            ));
        }
        self.drop_if_idle(s);
        out
    }

    fn drop_if_idle(&mut self, s: Subscriber) {
        if self
            .by_subscriber
            .get(&s)
            .is_some_and(|(c, p)| c.is_empty() && p.is_empty())
        {
            self.by_subscriber.remove(&s);
        }
    }

    /// The pushes a PUBLISH produces, in Redis's order: channel subscribers first, then
    /// pattern subscribers pattern by pattern.
    pub fn deliveries(&self, channel: &Bytes, message: &Bytes) -> Vec<(Subscriber, Reply)> {
        let mut out = Vec::new();
        if let Some(set) = self.channels.get(channel) {
            for s in set {
                out.push((
                    *s,
                    Reply::Array(vec![
                        Reply::Bulk(b"message".to_vec()),
                        Reply::Bulk(channel.to_vec()),
                        Reply::Bulk(message.to_vec()),
                    ]),
                ));
            }
        }
        for (pattern, set) in &self.patterns {
            if !glob_match(pattern, channel) {
                continue;
            }
            for s in set {
                out.push((
                    *s,
                    Reply::Array(vec![
                        Reply::Bulk(b"pmessage".to_vec()),
                        Reply::Bulk(pattern.to_vec()),
                        Reply::Bulk(channel.to_vec()),
                        Reply::Bulk(message.to_vec()),
                    ]),
                ));
            }
        }
        out
    }
}

/// The RESP2 subscribed-mode refusal for `name` (lower-case command name).
pub fn subscribed_mode_error(name: &str) -> Reply {
    Reply::Error(format!(
        "ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    ))
}

impl RedisNode {
    /// PUBLISH: pushes to every receiver (over the network; the corpus runner's own
    /// connection cannot be both subscribed and publishing, so its pushes are only counted)
    /// and returns how many there were.
    pub(crate) fn publish(&mut self, channel: &Bytes, message: &Bytes) -> Reply {
        if self.pubsub.is_empty() {
            return Reply::Int(0);
        }
        let deliveries = self.pubsub.deliveries(channel, message);
        let n = deliveries.len();
        for (to, reply) in deliveries {
            if let Some(to) = to {
                self.repl.outbox.push((to, Msg::Push { reply }));
            }
        }
        Reply::Int(n as i64)
    }

    /// (P)(UN)SUBSCRIBE: the first confirmation is the reply, the rest are pushed.
    pub(crate) fn subscription(
        &mut self,
        s: Subscriber,
        kind: SubKind,
        subscribe: bool,
        names: &[Bytes],
    ) -> Reply {
        let mut replies = if subscribe {
            self.pubsub.subscribe(s, kind, names)
        } else {
            self.pubsub.unsubscribe(s, kind, names)
        };
        let first = replies.remove(0);
        if let Some(to) = s {
            for reply in replies {
                self.repl.outbox.push((to, Msg::Push { reply }));
            }
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::from(s)
    }

    fn conf(word: &str, name: Option<&str>, n: i64) -> Reply {
        Reply::Array(vec![
            Reply::Bulk(word.as_bytes().to_vec()),
            name.map_or(Reply::Nil, |n| Reply::Bulk(n.as_bytes().to_vec())),
            Reply::Int(n),
        ])
    }

    const A: Subscriber = Some(ProcId(3));
    const B: Subscriber = Some(ProcId(4));

    #[test]
    fn a_repeated_channel_counts_once_and_patterns_add_to_the_count() {
        let mut ps = PubSub::default();
        assert_eq!(
            ps.subscribe(A, SubKind::Channel, &[b("ch"), b("ch2")]),
            vec![
                conf("subscribe", Some("ch"), 1),
                conf("subscribe", Some("ch2"), 2)
            ]
        );
        assert_eq!(
            ps.subscribe(A, SubKind::Channel, &[b("ch")]),
            vec![conf("subscribe", Some("ch"), 2)]
        );
        assert_eq!(
            ps.subscribe(A, SubKind::Pattern, &[b("c*")]),
            vec![conf("psubscribe", Some("c*"), 3)]
        );
        // Unsubscribing from a channel never subscribed still confirms, with the count.
        assert_eq!(
            ps.unsubscribe(A, SubKind::Channel, &[b("nope")]),
            vec![conf("unsubscribe", Some("nope"), 3)]
        );
        assert_eq!(ps.unsubscribe(A, SubKind::Channel, &[]).len(), 2);
        assert_eq!(
            ps.unsubscribe(A, SubKind::Pattern, &[]),
            vec![conf("punsubscribe", Some("c*"), 0)]
        );
        assert!(!ps.is_subscribed(A));
        assert_eq!(
            ps.unsubscribe(A, SubKind::Channel, &[]),
            vec![conf("unsubscribe", None, 0)]
        );
        assert!(ps.is_empty());
    }

    #[test]
    fn a_publish_reaches_a_channel_and_a_matching_pattern_of_one_connection_twice() {
        let mut ps = PubSub::default();
        ps.subscribe(A, SubKind::Channel, &[b("ch")]);
        ps.subscribe(A, SubKind::Pattern, &[b("c*"), b("x*")]);
        ps.subscribe(B, SubKind::Channel, &[b("other")]);
        let d = ps.deliveries(&b("ch"), &b("hello"));
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].0, A);
        assert_eq!(
            d[1].1,
            Reply::Array(vec![
                Reply::Bulk(b"pmessage".to_vec()),
                Reply::Bulk(b"c*".to_vec()),
                Reply::Bulk(b"ch".to_vec()),
                Reply::Bulk(b"hello".to_vec()),
            ])
        );
        assert!(ps.deliveries(&b("zz"), &b("m")).is_empty());
    }
}
