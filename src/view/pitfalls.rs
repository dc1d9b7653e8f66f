//! docs/pitfalls.md, generated: one section per catalogue model with its story (the model's
//! header), its verdict over a sweep, the timeline of the first violating seed around the
//! violation (produced by the same code as `replay`, never drawn by hand), the property
//! broken, the picture of that run (an SVG in docs/pitfalls/, drawn by `replay --format
//! svg`'s code), and the fix with the verdict of the model that shows it. A test regenerates
//! the document and its pictures and fails when a committed copy is stale.

use std::fmt::Write as _;
use std::path::Path;

use crate::check::Property;
use crate::explore::{Shard, SweepSummary, run_world, sweep};
use crate::scenario::{self, Expect};
use crate::sim::TraceMode;
use crate::view::timeline::{self, Messages, TimelineOptions};

/// Seeds swept per model for the document (the catalogue test's number).
pub const DOC_SEEDS: u64 = 200;
/// Seeds searched for a safe model's picture (one where its safeguard acts).
const PICTURE_SEEDS: u64 = 20;
/// Timeline rows shown before and after the first violation.
const CONTEXT_ROWS: usize = 14;

/// Catalogue order and, per model: the fix in words, and the models that show the fix (or the failure it leaves).
const ENTRIES: &[(&str, &str, &[&str])] = &[
    (
        "single-setnx-no-ttl",
        "Always set a TTL: `SET key token NX PX ttl`.",
        &["single-px-cad-fencing"],
    ),
    (
        "single-px-del-pause",
        "Unlock with the compare-and-delete script; it stops foreign unlocks but not the late write.",
        &["single-px-cad-pause"],
    ),
    (
        "single-px-get-del-race",
        "Compare and delete atomically (the unlock script).",
        &["single-px-cad-pause"],
    ),
    (
        "single-px-cad-pause",
        "Fencing tokens checked by the resource.",
        &["single-px-cad-fencing"],
    ),
    (
        "single-px-cad-fencing",
        "This is the fix: the stale write is rejected.",
        &[],
    ),
    (
        "classic-fencing-tokens-33-34",
        "Fencing tokens checked by the storage: the model's variant \"fencing tokens\" (tokens 33 \
and 34) holds on the same schedule; single-px-cad-fencing shows it over random pauses.",
        &["single-px-cad-fencing"],
    ),
    (
        "classic-ddia-delayed-request",
        "Fencing tokens checked by the storage: the model's variant \"fencing tokens\" holds \
on the same schedule, and classic-ddia-fencing-storage is that fix as its own lesson. Nothing \
on the lock's side helps: the lock was free when client2 took it; the write was already in \
the network.",
        &["classic-ddia-fencing-storage"],
    ),
    (
        "classic-ddia-fencing-storage",
        "This is the fix: the storage rejects the delayed write's lower token.",
        &[],
    ),
    (
        "single-clock-step-expires-locks",
        "Slew clocks, never step them (valkey-io/valkey#2651 asks for expiry on a monotonic \
clock); fencing tokens for what remains.",
        &["single-px-cad-fencing"],
    ),
    (
        "single-ambiguous-acquire",
        "Treat a timed-out acquire as unknown, not failed: keep the token across retries and \
adopt a key that holds it (GET and compare), or run the compare-and-delete unlock with the \
timed-out token before retrying.",
        &[],
    ),
    (
        "redis-py-lock-no-timeout",
        "Pass `timeout=` to redis-py's `Lock` (its default `timeout=None` sets no expiry, \
redis/lock.py:83, 238-243 at v8.1.0).",
        &["redis-py-lock-timeout"],
    ),
    (
        "redis-py-lock-timeout",
        "This is the fix: a key with a TTL comes back after its holder crashed.",
        &[],
    ),
    (
        "redis-py-retried-acquire-blocks-itself",
        "Pass `timeout=`, so that an orphan key expires; treat a timed-out SET as unknown \
(GET and compare the token) rather than failed, as single-ambiguous-acquire's fix says.",
        &["redis-py-lock-timeout"],
    ),
    (
        "redis-py-shared-lock-object",
        "Keep redis-py's default `thread_local=True` (lock.py:87, 153), or one `Lock` object \
per thread; the overrun that starts the story needs fencing (single-px-cad-fencing).",
        &["redis-py-thread-local-lock"],
    ),
    (
        "redis-py-thread-local-lock",
        "This is the fix for the foreign release; not for the overrun (mutual exclusion is not \
checked here: see single-px-cad-fencing).",
        &[],
    ),
    (
        "redis-py-asyncio-tasks-share-token",
        "Make the Lock inside each task (`async with r.lock(name, timeout=...)`): \
`thread_local=True` separates threads, not the tasks of one event loop.",
        &["redis-py-thread-local-lock"],
    ),
    (
        "redis-py-failed-release-loses-token",
        "Keep the token until the release script answers (redis.asyncio >= 7.2.0, #3900; the sync \
`Lock` with PR #4258) and call `release()` again on a connection error; pass `timeout=` so that \
a key nobody can delete still expires.",
        &["redis-py-lock-timeout"],
    ),
    (
        "pottery-auto-release-time-units",
        "Pass `auto_release_time` in seconds on pottery 3 (`auto_release_time=10`; it was \
milliseconds up to 2.3.7, 021c5a9 #627): the variant shows the key coming back ten seconds \
after the crash.",
        &["redis-py-lock-timeout"],
    ),
    (
        "python-redis-lock-renewal-dies-after-pause",
        "No option of python-redis-lock outlasts a pause longer than `expire`, and its renewal \
thread dies without a word (src/redis_lock/__init__.py:278-285): fence the resource with a token \
it checks (the variant below; the caller takes it, the library has none), and treat \
`NotAcquired` from `release()` as a section that may have overlapped another.",
        &["single-px-cad-fencing"],
    ),
    (
        "failover-lost-lock",
        "Nothing on the Redis side closes the window; WAIT only narrows it. Fence with a token that cannot repeat.",
        &["failover-wait-false-confidence", "consensus-pause-fencing"],
    ),
    (
        "classic-redis-docs-failover-race",
        "Nothing on the Redis side closes the window (the docs answer with Redlock over independent \
masters); fence with a token that cannot repeat.",
        &["failover-wait-false-confidence", "consensus-pause-fencing"],
    ),
    (
        "failover-split-brain",
        "min-replicas-to-write narrows the window; a down-after longer than max-lag closes it (at the cost of availability).",
        &["failover-split-brain-min-replicas"],
    ),
    (
        "failover-split-brain-min-replicas",
        "See the measured grid in the header: with down_after longer than min-replicas-max-lag it holds.",
        &[],
    ),
    (
        "failover-wait-false-confidence",
        "WAIT does not decide who is promoted; only a consensus store makes a write durable before it is acknowledged.",
        &["consensus-pause-fencing"],
    ),
    (
        "failover-replica-clock-ahead",
        "Keep clocks in sync (slew, never step); fence what remains.",
        &["consensus-pause-fencing"],
    ),
    (
        "redlock-clock-jump",
        "Slew clocks, never step them; fencing for what remains.",
        &["consensus-pause-fencing"],
    ),
    (
        "redlock-kleppmann-clock-jump",
        "Slew clocks, never step them; fencing for what remains.",
        &["consensus-pause-fencing"],
    ),
    (
        "classic-kleppmann-redlock-gc-pause",
        "Check the validity left after acquiring (the model's variant \"validity checked\" holds on \
the same schedule); a pause after the check needs fencing.",
        &["redlock-validity-respected", "redlock-pause-after-acquire"],
    ),
    (
        "redlock-restart-no-fsync",
        "Delay restarts past the largest TTL, or fsync every write.",
        &["redlock-restart-delayed", "redlock-restart-fsync-always"],
    ),
    (
        "redlock-restart-delayed",
        "This is a fix: safe, at the cost of availability.",
        &[],
    ),
    (
        "redlock-restart-fsync-always",
        "This is a fix: safe, at the cost of an fsync per write.",
        &[],
    ),
    (
        "redlock-pause-after-acquire",
        "No Redis-side fix: fencing tokens from a consensus store.",
        &["consensus-pause-fencing"],
    ),
    (
        "redlock-no-validity-check",
        "Check the validity (ttl − elapsed − drift > 0) before believing the lock is held, and \
give the critical section up when it runs out (`stop_at_validity: true`): safe against slow \
replies, not against a pause (`redlock-pause-after-acquire`).",
        &["redlock-validity-respected"],
    ),
    (
        "redlock-node-already-expired",
        "Measure from the winning attempt (node-redlock master, #274 and #276, unreleased), \
check `signal.aborted` in the routine before each step, and fence.",
        &["redlock-node-using-extends"],
    ),
    (
        "redlock-node-using-extends",
        "This is the fix as node-redlock's master has it: each lock, however late it was won, \
is extended 500 ms before it runs out.",
        &[],
    ),
    (
        "redlock-node-retry-keeps-keys",
        "Give the keys back between attempts, as node-redlock 4.2.0 did (the variant below); on \
v5, acquire with `retryCount: 0` in your own retry loop: each failed `acquire()` call releases \
its keys before it throws.",
        &[],
    ),
    (
        "node-redlock-release-retries-forever",
        "Release with `redlock.release(lock, { retryCount: 0 })` and ignore its error (the key \
expires anyway), or keep a finite `retryCount`: with -1 a release of an expired lock never \
returns. node-redlock 4.2.0 (the variant below) unlocked once.",
        &[],
    ),
    (
        "redsync-shared-mutex",
        "Make a Mutex per goroutine (`rs.NewMutex(name)` inside it): its `Unlock` then sends its \
own value and deletes nothing of another's; fence the overrun itself.",
        &["single-px-cad-fencing"],
    ),
    (
        "redlock-validity-respected",
        "The fix itself; the pause it cannot fix is `redlock-pause-after-acquire`.",
        &[],
    ),
    (
        "redlock-wall-clock-step-client",
        "Measure elapsed time on a monotonic clock, as redlock-rb has since 1.0.0 \
(`Process.clock_gettime(CLOCK_MONOTONIC)`, 2.0.6 lib/redlock/client.rb:28-35) and redsync does \
(Go's monotonic reading); redlock-py 1.0.8 (`time.time()`) and node-redlock v5 (`Date.now()`) \
still measure on the wall clock.",
        &["redlock-rb-current-clock-step"],
    ),
    (
        "redlock-rb-current-clock-step",
        "This is the fix, as current redlock-rb ships it (≥ 1.0, as of 2.0.6): the same steps \
of the client's wall clock, measured on `CLOCK_MONOTONIC` (lib/redlock/client.rb:30-35); set \
`clock: wall` on its preset and the same sweep breaks mutual exclusion.",
        &[],
    ),
    (
        "redlock-py-node-down-never-locks",
        "Count a failed node as a vote against and decide on the quorum, as redsync, \
node-redlock and redlock-rb do; or unlock before raising (redlock-py 1.0.8 \
redlock/__init__.py:110-112 raises first).",
        &["redlock-py-node-down-locks"],
    ),
    (
        "redlock-py-node-down-locks",
        "This is the fix: one master down out of five costs nothing.",
        &[],
    ),
    (
        "redlock-drift-beyond-factor",
        "A drift factor that bounds the real drift, and clocks that do not run away.",
        &[],
    ),
    (
        "redlock-rb-extend-life-seconds",
        "Upgrade redlock-rb past 0.1.8 (0.2.0, e364314: extending goes through the lock \
script's PX), or extend with a compare-and-PEXPIRE script: the variant below.",
        &[],
    ),
    (
        "redlock-extend-resurrects",
        "Extend with the compare-and-pexpire script, which fails once the key is gone or \
someone else's; and stop the critical section when an extend fails. What a pause across the \
end of the section leaves, a late write, only fencing tokens at the resource stop.",
        &["consensus-pause-fencing"],
    ),
    (
        "redlock-extend-never-repairs",
        "Write the key on the nodes that lack it when extending (redsync's `WithSetNXOnExtend`), \
but only while the lock is still valid; delay restarts past the TTL; fence.",
        &["redlock-restart-delayed", "redlock-extend-resurrects"],
    ),
    (
        "redlock-fixed-retry-livelock",
        "A random retry delay breaks the symmetry: the Redis docs ask for \"a random delay\" \
(redis-doc, docs/manual/patterns/distributed-locks.md:133); redlock-rb, node-redlock and redsync draw one, redlock-py does not.",
        &[],
    ),
    (
        "redlock-quiet",
        "The control: with its timing assumptions met, Redlock holds.",
        &[],
    ),
    (
        "watchdog-pause",
        "Renewal cannot fence a stopped holder: fencing tokens at the resource.",
        &["consensus-pause-fencing"],
    ),
    (
        "watchdog-partition",
        "Report renewal failures to the holder (and stop), and fence. Redisson only logs a \
failed renewal (RenewalTask.java:177-180); its opt-in `ExpiredObjectListener` (3.43.0+) needs \
keyspace notifications, which a partitioned holder does not receive.",
        &[],
    ),
    (
        "watchdog-quiet",
        "The control: renewal keeps critical sections longer than the lease safe.",
        &[],
    ),
    (
        "redisson-watchdog-stops-after-sync-error",
        "Upgrade to Redisson >= 3.44.0, whose watchdog reschedules after a failed renewal \
(597d604a3, RenewalTask.java:170-179); up to 3.43 one error ends renewal for good \
(3.43.0 RedissonBaseLock.java:137-146, redisson#775). Fence the resource either way: a renewal \
that fails for a whole lease loses the lock in every version.",
        &["redisson-watchdog-renews-after-error"],
    ),
    (
        "redisson-watchdog-renews-after-error",
        "This is the fix of redisson#775: Redisson 3.44.0 goes on renewing after an error.",
        &[],
    ),
    (
        "redisson-orphan-renewal-after-interrupt",
        "Unlock an acquire whose caller is gone and never arm the watchdog for it (PR #7277, \
open); until then, do not interrupt threads blocked in `lockInterruptibly()` on a watchdog \
lock, or take the lock with a lease.",
        &["redisson-late-acquire-unlocks"],
    ),
    (
        "redisson-late-acquire-unlocks",
        "This is the fix proposed for redisson#7272 (PR #7277): a late lock reply is unlocked.",
        &[],
    ),
    (
        "redisson-shared-thread-id-reenters",
        "Give each pipeline its own thread id and pass it to both calls (`lock(threadId)`, \
`unlock(threadId)`; the variant below): Redisson's lock is reentrant per `uuid:threadId`, and \
the pipelines of one Reactor or Netty thread are one thread to it.",
        &[],
    ),
    (
        "redisson-retried-lock-leaves-count",
        "Upgrade to Redisson 3.47.0 or later (f2b6ad849: handleNoSync matches \
NoSyncedSlavesException and unlocks the unsynced lock; the variant below runs 3.52.0); 3.20.0's \
fix (ec2e41ab3, #4822) stopped matching in 3.25.0 (279cb9b3c). On older versions \
`checkLockSyncedSlaves = false` (no WAIT check, so no exception to retry on).",
        &[],
    ),
    (
        "redisson-renewal-task-dies-on-racing-unlock",
        "Upgrade to Redisson 3.45.1 or later (5f9589346 skips the vanished entry; 3.46.0 also the \
empty chunk, #6506; the variant below); and fence the resource: a watchdog that stops says \
nothing to the holder in any version.",
        &["redisson-fenced-renewal-starved"],
    ),
    (
        "redisson-renewal-starved",
        "A watchdog cannot protect work whose renewals may starve: fencing tokens checked by \
the resource (RFencedLock's token), or a lease longer than the worst stall.",
        &["redisson-fenced-renewal-starved"],
    ),
    (
        "redisson-fenced-renewal-starved",
        "This is the fix for the resource: RFencedLock's token is checked by it. Two clients \
still believe they hold the lock; the token comes from the same Redis, which a failover can send back (fencing-incr-regresses-after-failover).",
        &["fencing-incr-regresses-after-failover"],
    ),
    (
        "fencing-incr-regresses-after-failover",
        "Take the token from a consensus store (zxid, etcd revision), which cannot repeat.",
        &["consensus-pause-fencing"],
    ),
    (
        "consensus-pause-fencing",
        "This is the fix: a trustworthy token, checked by the resource.",
        &[],
    ),
    (
        "consensus-pause-no-fencing",
        "Consensus makes the token trustworthy; the resource must still check it.",
        &["consensus-pause-fencing"],
    ),
    (
        "failover-quiet",
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

/// The rows of a violating run's timeline around its first violation, with the header rows,
/// as a fenced block headed by the replay line that prints the whole.
fn timeline_excerpt(out: &mut String, text: &str, name: &str, seed: u64) {
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
        out,
        "\nTimeline (`distlock-sim replay models/{name}.ron --seed {seed} --messages none`, rows around the first violation):\n\n```text"
    );
    for l in &lines[..header_rows] {
        let _ = writeln!(out, "{l}");
    }
    if from > header_rows {
        let _ = writeln!(out, "   ...");
    }
    for l in &lines[from..to] {
        let _ = writeln!(out, "{l}");
    }
    if to < lines.len() {
        let _ = writeln!(out, "   ...");
    }
    let _ = writeln!(out, "```\n");
}

/// The guide: the markdown and its pictures (file name in `PICTURE_DIR`, SVG text), and the
/// sweep each model's verdict was read from (model name, seeds 0..`DOC_SEEDS`), so that a
/// test of the catalogue's declared verdicts can judge the same runs the guide prints.
pub struct Guide {
    pub markdown: String,
    pub pictures: Vec<(String, String)>,
    pub sweeps: Vec<(String, SweepSummary)>,
}

/// Where the pictures live, relative to the markdown file.
pub const PICTURE_DIR: &str = "pitfalls";

/// The document, for the models in `dir`.
pub fn render(dir: &Path, jobs: usize) -> Result<Guide, String> {
    render_with_progress(dir, jobs, &mut |_, _, _| {})
}

/// `render`, calling `progress(i, n, model)` as it starts sweeping the i-th of n models.
pub fn render_with_progress(
    dir: &Path,
    jobs: usize,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<Guide, String> {
    let mut pictures = Vec::new();
    let mut out = String::new();
    let _ = writeln!(out, "# The pitfall catalogue\n");
    let _ = writeln!(
        out,
        "Generated by `distlock-sim pitfalls --out docs/pitfalls.md` from the bundled models: each story is \
the model's header, each verdict a sweep over seeds 0..{DOC_SEEDS}, each timeline the output of \
`distlock-sim replay MODEL --seed N --messages none` around the first violation. \
`tests/catalogue.rs` fails when this file is stale.\n"
    );
    let _ = writeln!(
        out,
        "| model | declared | observed over {DOC_SEEDS} seeds |\n|---|---|---|"
    );
    let mut sections = String::new();
    let mut verdicts: Vec<(&str, String)> = Vec::new();
    let mut loaded = Vec::new();
    let mut sweeps = Vec::new();
    for (i, (name, fix, fix_models)) in ENTRIES.iter().enumerate() {
        progress(i + 1, ENTRIES.len(), name);
        let path = dir.join(format!("{name}.ron"));
        let mut sc = scenario::load(&path).map_err(|e| e.to_string())?;
        // Replay lines in the guide name the model as a reader at the repository's root
        // types it, wherever the guide was generated from.
        sc.path = format!("models/{name}.ron");
        let declared = match &sc.model.expect {
            Some(Expect::Holds) | None => vec![],
            Some(Expect::Violates(v)) => v.iter().map(|p| p.0).collect(),
        };
        let summary = sweep(&sc, 0..DOC_SEEDS, Shard::WHOLE, jobs, &|| {});
        let (obs, first, n) = (
            summary.violated_properties(),
            summary.first_violating_seed,
            summary.seeds_run,
        );
        sweeps.push((name.to_string(), summary));
        verdicts.push((name, verdict_words(&obs)));
        let _ = writeln!(
            out,
            "| [`{name}`](#{name}) | {} | {} |",
            verdict_words(&declared),
            verdict_words(&obs)
        );
        loaded.push((sc, *fix, *fix_models, obs, first, n));
    }
    for (sc, fix, fix_models, obs, first, n) in loaded {
        let name = sc.name.clone();
        let _ = writeln!(sections, "\n## {name}\n");
        let _ = writeln!(sections, "*{}*\n", sc.model.description);
        let _ = writeln!(sections, "{}\n", header(&dir.join(format!("{name}.ron"))));
        // A safe model's picture shows its safeguard at work when one of its first seeds
        // has it act (a fencing rejection, a validity that ran out), else seed 0.
        let picture_seed = first.unwrap_or_else(|| {
            (0..PICTURE_SEEDS)
                .find(|s| {
                    let (_, world) = run_world(&sc, *s, TraceMode::Off);
                    crate::view::report::first_safeguard(&world).is_some()
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
                crate::view::report::svg(&sc, picture_seed, &world, &outcome.violations, None),
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
                timeline_excerpt(&mut sections, &text, &name, seed);
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
        sweeps,
    })
}
