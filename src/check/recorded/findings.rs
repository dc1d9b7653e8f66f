//! What check-log finds once every event is read: each property's verdict over the judged
//! holdings, writes and reads (`Judge::finish`). A child of `recorded`: it only adds an
//! `impl` block to its `Judge`.

use super::{
    Candidate, Finding, Held, HoldingEnd, Judge, Outcome, Report, Us, Verdict, WriteRec,
    fmt_signed_us, fmt_us, offer, outcome_name, shown_plain, shown_quoted,
};

impl Judge {
    pub(super) fn finish(mut self) -> Report {
        let log_end = Us::from(self.log_end_us.unwrap_or(0));
        let open = std::mem::take(&mut self.open);
        for (key, o) in open {
            self.close(key, o, log_end, None, HoldingEnd::LogEnd);
        }
        let findings = vec![
            self.mutual_exclusion(),
            self.resource_safety(),
            self.foreign_unlock(),
            self.stale_write(),
            self.lost_update(),
        ];
        let mut shown_events = std::mem::take(&mut self.shown_events).into_vec();
        shown_events.sort();
        let mut shown_holdings = std::mem::take(&mut self.shown_holdings).into_vec();
        shown_holdings.sort();
        Report {
            events: self.events,
            holdings: self.held.len(),
            findings,
            warnings: self.warnings,
            warnings_total: self.warnings_total,
            drawn: self.drawn.take(),
            origin_us: Us::from(self.origin_us.unwrap_or(0)),
            shown_events,
            shown_holdings,
            hosts: self.hosts,
        }
    }

    // -----------------------------------------------------------------------------------
    // The properties.

    /// Two clients believed they held the same lock at the same true instant.
    /// Certain when the holdings overlap even shrunk by their hosts' bounds
    /// (`[start + u, end - u]`), possible when they overlap grown by them.
    fn mutual_exclusion(&self) -> Finding {
        let hs = &self.held;
        let u = |h: &Held| self.u(h.host);
        let certain = self.first_overlap(|h| (h.start_us + u(h), h.end_us - u(h)));
        let possible = self.first_overlap(|h| (h.start_us - u(h), h.end_us + u(h)));
        let (verdict, pair) = match (certain, possible) {
            (Some(p), _) => (Verdict::Violated, Some(p)),
            (None, Some(p)) => (Verdict::Possible, Some(p)),
            (None, None) => (Verdict::Held, None),
        };
        let (lines, message) = match pair {
            None => (
                vec![],
                "no two clients believed they held a lock at once".to_string(),
            ),
            Some((a, b)) => {
                let (a, b) = (&hs[a], &hs[b]);
                let shared = a.end_us.min(b.end_us) - a.start_us.max(b.start_us);
                (
                    vec![a.line, b.line],
                    format!(
                        "{} (line {}) and {} (line {}) both believed they held {}; by their \
                         clocks for {}, bounds ±{} and ±{}",
                        shown_plain(self.names.get(a.client)),
                        a.line,
                        shown_plain(self.names.get(b.client)),
                        b.line,
                        shown_quoted(self.names.get(a.lock)),
                        fmt_signed_us(shared),
                        fmt_us(u(a)),
                        fmt_us(u(b)),
                    ),
                )
            }
        };
        Finding {
            property: "mutual_exclusion",
            verdict,
            lines,
            message,
        }
    }

    /// The first (by start) pair of holdings of one lock by different clients whose spans,
    /// as `span` gives them, overlap (an empty span overlaps nothing). One sweep: sorted by
    /// start, keeping the two furthest-reaching spans of distinct clients seen so far.
    fn first_overlap(&self, span: impl Fn(&Held) -> (Us, Us)) -> Option<(usize, usize)> {
        let hs = &self.held;
        let mut order: Vec<(&str, Us, Us, usize)> = hs
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let (s, e) = span(h);
                (self.names.get(h.lock), s, e, i)
            })
            .filter(|&(_, s, e, _)| s < e)
            .collect();
        order.sort();
        let mut lock = None;
        let mut reach = Top2::default();
        for &(l, s, e, i) in &order {
            if lock != Some(l) {
                lock = Some(l);
                reach = Top2::default();
            }
            let client = hs[i].client;
            if let Some(c) = reach.other_than(client)
                && c.end > s
            {
                return Some((c.idx, i));
            }
            reach.add(Reach {
                end: e,
                idx: i,
                client,
            });
        }
        None
    }

    /// The resource applied a write whose fencing token is lower than one it had already
    /// applied. Certain when an `ok` write with a higher token completed, by the bounds,
    /// before the lower one was invoked; possible when the bounds allow that order, or when
    /// one of the two writes' outcome is `unknown`. `fail` writes were refused and do not
    /// count.
    fn resource_safety(&self) -> Finding {
        let writes: Vec<&WriteRec> = self.writes.iter().filter(|w| w.fence.is_some()).collect();
        let u = |w: &WriteRec| self.u(w.host);
        // For each lower write, the highest token among writes certainly (or possibly)
        // applied before it started; a sweep per resource over writes sorted by when they
        // surely ended.
        let search = |certain: bool| -> Option<(usize, usize)> {
            let mut by_end: Vec<(&str, Us, usize)> = Vec::new();
            let mut by_start: Vec<(&str, Us, usize)> = Vec::new();
            for (i, w) in writes.iter().enumerate() {
                if certain && w.result != Outcome::Ok {
                    continue;
                }
                let (inv, comp) = (Us::from(w.invoke_us), Us::from(w.complete_us));
                let (end, start) = if certain {
                    (comp + u(w), inv - u(w))
                } else {
                    (inv - u(w), comp + u(w))
                };
                let obj = self.names.get(w.resource);
                by_end.push((obj, end, i));
                by_start.push((obj, start, i));
            }
            by_end.sort();
            by_start.sort();
            let mut found: Option<(usize, usize)> = None;
            let mut j = 0;
            let mut max: Option<(u64, usize)> = None;
            let mut object = None;
            for &(obj, start, lo) in &by_start {
                if object != Some(obj) {
                    object = Some(obj);
                    max = None;
                    while j < by_end.len() && by_end[j].0 < obj {
                        j += 1;
                    }
                }
                while j < by_end.len() && by_end[j].0 == obj && by_end[j].1 < start {
                    let hi = by_end[j].2;
                    let t = writes[hi].fence.unwrap_or(0);
                    if max.is_none_or(|(m, _)| t > m) {
                        max = Some((t, hi));
                    }
                    j += 1;
                }
                if let Some((t, hi)) = max
                    && writes[lo].fence.unwrap_or(0) < t
                    && hi != lo
                    && found.is_none_or(|f| writes[f.1].line > writes[lo].line)
                {
                    found = Some((hi, lo));
                }
            }
            found
        };
        let (verdict, pair) = match (search(true), search(false)) {
            (Some(p), _) => (Verdict::Violated, Some(p)),
            (None, Some(p)) => (Verdict::Possible, Some(p)),
            (None, None) => (Verdict::Held, None),
        };
        let (lines, message) = match pair {
            None => (
                vec![],
                "no write with a lower token was applied after a higher one".to_string(),
            ),
            Some((hi, lo)) => {
                let (hi, lo) = (writes[hi], writes[lo]);
                (
                    vec![hi.line, lo.line],
                    format!(
                        "{} applied {}'s write with token {} (line {}, {}) after {}'s with \
                         token {} (line {}, {})",
                        shown_quoted(self.names.get(lo.resource)),
                        shown_plain(self.names.get(lo.client)),
                        lo.fence.unwrap_or(0),
                        lo.line,
                        outcome_name(lo.result),
                        shown_plain(self.names.get(hi.client)),
                        hi.fence.unwrap_or(0),
                        hi.line,
                        outcome_name(hi.result),
                    ),
                )
            }
        };
        Finding {
            property: "resource_safety",
            verdict,
            lines,
            message,
        }
    }

    /// A release removed a key holding another token. Only a log that records what the
    /// release removed (`removed_token`, e.g. from GETDEL) can show it; that record is
    /// direct, so a mismatch is certain.
    fn foreign_unlock(&self) -> Finding {
        let recorded = self.removals_recorded;
        match &self.foreign {
            Some(c) => Finding {
                property: "foreign_unlock",
                verdict: c.verdict,
                lines: c.lines.clone(),
                message: c.message.clone(),
            },
            None => Finding {
                property: "foreign_unlock",
                verdict: if recorded == 0 {
                    Verdict::Unobserved
                } else {
                    Verdict::Held
                },
                lines: vec![],
                message: if recorded == 0 {
                    "not observable: no release records `removed_token`".to_string()
                } else {
                    format!(
                        "every one of {recorded} recorded removals took the releaser's own token"
                    )
                },
            },
        }
    }

    /// A write applied outside its writer's own believed holding (judged as it came), or
    /// inside another client's holding of the lock it was under: certain when every
    /// placement puts the write inside the other's span shrunk by its bound, possible when
    /// the spans grown by the bounds meet.
    fn stale_write(&self) -> Finding {
        let mut best: Option<Candidate> = None;
        if let Some(c) = &self.own {
            best = Some(Candidate {
                verdict: c.verdict,
                line: c.line,
                lines: c.lines.clone(),
                message: c.message.clone(),
            });
        }
        let cross = match self.write_inside_other(true) {
            Some(found) => Some((true, found)),
            None => self.write_inside_other(false).map(|found| (false, found)),
        };
        {
            if let Some((certain, (wi, hi))) = cross {
                let (w, h) = (&self.writes[wi], &self.held[hi]);
                let verdict = if certain {
                    Verdict::Violated
                } else {
                    Verdict::Possible
                };
                let (uw, uh) = (self.u(w.host), self.u(h.host));
                let message = format!(
                    "{}'s write to {} (line {}, {}) {} {}'s holding of {} (line {}), bounds \
                     ±{} and ±{}",
                    shown_plain(self.names.get(w.client)),
                    shown_quoted(self.names.get(w.resource)),
                    w.line,
                    outcome_name(w.result),
                    if certain {
                        "landed inside"
                    } else {
                        "may have landed inside"
                    },
                    shown_plain(self.names.get(h.client)),
                    shown_quoted(self.names.get(h.lock)),
                    h.line,
                    fmt_us(uw),
                    fmt_us(uh),
                );
                match &mut best {
                    // The same write, outside its own holding too: one message says both.
                    Some(b) if b.line == w.line && b.verdict >= verdict => {
                        b.message = format!("{}; and it {}", b.message, {
                            let m = if certain {
                                "landed inside"
                            } else {
                                "may have landed inside"
                            };
                            format!(
                                "{m} {}'s holding of {} (line {})",
                                shown_plain(self.names.get(h.client)),
                                shown_quoted(self.names.get(h.lock)),
                                h.line
                            )
                        });
                        if !b.lines.contains(&h.line) {
                            b.lines.push(h.line);
                        }
                    }
                    _ => offer(
                        &mut best,
                        Candidate {
                            verdict,
                            line: w.line,
                            lines: vec![h.line, w.line],
                            message,
                        },
                    ),
                }
            }
        }
        match best {
            Some(c) => Finding {
                property: "stale_write",
                verdict: c.verdict,
                lines: c.lines,
                message: c.message,
            },
            None if self.judged_writes == 0 => Finding {
                property: "stale_write",
                verdict: Verdict::Unobserved,
                lines: vec![],
                message: "not observable: no applied write by a client whose lock calls are \
                          in the log"
                    .to_string(),
            },
            None => Finding {
                property: "stale_write",
                verdict: Verdict::Held,
                lines: vec![],
                message: format!(
                    "each of {} judged writes was made inside its writer's believed holding \
                     and outside every other client's",
                    self.judged_writes
                ),
            },
        }
    }

    /// The earliest-line applied write (with a governing lock) that lands inside another
    /// client's non-empty holding of that lock: (write, holding). `certain`: `ok` writes
    /// whose grown interval lies inside the holding's shrunk span; otherwise writes whose
    /// grown interval meets the holding's grown span.
    fn write_inside_other(&self, certain: bool) -> Option<(usize, usize)> {
        // Holdings by (lock, from); writes by (lock, key); a holding joins the sweep once
        // its `from` is at or before the write's key.
        let mut hs: Vec<(u32, Us, Us, usize)> = Vec::new();
        for (i, h) in self.held.iter().enumerate() {
            if h.start_us >= h.end_us {
                continue;
            }
            let u = self.u(h.host);
            let (from, to) = if certain {
                (h.start_us + u, h.end_us - u)
            } else {
                (h.start_us - u, h.end_us + u)
            };
            if from < to {
                hs.push((h.lock, from, to, i));
            }
        }
        // (lock, key, need, write): certain needs the holding to start by the write's
        // earliest instant and end after its latest; possible needs it to start before the
        // write's latest and end after its earliest.
        let mut ws: Vec<(u32, Us, Us, usize)> = Vec::new();
        for (i, w) in self.writes.iter().enumerate() {
            let Some(lock) = w.lock else { continue };
            if certain && w.result != Outcome::Ok {
                continue;
            }
            let u = self.u(w.host);
            let (lo, hi) = (Us::from(w.invoke_us) - u, Us::from(w.complete_us) + u);
            if certain {
                ws.push((lock, lo, hi, i));
            } else {
                ws.push((lock, hi, lo, i));
            }
        }
        hs.sort();
        ws.sort();
        let mut found: Option<(usize, usize)> = None;
        let mut j = 0;
        let mut lock = None;
        let mut reach = Top2::default();
        for &(l, key, need, wi) in &ws {
            if lock != Some(l) {
                lock = Some(l);
                reach = Top2::default();
                while j < hs.len() && hs[j].0 < l {
                    j += 1;
                }
            }
            while j < hs.len()
                && hs[j].0 == l
                && (if certain {
                    hs[j].1 <= key
                } else {
                    hs[j].1 < key
                })
            {
                let (_, _, to, hi) = hs[j];
                reach.add(Reach {
                    end: to,
                    idx: hi,
                    client: self.held[hi].client,
                });
                j += 1;
            }
            if let Some(r) = reach.other_than(self.writes[wi].client) {
                let inside = if certain { r.end >= need } else { r.end > need };
                if inside && found.is_none_or(|(f, _)| self.writes[f].line > self.writes[wi].line) {
                    found = Some((wi, r.idx));
                }
            }
        }
        found
    }

    /// An update lost, judged as the simulator's `resource_safety` does: with versions that
    /// every applied write raises by exactly one, a write was applied on top of a version
    /// other than the one it was based on. Seen as: a write that made more than one above
    /// its base (judged as it came); two applied writes that made the same version; a write
    /// applied after one that had made a higher version; a read that returned a version
    /// lower than one a write had certainly made before it (the resource went back).
    fn lost_update(&self) -> Finding {
        let mut best: Option<Candidate> = None;
        if let Some(c) = &self.lost_at_write {
            best = Some(Candidate {
                verdict: c.verdict,
                line: c.line,
                lines: c.lines.clone(),
                message: c.message.clone(),
            });
        }
        let writes: Vec<&WriteRec> = self.writes.iter().filter(|w| w.wrote.is_some()).collect();
        let who = |w: &WriteRec| shown_plain(self.names.get(w.client));
        // Two applied writes that made the same version: versions rise by one per applied
        // write, so one of them was applied on top of the other's result unread.
        let mut by_version: Vec<(&str, u64, usize, usize)> = writes
            .iter()
            .enumerate()
            .map(|(i, w)| (self.names.get(w.resource), w.wrote.unwrap_or(0), w.line, i))
            .collect();
        by_version.sort();
        for pair in by_version.windows(2) {
            let ((ra, va, _, a), (rb, vb, _, b)) = (pair[0], pair[1]);
            if ra != rb || va != vb {
                continue;
            }
            let (a, b) = (writes[a], writes[b]);
            let both_ok = a.result == Outcome::Ok && b.result == Outcome::Ok;
            offer(
                &mut best,
                Candidate {
                    verdict: if both_ok {
                        Verdict::Violated
                    } else {
                        Verdict::Possible
                    },
                    line: b.line,
                    lines: vec![a.line, b.line],
                    message: format!(
                        "{} (line {}, {}) and {} (line {}, {}) both made v{va} of {}: the one \
                         applied second overwrote the other's update without reading it",
                        who(a),
                        a.line,
                        outcome_name(a.result),
                        who(b),
                        b.line,
                        outcome_name(b.result),
                        shown_quoted(ra),
                    ),
                },
            );
        }
        // A write or read after a write that had made a higher version. Sweep per resource
        // by version, highest first: before a version's writes join, the writes and reads
        // of that version meet the earliest end (certain) and earliest start (possible)
        // among writes of higher versions.
        #[derive(Clone, Copy)]
        enum Item {
            W(usize),
            R(usize),
        }
        let mut items: Vec<(&str, std::cmp::Reverse<u64>, usize, Item)> = Vec::new();
        for (i, w) in writes.iter().enumerate() {
            items.push((
                self.names.get(w.resource),
                std::cmp::Reverse(w.wrote.unwrap_or(0)),
                w.line,
                Item::W(i),
            ));
        }
        for (i, r) in self.reads.iter().enumerate() {
            items.push((
                self.names.get(r.resource),
                std::cmp::Reverse(r.version),
                r.line,
                Item::R(i),
            ));
        }
        items.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        let mut k = 0;
        let mut resource = None;
        // (instant, write index): earliest certain end of an ok write, earliest possible
        // start of any applied write, among higher versions.
        let mut surely_done: Option<(Us, usize)> = None;
        let mut maybe_begun: Option<(Us, usize)> = None;
        while k < items.len() {
            let (res, version) = (items[k].0, items[k].1);
            if resource != Some(res) {
                resource = Some(res);
                surely_done = None;
                maybe_begun = None;
            }
            let group_end = items[k..]
                .iter()
                .position(|it| (it.0, it.1) != (res, version))
                .map_or(items.len(), |p| k + p);
            for &(_, _, _, item) in &items[k..group_end] {
                match item {
                    Item::W(i) => {
                        let y = writes[i];
                        let uy = self.u(y.host);
                        let (inv, comp) = (Us::from(y.invoke_us), Us::from(y.complete_us));
                        let hit = match (surely_done, maybe_begun) {
                            (Some((t, x)), _) if y.result == Outcome::Ok && t < inv - uy => {
                                Some((Verdict::Violated, x))
                            }
                            (_, Some((t, x))) if t < comp + uy => Some((Verdict::Possible, x)),
                            _ => None,
                        };
                        if let Some((verdict, x)) = hit {
                            let x = writes[x];
                            offer(
                                &mut best,
                                Candidate {
                                    verdict,
                                    line: y.line,
                                    lines: vec![x.line, y.line],
                                    message: format!(
                                        "{}'s write (line {}, {}) making v{} of {} was applied \
                                         {} {}'s write (line {}, {}) had made v{}: the later \
                                         write was based on a stale read",
                                        who(y),
                                        y.line,
                                        outcome_name(y.result),
                                        y.wrote.unwrap_or(0),
                                        shown_quoted(res),
                                        if verdict == Verdict::Violated {
                                            "after"
                                        } else {
                                            "possibly after (within the clock bounds)"
                                        },
                                        who(x),
                                        x.line,
                                        outcome_name(x.result),
                                        x.wrote.unwrap_or(0),
                                    ),
                                },
                            );
                        }
                    }
                    Item::R(i) => {
                        let r = &self.reads[i];
                        let ur = self.u(r.host);
                        if let Some((t, x)) = surely_done
                            && t < Us::from(r.invoke_us) - ur
                        {
                            let x = writes[x];
                            offer(
                                &mut best,
                                Candidate {
                                    verdict: Verdict::Violated,
                                    line: r.line,
                                    lines: vec![x.line, r.line],
                                    message: format!(
                                        "{}'s read (line {}) returned v{} of {} after {}'s \
                                         write (line {}) had made v{}: the resource went back, \
                                         an update was lost",
                                        shown_plain(self.names.get(r.client)),
                                        r.line,
                                        r.version,
                                        shown_quoted(res),
                                        who(x),
                                        x.line,
                                        x.wrote.unwrap_or(0),
                                    ),
                                },
                            );
                        }
                    }
                }
            }
            for &(_, _, _, item) in &items[k..group_end] {
                if let Item::W(i) = item {
                    let w = writes[i];
                    let u = self.u(w.host);
                    if w.result == Outcome::Ok {
                        let end = Us::from(w.complete_us) + u;
                        if surely_done.is_none_or(|(t, _)| end < t) {
                            surely_done = Some((end, i));
                        }
                    }
                    let start = Us::from(w.invoke_us) - u;
                    if maybe_begun.is_none_or(|(t, _)| start < t) {
                        maybe_begun = Some((start, i));
                    }
                }
            }
            k = group_end;
        }
        match best {
            Some(c) => Finding {
                property: "lost_update",
                verdict: c.verdict,
                lines: c.lines,
                message: c.message,
            },
            None if self.versioned_writes == 0 => Finding {
                property: "lost_update",
                verdict: Verdict::Unobserved,
                lines: vec![],
                message: "not observable: no write records a version (`read_version`, \
                          `wrote_version`, or a read before it)"
                    .to_string(),
            },
            None => Finding {
                property: "lost_update",
                verdict: Verdict::Held,
                lines: vec![],
                message: format!(
                    "none of {} versioned writes was applied on a version other than the one it \
                     was based on, by the versions and the clock bounds",
                    self.versioned_writes
                ),
            },
        }
    }
}

/// The furthest-reaching span seen, and the furthest one of a client other than its own.
#[derive(Clone, Copy)]
struct Reach {
    end: Us,
    idx: usize,
    client: u32,
}

#[derive(Default)]
struct Top2 {
    best: Option<Reach>,
    /// Invariant: `second.client != best.client`.
    second: Option<Reach>,
}

impl Top2 {
    fn add(&mut self, r: Reach) {
        match self.best {
            None => self.best = Some(r),
            Some(b) if b.client == r.client => {
                if r.end > b.end {
                    self.best = Some(r);
                }
            }
            Some(b) if r.end > b.end => {
                self.second = Some(b);
                self.best = Some(r);
            }
            Some(_) => {
                if self.second.is_none_or(|s| r.end > s.end) {
                    self.second = Some(r);
                }
            }
        }
    }

    /// The furthest-reaching span of a client other than `client`.
    fn other_than(&self, client: u32) -> Option<Reach> {
        match self.best {
            Some(b) if b.client != client => Some(b),
            _ => self.second,
        }
    }
}
