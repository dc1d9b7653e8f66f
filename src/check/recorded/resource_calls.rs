//! A logged resource call judged as it is read: a write against the versions read and the
//! holdings open (`Judge::write`), a read noted for the writes after it (`Judge::read`). A
//! child of `recorded`: it only adds an `impl` block to its `Judge`.

use super::{
    Candidate, Ending, Ev, Judge, Outcome, ReadRec, Us, Verdict, WriteRec, fmt_us, offer,
    outcome_name, shown_plain, shown_quoted,
};

impl Judge {
    /// A write, judged against its writer's own holding as it comes (program order tells
    /// whether the writer still held), and kept for the checks that need every write.
    pub(super) fn write(&mut self, e: &Ev<'_>, client: u32, resource: u32) {
        if e.result == Outcome::Fail {
            // Refused: not applied, so nothing was written outside a holding or lost.
            return;
        }
        let cap = |v: Verdict| {
            if e.result == Outcome::Unknown {
                v.min(Verdict::Possible)
            } else {
                v
            }
        };
        let uw = self.u(e.host);
        let newest_open = self
            .open_by_client
            .range((client, 0)..=(client, usize::MAX))
            .next_back()
            .map(|(_, &v)| v);
        let st = self.clients.entry(client).or_default();
        let (lock_calls, last_lock, ended) = (st.lock_calls, st.last_lock, st.ended);
        let mut governing = None;
        if let Some((lock, token)) = newest_open {
            governing = Some(lock);
            self.judged_writes += 1;
            let o = &self.open[&(lock, client, token)];
            if let Some(d) = o.believed_until_us {
                let uh = self.hosts[o.host].uncertainty_us;
                let (inv, comp) = (Us::from(e.invoke_us), Us::from(e.complete_us));
                let v = if inv - uw > d + uh {
                    Verdict::Violated
                } else if comp + uw > d - uh {
                    Verdict::Possible
                } else {
                    Verdict::Held
                };
                if v > Verdict::Held {
                    let line = o.line;
                    let message = if v == Verdict::Violated {
                        format!(
                            "{}'s write to {} (line {}) began {} after its holding of {} \
                             (line {line}) ran out by its own clock, bounds ±{} and ±{}",
                            shown_plain(e.client),
                            shown_quoted(e.object),
                            e.line,
                            fmt_us(inv - d),
                            shown_quoted(self.names.get(lock)),
                            fmt_us(uw),
                            fmt_us(uh)
                        )
                    } else {
                        format!(
                            "{}'s write to {} (line {}) may have been made after its holding \
                             of {} (line {line}) ran out: within the clock bounds ±{} and ±{}",
                            shown_plain(e.client),
                            shown_quoted(e.object),
                            e.line,
                            shown_quoted(self.names.get(lock)),
                            fmt_us(uw),
                            fmt_us(uh)
                        )
                    };
                    offer(
                        &mut self.own,
                        Candidate {
                            verdict: cap(v),
                            line: e.line,
                            lines: vec![line, e.line],
                            message,
                        },
                    );
                }
            }
        } else if lock_calls {
            // It made lock calls and holds nothing now: by its own program order the write
            // came after its holding ended (or without one).
            governing = last_lock;
            self.judged_writes += 1;
            let (how, line) = match ended {
                Some((l, Ending::Released, lock)) => (
                    format!(
                        "after its release of {} (line {l})",
                        shown_quoted(self.names.get(lock))
                    ),
                    l,
                ),
                Some((l, Ending::ExtendFailed, lock)) => (
                    format!(
                        "after its extend of {} failed (line {l})",
                        shown_quoted(self.names.get(lock))
                    ),
                    l,
                ),
                Some((l, Ending::NotAcquired, lock)) => (
                    format!(
                        "without holding {}: its acquire (line {l}) did not succeed",
                        shown_quoted(self.names.get(lock))
                    ),
                    l,
                ),
                None => ("without holding a lock".to_string(), e.line),
            };
            offer(
                &mut self.own,
                Candidate {
                    verdict: cap(Verdict::Violated),
                    line: e.line,
                    lines: vec![line, e.line],
                    message: format!(
                        "{}'s write to {} (line {}) was made {how}{}",
                        shown_plain(e.client),
                        shown_quoted(e.object),
                        e.line,
                        if e.result == Outcome::Unknown {
                            " (its outcome is unknown)"
                        } else {
                            ""
                        }
                    ),
                },
            );
        }
        // Versions: the base is what the write says it read, or what its client last read
        // or wrote; it makes one above its base unless it says what it made.
        let known = self.known.remove(&(client, resource));
        let base = e.read_version.or(known);
        let wrote = e.wrote_version.or(base.and_then(|b| b.checked_add(1)));
        // After an unknown outcome the client no longer knows the version.
        if e.result == Outcome::Ok
            && let Some(w) = wrote
        {
            self.known.insert((client, resource), w);
        }
        if let (Some(b), Some(w)) = (base, wrote)
            && Some(w) != b.checked_add(1)
        {
            let how = if w > b {
                format!(
                    "{} other update(s) applied between its read and its write were overwritten",
                    w - b - 1
                )
            } else {
                "the resource's version went back".to_string()
            };
            offer(
                &mut self.lost_at_write,
                Candidate {
                    verdict: cap(Verdict::Violated),
                    line: e.line,
                    lines: vec![e.line],
                    message: format!(
                        "{}'s write to {} (line {}, {}) was based on v{b} but made v{w}: {how}",
                        shown_plain(e.client),
                        shown_quoted(e.object),
                        e.line,
                        outcome_name(e.result)
                    ),
                },
            );
        }
        if wrote.is_some() {
            self.versioned_writes += 1;
        }
        if e.fence.is_some() || wrote.is_some() || governing.is_some() {
            self.writes.push(WriteRec {
                resource,
                client,
                host: e.host,
                invoke_us: e.invoke_us,
                complete_us: e.complete_us,
                result: e.result,
                fence: e.fence,
                wrote,
                line: e.line,
                lock: governing,
            });
        }
    }

    pub(super) fn read(&mut self, e: &Ev<'_>, client: u32, resource: u32) {
        if e.result != Outcome::Ok {
            return;
        }
        let Some(v) = e.read_version else {
            return;
        };
        self.known.insert((client, resource), v);
        self.reads.push(ReadRec {
            resource,
            client,
            host: e.host,
            invoke_us: e.invoke_us,
            version: v,
            line: e.line,
        });
    }
}
