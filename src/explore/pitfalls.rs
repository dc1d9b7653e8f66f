//! docs/pitfalls.md, generated: one section per catalogue model with its story (the model's
//! header), its verdict over a sweep, the timeline of the first violating seed around the
//! violation (produced by the same code as `replay`, never drawn by hand), the property
//! broken, the picture of that run (an SVG in docs/pitfalls/, drawn by `replay --format
//! svg`'s code), and the fix with the verdict of the model that shows it. A test regenerates
//! the document and its pictures and fails when a committed copy is stale.

use std::fmt::Write as _;
use std::path::Path;

use crate::check::Property;
use crate::explore::timeline::{self, Messages, TimelineOptions};
use crate::explore::{Shard, run_world, sweep};
use crate::scenario::{self, Expect, Scenario};
use crate::sim::TraceMode;

/// Seeds swept per model for the document (the catalogue test's number).
pub const DOC_SEEDS: u64 = 200;
/// Seeds searched for a safe model's picture (one where its safeguard acts).
const PICTURE_SEEDS: u64 = 20;
/// Timeline rows shown before and after the first violation.
const CONTEXT_ROWS: usize = 14;

/// Catalogue order and, per model: its place in redis-semantics.md §7, the fix in words, and
/// the models that show the fix (or the failure it leaves).
const ENTRIES: &[(&str, &str, &str, &[&str])] = &[
    (
        "single-setnx-no-ttl",
        "1",
        "Always set a TTL: `SET key token NX PX ttl`.",
        &["single-px-cad-fencing"],
    ),
    (
        "single-px-del-pause",
        "2",
        "Unlock with the compare-and-delete script; it stops foreign unlocks but not the late write.",
        &["single-px-cad-pause"],
    ),
    (
        "single-px-get-del-race",
        "3",
        "Compare and delete atomically (the unlock script).",
        &["single-px-cad-pause"],
    ),
    (
        "single-px-cad-pause",
        "4",
        "Fencing tokens checked by the resource.",
        &["single-px-cad-fencing"],
    ),
    (
        "single-px-cad-fencing",
        "5",
        "This is the fix: the stale write is rejected.",
        &[],
    ),
    (
        "single-clock-step-expires-locks",
        "10",
        "Slew clocks, never step them (valkey-io/valkey#2651 asks for expiry on a monotonic \
clock); fencing tokens for what remains.",
        &["single-px-cad-fencing"],
    ),
    (
        "single-ambiguous-acquire",
        "-",
        "Treat a timed-out acquire as unknown, not failed: keep the token across retries and \
adopt a key that holds it (GET and compare), or run the compare-and-delete unlock with the \
timed-out token before retrying.",
        &[],
    ),
    (
        "failover-lost-lock",
        "6",
        "Nothing on the Redis side closes the window; WAIT only narrows it. Fence with a token that cannot repeat.",
        &["failover-wait-false-confidence", "consensus-pause-fencing"],
    ),
    (
        "failover-split-brain",
        "7",
        "min-replicas-to-write narrows the window; a down-after longer than max-lag closes it (at the cost of availability).",
        &["failover-split-brain-min-replicas"],
    ),
    (
        "failover-split-brain-min-replicas",
        "7",
        "See the measured grid in the header: with down_after longer than min-replicas-max-lag it holds.",
        &[],
    ),
    (
        "failover-wait-false-confidence",
        "8",
        "WAIT does not decide who is promoted; only a consensus store makes a write durable before it is acknowledged.",
        &["consensus-pause-fencing"],
    ),
    (
        "failover-replica-clock-ahead",
        "9",
        "Keep clocks in sync (slew, never step); fence what remains.",
        &["consensus-pause-fencing"],
    ),
    (
        "redlock-clock-jump",
        "10",
        "Slew clocks, never step them; fencing for what remains.",
        &["consensus-pause-fencing"],
    ),
    (
        "redlock-kleppmann-clock-jump",
        "10",
        "Slew clocks, never step them; fencing for what remains.",
        &["consensus-pause-fencing"],
    ),
    (
        "redlock-restart-no-fsync",
        "11",
        "Delay restarts past the largest TTL, or fsync every write.",
        &["redlock-restart-delayed", "redlock-restart-fsync-always"],
    ),
    (
        "redlock-restart-delayed",
        "11",
        "This is a fix: safe, at the cost of availability.",
        &[],
    ),
    (
        "redlock-restart-fsync-always",
        "11",
        "This is a fix: safe, at the cost of an fsync per write.",
        &[],
    ),
    (
        "redlock-pause-after-acquire",
        "12",
        "No Redis-side fix: fencing tokens from a consensus store.",
        &["consensus-pause-fencing"],
    ),
    (
        "redlock-no-validity-check",
        "13",
        "Check the validity (ttl − elapsed − drift > 0) before believing the lock is held, and \
give the critical section up when it runs out (`stop_at_validity: true`): safe against slow \
replies, not against a pause (`redlock-pause-after-acquire`).",
        &["redlock-validity-respected"],
    ),
    (
        "redlock-validity-respected",
        "13",
        "The fix itself; the pause it cannot fix is `redlock-pause-after-acquire`.",
        &[],
    ),
    (
        "redlock-wall-clock-step-client",
        "13",
        "Measure elapsed time on a monotonic clock, as redlock-rb has since 1.0.0 \
(`Process.clock_gettime(CLOCK_MONOTONIC)`, 2.0.6 lib/redlock/client.rb:28-35) and redsync does \
(Go's monotonic reading); redlock-py 1.0.8 (`time.time()`) and node-redlock v5 (`Date.now()`) \
still measure on the wall clock.",
        &["redlock-rb-current-clock-step"],
    ),
    (
        "redlock-rb-current-clock-step",
        "13",
        "This is the fix, as current redlock-rb ships it (≥ 1.0, as of 2.0.6): the same steps \
of the client's wall clock, measured on `CLOCK_MONOTONIC` (lib/redlock/client.rb:30-35); set \
`clock: wall` on its preset and the same sweep breaks mutual exclusion.",
        &[],
    ),
    (
        "redlock-drift-beyond-factor",
        "18",
        "A drift factor that bounds the real drift, and clocks that do not run away.",
        &[],
    ),
    (
        "redlock-extend-resurrects",
        "14",
        "Extend with the compare-and-pexpire script, which fails once the key is gone or \
someone else's; and stop the critical section when an extend fails. What a pause across the \
end of the section leaves is pitfall 12: fencing tokens.",
        &["consensus-pause-fencing"],
    ),
    (
        "redlock-extend-never-repairs",
        "14",
        "Write the key on the nodes that lack it when extending (redsync's `WithSetNXOnExtend`), \
but only while the lock is still valid; delay restarts past the TTL; fence.",
        &["redlock-restart-delayed", "redlock-extend-resurrects"],
    ),
    (
        "redlock-fixed-retry-livelock",
        "17",
        "A random retry delay breaks the symmetry: the Redis docs ask for \"a random delay\" \
(distributed-locks.md:133); redlock-rb, node-redlock and redsync draw one, redlock-py does not.",
        &[],
    ),
    (
        "redlock-quiet",
        "-",
        "The control: with its timing assumptions met, Redlock holds.",
        &[],
    ),
    (
        "watchdog-pause",
        "15",
        "Renewal cannot fence a stopped holder: fencing tokens at the resource.",
        &["consensus-pause-fencing"],
    ),
    (
        "watchdog-partition",
        "15",
        "Report renewal failures to the holder (and stop), and fence. Redisson only logs a \
failed renewal (RenewalTask.java:177-180); its opt-in `ExpiredObjectListener` (3.43.0+) needs \
keyspace notifications, which a partitioned holder does not receive.",
        &[],
    ),
    (
        "watchdog-quiet",
        "15",
        "The control: renewal keeps critical sections longer than the lease safe.",
        &[],
    ),
    (
        "fencing-incr-regresses-after-failover",
        "16",
        "Take the token from a consensus store (zxid, etcd revision), which cannot repeat.",
        &["consensus-pause-fencing"],
    ),
    (
        "consensus-pause-fencing",
        "-",
        "This is the fix: a trustworthy token, checked by the resource.",
        &[],
    ),
    (
        "consensus-pause-no-fencing",
        "-",
        "Consensus makes the token trustworthy; the resource must still check it.",
        &["consensus-pause-fencing"],
    ),
    (
        "failover-quiet",
        "-",
        "The control for the failover models.",
        &[],
    ),
];

pub(crate) fn header(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| l.starts_with("//"))
        .map(|l| l.trim_start_matches("//").trim())
        .collect();
    // The first line names the model; the rest is the story.
    lines
        .iter()
        .skip(1)
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

fn verdict_words(props: &[Property]) -> String {
    if props.is_empty() {
        "holds".into()
    } else {
        format!(
            "violates({})",
            props
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

fn observed(sc: &Scenario, jobs: usize) -> (Vec<Property>, Option<u64>, u64) {
    let s = sweep(sc, 0..DOC_SEEDS, Shard::WHOLE, jobs, &|| {});
    (s.violated_properties(), s.first_violating_seed, s.seeds_run)
}

/// The guide: the markdown and its pictures (file name in `PICTURE_DIR`, SVG text).
pub struct Guide {
    pub markdown: String,
    pub pictures: Vec<(String, String)>,
}

/// Where the pictures live, relative to the markdown file.
pub const PICTURE_DIR: &str = "pitfalls";

/// The document, for the models in `dir`.
pub fn render(dir: &Path, jobs: usize) -> Result<Guide, String> {
    let mut pictures = Vec::new();
    let mut out = String::new();
    let _ = writeln!(out, "# The pitfall catalogue\n");
    let _ = writeln!(
        out,
        "Generated by `distlock-sim pitfalls --out docs/pitfalls.md` from the bundled models: each story is \
the model's header, each verdict a sweep over seeds 0..{DOC_SEEDS}, each timeline the output of \
`distlock-sim replay MODEL --seed N --messages none` around the first violation. \
`tests/pitfalls_doc.rs` fails when this file is stale. Numbers in brackets refer to the list of \
pitfalls in redis-semantics.md §7.\n"
    );
    let _ = writeln!(
        out,
        "| model | § | declared | observed over {DOC_SEEDS} seeds |\n|---|---|---|---|"
    );
    let mut sections = String::new();
    let mut verdicts: Vec<(&str, String)> = Vec::new();
    let mut loaded = Vec::new();
    for (name, item, fix, fix_models) in ENTRIES {
        let path = dir.join(format!("{name}.ron"));
        let mut sc = scenario::load(&path).map_err(|e| e.to_string())?;
        // Replay lines in the guide name the model as a reader at the repository's root
        // types it, wherever the guide was generated from.
        sc.path = format!("models/{name}.ron");
        let declared = match &sc.model.expect {
            Some(Expect::Holds) | None => vec![],
            Some(Expect::Violates(v)) => v.iter().map(|p| p.0).collect(),
        };
        let (obs, first, n) = observed(&sc, jobs);
        verdicts.push((name, verdict_words(&obs)));
        let _ = writeln!(
            out,
            "| [`{name}`](#{name}) | {item} | {} | {} |",
            verdict_words(&declared),
            verdict_words(&obs)
        );
        loaded.push((sc, *item, *fix, *fix_models, obs, first, n));
    }
    for (sc, item, fix, fix_models, obs, first, n) in loaded {
        let name = sc.name.clone();
        let _ = writeln!(sections, "\n## {name}\n");
        let _ = writeln!(sections, "*{}* (§7 item {item})\n", sc.model.description);
        let _ = writeln!(sections, "{}\n", header(&dir.join(format!("{name}.ron"))));
        // A safe model's picture shows its safeguard at work when one of its first seeds
        // has it act (a fencing rejection, a validity that ran out), else seed 0.
        let picture_seed = first.unwrap_or_else(|| {
            (0..PICTURE_SEEDS)
                .find(|s| {
                    let (_, world) = run_world(&sc, *s, TraceMode::Off);
                    crate::explore::report::first_safeguard(&world).is_some()
                })
                .unwrap_or(0)
        });
        {
            let (outcome, world) = run_world(&sc, picture_seed, TraceMode::Full);
            let file = format!("{name}.svg");
            let _ = writeln!(
                sections,
                "![timeline of {name}, seed {picture_seed}]({PICTURE_DIR}/{file})\n\n\
*Picture: `distlock-sim replay models/{name}.ron --seed {picture_seed} --format svg` \
(`--format html` gives the same picture as a page that zooms and explains).*\n"
            );
            pictures.push((
                file,
                crate::explore::report::svg(&sc, picture_seed, &world, &outcome.violations, None),
            ));
        }
        match first {
            None => {
                let _ = writeln!(
                    sections,
                    "**Verdict:** holds over seeds 0..{n} (checked: {}).\n",
                    sc.properties
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            Some(seed) => {
                let (outcome, world) = run_world(&sc, seed, TraceMode::Full);
                let _ = writeln!(
                    sections,
                    "**Verdict:** {} over seeds 0..{n}; first violating seed {seed}.\n",
                    verdict_words(&obs)
                );
                for v in &outcome.violations {
                    let _ = writeln!(sections, "- **{}** at {}: {}", v.property, v.at, v.message);
                }
                let keys = sc.lock_keys();
                let text = timeline::render(
                    &world,
                    &outcome.violations,
                    &keys,
                    sc.epoch_unix_ms,
                    TimelineOptions {
                        messages: Messages::None,
                    },
                );
                let lines: Vec<&str> = text.lines().collect();
                let header_rows = lines
                    .iter()
                    .position(|l| l.starts_with("---"))
                    .map_or(0, |i| i + 1);
                let mark = lines
                    .iter()
                    .position(|l| l.contains("!!! VIOLATION"))
                    .unwrap_or(header_rows);
                let from = mark.saturating_sub(CONTEXT_ROWS).max(header_rows);
                let to = (mark + CONTEXT_ROWS / 2).min(lines.len());
                let _ = writeln!(
                    sections,
                    "\nTimeline (`distlock-sim replay models/{name}.ron --seed {seed} --messages none`, rows around the first violation):\n\n```text"
                );
                for l in &lines[..header_rows] {
                    let _ = writeln!(sections, "{l}");
                }
                if from > header_rows {
                    let _ = writeln!(sections, "   ...");
                }
                for l in &lines[from..to] {
                    let _ = writeln!(sections, "{l}");
                }
                if to < lines.len() {
                    let _ = writeln!(sections, "   ...");
                }
                let _ = writeln!(sections, "```\n");
            }
        }
        let _ = write!(sections, "**Fix:** {fix}");
        for m in fix_models {
            let v = verdicts
                .iter()
                .find(|(n, _)| n == m)
                .map_or("?".to_string(), |(_, v)| v.clone());
            let _ = write!(sections, " [`{m}`](#{m}): {v}.");
        }
        let _ = writeln!(sections);
    }
    out.push_str(&sections);
    Ok(Guide {
        markdown: out,
        pictures,
    })
}
