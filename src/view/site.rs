//! `distlock-sim site --out DIR`: a static site a teacher can publish as it is — an index of
//! the catalogue and one lesson page per model: the story (the model file's header), the
//! stepper opened on the first failing seed, the fix variant beside it when the model
//! declares one, and "what happens next?" stops at the notable events before the violation.
//! Every page is the self-contained page of `replay --format html`; nothing is fetched.

use std::fmt::Write as _;
use std::path::Path;

use crate::check::Violation;
use crate::explore::run_world;
use crate::scenario::Scenario;
use crate::sim::{TraceMode, World};
use crate::view::report;
use crate::view::stepper::{self, Notable};

/// Seeds tried per model for a failing one (the pitfall guide's pictures use the same span).
const SEEDS: u64 = 20;
/// Questions per lesson: the notable stops just before the first violation.
const QUESTIONS: usize = 6;

/// One moment of a classic figure: the first step of `run` (None: the model as written, else
/// the variant of that name), at or after the previous moment of the same run, whose
/// sentence contains every one of `needles`; `says` is the figure's own words for it.
pub struct Moment {
    pub run: Option<&'static str>,
    pub needles: &'static [&'static str],
    pub says: &'static str,
}

/// A figure people are taught from, and the catalogue model that reproduces it.
pub struct Classic {
    pub model: &'static str,
    pub figure: &'static str,
    pub source: &'static str,
    /// How the model's run maps onto the drawing (names, numbers).
    pub reading: &'static str,
    pub moments: &'static [Moment],
}

const FENCING: &str = "fencing tokens";
const VALIDITY: &str = "validity checked";

/// The classic figures, in the order the index lists them (before the rest of the catalogue).
pub const CLASSICS: &[Classic] = &[
    Classic {
        model: "classic-fencing-tokens-33-34",
        figure: "the fencing-token figure: a GC pause outlives the lease (Kleppmann's \"unsafe lock\" and DDIA Figure 8-4), and fencing tokens 33 and 34 reject the late write (Kleppmann's \"fencing tokens\" and DDIA Figure 8-5)",
        source: "Martin Kleppmann, \"How to do distributed locking\" (2016), the first two figures; Martin Kleppmann, Designing Data-Intensive Applications (2017), chapter 8, Figures 8-4 and 8-5",
        reading: "Redis stands in for the figures' lock service and INCR for its token counter; the storage is the resource. The client `earlier` takes the lock 32 times first, so that client1's grant is the 33rd and client2's the 34th, as drawn. The model as written is the first figure (no tokens: the storage is corrupted); the variant \"fencing tokens\" is the second, on the same schedule.",
        moments: &[
            Moment {
                run: None,
                needles: &["client1 acquires"],
                says: "Client 1 gets the lease.",
            },
            Moment {
                run: None,
                needles: &["client1 is paused"],
                says: "Client 1 stops in a stop-the-world GC pause, still inside its critical section.",
            },
            Moment {
                run: None,
                needles: &["expires", "client1"],
                says: "The lease expires while client 1 is paused.",
            },
            Moment {
                run: None,
                needles: &["client2 acquires"],
                says: "Client 2 gets the lease.",
            },
            Moment {
                run: None,
                needles: &["accepts client2's write"],
                says: "Client 2 writes to the storage: ok.",
            },
            Moment {
                run: None,
                needles: &["client1 resumes"],
                says: "Client 1's GC pause ends; it believes it still holds the lease.",
            },
            Moment {
                run: None,
                needles: &["VIOLATION"],
                says: "Client 1 writes on top of client 2's write: the storage is corrupted (DDIA Figure 8-4).",
            },
            Moment {
                run: Some(FENCING),
                needles: &["fencing token 33"],
                says: "With fencing: client 1 gets the lease with token 33.",
            },
            Moment {
                run: Some(FENCING),
                needles: &["fencing token 34"],
                says: "After the pause outlived it, client 2 gets the lease with token 34.",
            },
            Moment {
                run: Some(FENCING),
                needles: &["accepts client2's write with token 34"],
                says: "Client 2 writes with token 34: the storage accepts it and remembers 34.",
            },
            Moment {
                run: Some(FENCING),
                needles: &["refuses client1's write with token 33"],
                says: "Client 1 wakes and writes with token 33: rejected, 33 < 34 (DDIA Figure 8-5).",
            },
        ],
    },
    Classic {
        model: "classic-ddia-delayed-request",
        figure: "a request delayed in the network: client 1's write to the storage arrives after its lease has expired and client 2 has taken the lease and written",
        source: "Martin Kleppmann and Chris Riccomini, Designing Data-Intensive Applications, 2nd edition, chapter 9, \"The Trouble with Distributed Systems\" (figure numbers not cited: not checked here)",
        reading: "Redis stands in for the book's lock service; the storage is the resource. The network delays what client1 sends the storage between 1.5 s and 2.5 s by 12 s, so its write, sent at 2 s, lands at 14 s; its lease (TTL 10 s) expires at 11 s. The variant \"fencing tokens\" is the fix on the same schedule; classic-ddia-fencing-storage is the fix as its own lesson.",
        moments: &[
            Moment {
                run: None,
                needles: &["client1 acquires"],
                says: "Client 1 gets the lease.",
            },
            Moment {
                run: None,
                needles: &["latency +12s"],
                says: "The network starts delaying what client 1 sends the storage: its write, sent now, is stuck in the network.",
            },
            Moment {
                run: None,
                needles: &["expires", "client1"],
                says: "The lease expires while client 1's write is still in the network.",
            },
            Moment {
                run: None,
                needles: &["client2 acquires"],
                says: "Client 2 gets the lease.",
            },
            Moment {
                run: None,
                needles: &["accepts client2's write"],
                says: "Client 2 writes to the storage: ok.",
            },
            Moment {
                run: None,
                needles: &["VIOLATION"],
                says: "Client 1's delayed write arrives and the storage applies it on top of client 2's: client 2's update is lost.",
            },
            Moment {
                run: Some(FENCING),
                needles: &["refuses client1's write with token 1"],
                says: "With fencing tokens: the delayed write carries token 1, the storage has seen 2, and rejects it.",
            },
        ],
    },
    Classic {
        model: "classic-ddia-fencing-storage",
        figure: "fencing with a storage service that checks tokens: the lock service hands out a growing token with every lease, and the storage rejects a write whose token is lower than one it has processed",
        source: "Martin Kleppmann and Chris Riccomini, Designing Data-Intensive Applications, 2nd edition, chapter 9, \"The Trouble with Distributed Systems\" (figure numbers not cited: not checked here)",
        reading: "Redis stands in for the lock service and an INCR on it for the token counter; the storage is the resource and checks tokens. The schedule is classic-ddia-delayed-request's: client1's write with token 1 is delayed in the network past its lease. The variant \"storage ignores tokens\" is the pitfall on the same schedule.",
        moments: &[
            Moment {
                run: None,
                needles: &["fencing token 1"],
                says: "Client 1 gets the lease with token 1.",
            },
            Moment {
                run: None,
                needles: &["expires", "client1"],
                says: "The lease expires while client 1's write is delayed in the network.",
            },
            Moment {
                run: None,
                needles: &["fencing token 2"],
                says: "Client 2 gets the lease with token 2.",
            },
            Moment {
                run: None,
                needles: &["accepts client2's write with token 2"],
                says: "Client 2 writes with token 2: the storage accepts it and remembers 2.",
            },
            Moment {
                run: None,
                needles: &["refuses client1's write with token 1"],
                says: "Client 1's delayed write arrives with token 1: rejected, 1 < 2. No update is lost.",
            },
        ],
    },
    Classic {
        model: "redlock-kleppmann-clock-jump",
        figure: "Kleppmann's Redlock scenario: the clock on node C jumps forward while D and E are unreachable from client 1 and A and B from client 2",
        source: "Martin Kleppmann, \"How to do distributed locking\" (2016), section \"Breaking Redlock with bad timings\", its first scenario",
        reading: "Clients `one` and `two` are the article's clients 1 and 2, nodes a to e its A to E. Kleppmann's second Redlock scenario, the GC pause while the replies are in flight, is the next lesson; a pause once the client holds the lock is redlock-pause-after-acquire.",
        moments: &[
            Moment {
                run: None,
                needles: &["partition [one]"],
                says: "Due to a network issue, D and E cannot be reached from client 1.",
            },
            Moment {
                run: None,
                needles: &["one acquires"],
                says: "Client 1 acquires the lock on nodes A, B, C — a majority of five.",
            },
            Moment {
                run: None,
                needles: &["clock step c"],
                says: "The clock on node C jumps forward…",
            },
            Moment {
                run: None,
                needles: &["c: key lock", "expires"],
                says: "…causing the lock to expire on C.",
            },
            Moment {
                run: None,
                needles: &["two acquires"],
                says: "Client 2 acquires the lock on nodes C, D, E (A and B cannot be reached from it).",
            },
            Moment {
                run: None,
                needles: &["VIOLATION"],
                says: "Clients 1 and 2 now both believe they hold the lock.",
            },
        ],
    },
    Classic {
        model: "classic-kleppmann-redlock-gc-pause",
        figure: "Kleppmann's second Redlock scenario: client 1 goes into a stop-the-world GC pause while the nodes' replies are in flight, and believes them when it wakes",
        source: "Martin Kleppmann, \"How to do distributed locking\" (2016), section \"Breaking Redlock with bad timings\", its second scenario; the reply, Salvatore Sanfilippo, \"Is Redlock safe?\" (2016)",
        reading: "Clients `one` and `two` are the article's clients 1 and 2, nodes a to e its A to E. As written, the clients are node-redlock v5, which counts a majority without checking the validity left; the variant \"validity checked\" is the algorithm as the Redis docs specify it, on the same schedule: the acquisition took longer than the TTL, so it fails.",
        moments: &[
            Moment {
                run: None,
                needles: &["one tries to take lock"],
                says: "Client 1 requests the lock on nodes A, B, C, D, E.",
            },
            Moment {
                run: None,
                needles: &["one is paused"],
                says: "While the responses to client 1 are in flight, client 1 goes into stop-the-world GC.",
            },
            Moment {
                run: None,
                needles: &["d: key lock (token one-1) expires"],
                says: "Locks expire on all Redis nodes.",
            },
            Moment {
                run: None,
                needles: &["two acquires"],
                says: "Client 2 acquires the lock on nodes A, B, C, D, E.",
            },
            Moment {
                run: None,
                needles: &["one acquires"],
                says: "Client 1 finishes GC and receives the responses, held in its kernel's buffers: it believes it acquired the lock.",
            },
            Moment {
                run: None,
                needles: &["VIOLATION"],
                says: "Clients 1 and 2 now both believe they hold the lock.",
            },
            Moment {
                run: Some(VALIDITY),
                needles: &["one gives up"],
                says: "With the validity check: acquiring took 15 s, more than the 10 s TTL, so no validity is left and client 1 fails instead (the reply's point; a pause after the check is still unsafe).",
            },
        ],
    },
    Classic {
        model: "classic-redis-docs-failover-race",
        figure: "the race against failover: the master crashes before the key reaches its replica, the replica is promoted, and client B acquires the lock client A holds",
        source: "\"Distributed Locks with Redis\" (redis.io documentation, the page that introduces Redlock), section \"Why failover-based implementations are not enough\"",
        reading: "m1 is the master, r1 its replica, s1 to s3 the sentinels; `clienta` and `clientb` are the docs' clients A and B.",
        moments: &[
            Moment {
                run: None,
                needles: &["m1 stores lock = clienta"],
                says: "Client A acquires the lock in the master.",
            },
            Moment {
                run: None,
                needles: &["m1 crashes"],
                says: "The master crashes before the write to the key is transmitted to the replica.",
            },
            Moment {
                run: None,
                needles: &["r1: REPLICAOF NO ONE"],
                says: "The replica gets promoted to master.",
            },
            Moment {
                run: None,
                needles: &["clientb acquires"],
                says: "Client B acquires the lock to the same resource A already holds a lock for.",
            },
            Moment {
                run: None,
                needles: &["VIOLATION"],
                says: "SAFETY VIOLATION! (the docs' words)",
            },
        ],
    },
];

/// The classic figure a model reproduces, if any.
pub fn classic(model: &str) -> Option<&'static Classic> {
    CLASSICS.iter().find(|c| c.model == model)
}

/// One run's steps, by its name in the figure (None: the model as written).
type RunSteps = (Option<&'static str>, Vec<stepper::Step>);

/// The figure's moments as (run name, step index) on this seed's runs, in the figure's order;
/// an error names the first moment no step matches (the model no longer draws the figure).
fn figure_stops(
    c: &Classic,
    runs: &[RunSteps],
) -> Result<Vec<(Option<&'static str>, usize)>, String> {
    let mut next: Vec<usize> = vec![0; runs.len()];
    let mut out = Vec::new();
    for m in c.moments {
        let r = runs
            .iter()
            .position(|(n, _)| *n == m.run)
            .ok_or_else(|| format!("{}: no run {:?} for the figure", c.model, m.run))?;
        let steps = &runs[r].1;
        let i = (next[r]..steps.len())
            .find(|&i| m.needles.iter().all(|n| steps[i].sentence.contains(n)))
            .ok_or_else(|| {
                format!(
                    "{}: no step matches the figure's moment {:?} ({:?})",
                    c.model, m.says, m.needles
                )
            })?;
        next[r] = i + 1;
        out.push((m.run, i));
    }
    Ok(out)
}

/// The address of step `i` (0-based) of `run`: pages count steps from 1 (`#s=N`).
fn step_href(run: Option<&str>, i: usize) -> String {
    match run {
        None => format!("#s={}", i + 1),
        Some(v) => format!("#s={}&amp;variant={}", i + 1, v.replace(' ', "%20")),
    }
}

/// The lesson's "The figure" section: what it reproduces, and a narrated stop at each of the
/// figure's moments with "what happens next?" answered by the next moment.
fn figure_section(
    c: &Classic,
    sc: &Scenario,
    seed: u64,
    world: &World,
    violations: &[Violation],
) -> Result<String, String> {
    let mut runs = vec![(None, stepper::steps(sc, world, violations))];
    for v in crate::explore::variants::run_variants(sc, seed) {
        let name = c
            .moments
            .iter()
            .find_map(|m| m.run.filter(|r| *r == v.name));
        if let Some(name) = name {
            runs.push((
                Some(name),
                stepper::steps(&v.sc, &v.world, &v.outcome.violations),
            ));
        }
    }
    let stops = figure_stops(c, &runs)?;
    let mut s = String::new();
    let _ = write!(
        s,
        "<h2 class=\"figure\">The figure this lesson reproduces</h2><p class=\"figure-name\">This run reproduces {}.</p><p class=\"source\">Source: {}.</p><p>{}</p><h2>The figure, stop by stop</h2><p>Open a stop to step the run there; answer the question before you open the next.</p><div class=\"figure-stops\">",
        esc(c.figure),
        esc(c.source),
        esc(c.reading)
    );
    // Each stop holds the next inside its "What happens next?", so that the list gives nothing
    // away: the learner opens one moment at a time, as the figure is told.
    let mut inner = String::new();
    for ((run, i), m) in stops.iter().zip(c.moments).rev() {
        let steps = &runs.iter().find(|(n, _)| n == run).expect("a stop's run").1;
        let step = &steps[*i];
        let on = run.map_or(String::new(), |v| format!(" ({})", esc(v)));
        let next = if inner.is_empty() {
            String::new()
        } else {
            format!(" <details><summary>What happens next?</summary>{inner}</details>")
        };
        inner = format!(
            "<div class=\"figure-stop\"><a href=\"{}\" class=\"stop\">step {}{on} at {}</a>: <b>{}</b> <span class=\"d\">{}</span>{next}</div>",
            step_href(*run, *i),
            i + 1,
            step.at,
            esc(m.says),
            esc(&step.sentence)
        );
    }
    s.push_str(&inner);
    s.push_str("</div>");
    Ok(s)
}

/// The site's files: (file name, HTML).
pub struct Site {
    pub pages: Vec<(String, String)>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

/// Renders the site for the models in `dir` (the benchmarks left out).
pub fn render(dir: &Path) -> Result<Site, String> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .filter(|p| {
            !p.file_stem()
                .is_some_and(|s| s.to_string_lossy().starts_with("bench-"))
        })
        .collect();
    paths.sort();
    let mut pages = Vec::new();
    let mut classic_entries: Vec<(Option<usize>, String)> = Vec::new();
    let mut index = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>distlock-sim lessons</title>\n<style>body{font-family:\"DejaVu Sans\",Helvetica,Arial,sans-serif;margin:24px;max-width:980px;color:#222} li{margin:6px 0} .bad{color:#c00000} .ok{color:#2a7a2a} .d{color:#555}</style></head><body>\n<h1>Distributed locks on Redis, step by step</h1>\n<p>Each lesson is one run of a model from the catalogue, on its first failing seed: step through it (← →, Shift for the notable events), read what every node stores and every client believes, and compare with the fix on the same schedule where the model declares one.</p>\n<ol>\n",
    );
    for p in &paths {
        let sc = crate::scenario::load(p).map_err(|e| e.to_string())?;
        let seed = (0..SEEDS)
            .find(|s| run_world(&sc, *s, TraceMode::Off).0.violated())
            .unwrap_or(0);
        let (o, world) = run_world(&sc, seed, TraceMode::Full);
        let mut page = report::html(&sc, seed, &world, &o.violations, None);
        let story = crate::view::pitfalls::header(p);
        let mut lesson = String::new();
        // The lesson folds away: the stepper, the chart and the state panel keep the screen.
        let _ = write!(
            lesson,
            "<details class=\"lesson\" id=\"lesson\"><summary><a href=\"index.html\">← all lessons</a> · The lesson: the story{} (open to read; the stepper below tells the run step by step)</summary><h2>The story</h2>",
            if classic(&sc.name).is_some() {
                ", the figure stop by stop"
            } else {
                ", what happens next?"
            }
        );
        for para in story.split("\n\n") {
            let _ = write!(lesson, "<p>{}</p>", esc(&para.replace('\n', " ")));
        }
        let figure = classic(&sc.name);
        if let Some(c) = figure {
            lesson.push_str(&figure_section(c, &sc, seed, &world, &o.violations)?);
        }
        // What happens next? The notable stops before the first violation, each with the
        // next notable event as its answer.
        let steps = stepper::steps(&sc, &world, &o.violations);
        let notable: Vec<usize> = (0..steps.len())
            .filter(|&i| steps[i].notable.is_some())
            .collect();
        let first_v = notable
            .iter()
            .position(|&i| steps[i].notable == Some(Notable::Violation))
            .unwrap_or(notable.len().min(QUESTIONS));
        let from = first_v.saturating_sub(QUESTIONS);
        // A classic figure's lesson asks at the figure's moments instead (above).
        if first_v > 0 && figure.is_none() {
            lesson.push_str("<h2>What happens next?</h2><ol class=\"questions\">");
            for w in notable[from..=first_v.min(notable.len() - 1)].windows(2) {
                let (q, a) = (&steps[w[0]], &steps[w[1]]);
                let _ = write!(
                    lesson,
                    "<li><a href=\"{}\" class=\"stop\">step {} at {}</a>: {} <details><summary>What happens next?</summary><a href=\"{}\">step {}</a>: {}</details></li>",
                    step_href(None, w[0]),
                    w[0] + 1,
                    q.at,
                    esc(&q.sentence),
                    step_href(None, w[1]),
                    w[1] + 1,
                    esc(&a.sentence)
                );
            }
            lesson.push_str("</ol>");
        }
        lesson.push_str("</details>\n");
        // A click on a stop moves the stepper there (the page follows `#s=` as it changes).
        page = page.replacen("</header>", &format!("{lesson}</header>"), 1);
        let file = format!("{}.html", sc.name);
        let entry = format!(
            "<li><a href=\"{file}\"><b>{}</b></a> <span class=\"{}\">{}</span>{} — <span class=\"d\">{}</span></li>\n",
            esc(&sc.name),
            if o.violated() { "bad" } else { "ok" },
            if o.violated() {
                format!("fails on seed {seed}")
            } else {
                "holds".to_string()
            },
            if sc.variants.is_empty() {
                String::new()
            } else {
                format!(
                    ", with {}",
                    esc(&sc
                        .variants
                        .iter()
                        .map(|v| v.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "))
                )
            },
            esc(&sc.model.description)
        );
        match figure {
            Some(c) => classic_entries.push((
                CLASSICS.iter().position(|k| k.model == c.model),
                format!(
                    "<li><a href=\"{file}\"><b>{}</b></a> — {} <span class=\"d\">({})</span></li>\n",
                    esc(&upper_first(c.figure)),
                    esc(&sc.name),
                    esc(c.source)
                ),
            )),
            None => index.push_str(&entry),
        }
        pages.push((file, page));
    }
    index.push_str("</ol>\n</body></html>\n");
    // The classic figures come first, in CLASSICS' order; one missing from the catalogue is
    // an error, not a silently shorter list.
    for c in CLASSICS {
        if !paths
            .iter()
            .any(|p| p.file_stem().is_some_and(|s| s == c.model))
        {
            return Err(format!(
                "{}: the classic figure's model is not in {}",
                c.model,
                dir.display()
            ));
        }
    }
    classic_entries.sort_by_key(|(i, _)| *i);
    let classics: String = classic_entries.into_iter().map(|(_, e)| e).collect();
    index = index.replacen(
        "<ol>\n",
        &format!("<h2 id=\"classic-figures\">Classic figures</h2>\n<p>The figures people are taught from, each reproduced by a model and narrated at the figure's moments.</p>\n<ol class=\"classics\">\n{classics}</ol>\n<h2>The catalogue</h2>\n<ol>\n"),
        1,
    );
    pages.insert(0, ("index.html".into(), index));
    Ok(Site { pages })
}

/// Writes the site into `out` (created if missing); returns the number of pages.
pub fn write(dir: &Path, out: &Path) -> Result<usize, String> {
    let site = render(dir)?;
    crate::explore::create_dir_all(out)?;
    for (file, html) in &site.pages {
        let p = out.join(file);
        std::fs::write(&p, html).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(site.pages.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs_of(model: &str) -> (Classic, Vec<RunSteps>) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("models/{model}.ron"));
        let sc = crate::scenario::load(&path).expect("loads");
        let (o, world) = run_world(&sc, 0, TraceMode::Full);
        let c = Classic {
            model: "made-up",
            figure: "",
            source: "",
            reading: "",
            moments: &[],
        };
        (c, vec![(None, stepper::steps(&sc, &world, &o.violations))])
    }

    #[test]
    fn a_figure_moment_that_no_step_says_is_an_error_naming_it() {
        let (mut c, runs) = runs_of("classic-redis-docs-failover-race");
        c.moments = &[
            Moment {
                run: None,
                needles: &["clientb acquires"],
                says: "B acquires",
            },
            Moment {
                run: None,
                needles: &["m1 crashes"],
                says: "the master crashes",
            },
        ];
        // The crash comes before B's acquire: in the figure's order, no step is left to match.
        let e = figure_stops(&c, &runs).expect_err("out of order");
        assert!(e.contains("the master crashes"), "{e}");
    }

    #[test]
    fn a_figure_moment_on_a_variant_the_run_lacks_is_an_error() {
        let (mut c, runs) = runs_of("classic-redis-docs-failover-race");
        c.moments = &[Moment {
            run: Some("no such variant"),
            needles: &["m1"],
            says: "x",
        }];
        assert!(figure_stops(&c, &runs).is_err());
    }

    #[test]
    fn every_classic_figure_matches_its_moments_in_order_on_seed_0() {
        for c in CLASSICS {
            let path =
                Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("models/{}.ron", c.model));
            let sc = crate::scenario::load(&path).expect("loads");
            let (o, world) = run_world(&sc, 0, TraceMode::Full);
            let mut runs = vec![(None, stepper::steps(&sc, &world, &o.violations))];
            for v in crate::explore::variants::run_variants(&sc, 0) {
                if let Some(n) = c
                    .moments
                    .iter()
                    .find_map(|m| m.run.filter(|r| *r == v.name))
                {
                    runs.push((
                        Some(n),
                        stepper::steps(&v.sc, &v.world, &v.outcome.violations),
                    ));
                }
            }
            let stops = figure_stops(c, &runs).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(stops.len(), c.moments.len(), "{}", c.model);
        }
    }
}
