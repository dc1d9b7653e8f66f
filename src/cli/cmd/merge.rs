//! `merge FILES…`: the outputs of `sweep --shard I/N --json`, one file per shard, as the
//! summary of the whole sweep (docs/scale-out.md).
//!
//! Two passes over the files, each line read with a length bound: the first checks that the
//! files are the N shards of one sweep and merges their summaries; the second (for `--json`)
//! streams the violating-seed lines in seed order, one line per file in memory at a time.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use crate::cli::{self, Ctx, SeedRange, bad_input, exit_with, out};
use crate::explore::{Shard, SweepSummary};

/// Longest line accepted: a violating seed's line is well under this.
const MAX_LINE_BYTES: u64 = 4 << 20;

#[derive(clap::Args)]
pub struct Args {
    /// The shards' outputs of `sweep MODEL --seeds A..B --shard I/N --json`, one file per
    /// shard (any order; each of 0..N exactly once).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// JSON lines, as the unsharded `sweep --json` prints them, instead of text.
    #[arg(long)]
    json: bool,
    /// The model file, if it is not at the path the shards ran it from (or name a bundled
    /// model).
    #[arg(long)]
    model: Option<String>,
}

/// One line of a file at a time, each at most `MAX_LINE_BYTES`.
struct Lines {
    path: PathBuf,
    reader: BufReader<File>,
    line: usize,
}

impl Lines {
    fn open(path: &Path) -> Result<Lines, String> {
        let f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Lines {
            path: path.to_path_buf(),
            reader: BufReader::new(f),
            line: 0,
        })
    }

    /// The next non-empty line as JSON, with its text; None at the end.
    fn next(&mut self) -> Result<Option<(Value, String)>, String> {
        loop {
            let mut buf = Vec::new();
            let n = (&mut self.reader)
                .take(MAX_LINE_BYTES + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| format!("{}: {e}", self.path.display()))?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            if buf.len() as u64 > MAX_LINE_BYTES {
                return Err(self.err(&format!("line longer than {MAX_LINE_BYTES} bytes")));
            }
            let text = String::from_utf8(buf).map_err(|_| self.err("not UTF-8"))?;
            let text = text.trim_end_matches(['\n', '\r']).to_string();
            if text.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(&text).map_err(|e| {
                self.err(&format!(
                    "not a line of `sweep --json` output: {e} (col {})",
                    e.column()
                ))
            })?;
            return Ok(Some((v, text)));
        }
    }

    fn err(&self, msg: &str) -> String {
        format!("{}:{}: {msg}", self.path.display(), self.line)
    }
}

/// What pass one learns from one file.
struct ShardFile {
    summary: SweepSummary,
    shard: Shard,
    jobs: u64,
    wall_s: f64,
    /// `FILE:LINE` of its summary line, for errors.
    at: String,
}

/// Shards named in the error for missing ones.
const MISSING_NAMED: usize = 5;

/// Checks one shard's summary against what a sweep of its share of `seeds` can give: it ran
/// exactly its share (so that shards each given once are disjoint and complete), and no count
/// exceeds what contains it (violating <= seeds run, each property <= violating, ...).
fn check_shard(f: &ShardFile, seeds: &std::ops::Range<u64>) -> Result<(), String> {
    let s = &f.summary;
    let err = |msg: String| {
        Err(format!(
            "{}: shard {}/{}: {msg}; not the output of a sweep (edited or damaged?)",
            f.at, f.shard.index, f.shard.count
        ))
    };
    let share = f.shard.count_in(seeds);
    if s.seeds_run != share {
        return err(format!(
            "{} seeds run, but its share of seeds {}..{} is {share}",
            s.seeds_run, seeds.start, seeds.end
        ));
    }
    let within = |what: &str, n: u64, of: &str, bound: u64| {
        if n > bound {
            Err(format!("{what} {n} > {of} {bound}"))
        } else {
            Ok(())
        }
    };
    let checks = || -> Result<(), String> {
        within(
            "violating seeds",
            s.violating_seeds,
            "seeds run",
            s.seeds_run,
        )?;
        within(
            "inconclusive seeds",
            s.inconclusive_seeds,
            "seeds run",
            s.seeds_run,
        )?;
        within(
            "event-limit seeds",
            s.event_limit_seeds,
            "seeds run",
            s.seeds_run,
        )?;
        within(
            "history-limit seeds",
            s.history_limit_seeds,
            "seeds run",
            s.seeds_run,
        )?;
        for (p, n) in &s.violations_per_property {
            within(
                &format!("{} violations", p.name()),
                *n,
                "violating seeds",
                s.violating_seeds,
            )?;
        }
        for (h, (n, _)) in &s.witnesses {
            within(
                &format!("witness {}", h.name()),
                *n,
                "seeds run",
                s.seeds_run,
            )?;
        }
        let in_share = |what: &str, seed: u64| {
            if seeds.contains(&seed) && f.shard.contains(seed) {
                Ok(())
            } else {
                Err(format!("{what} {seed} is not a seed of this shard"))
            }
        };
        match (s.first_violating_seed, s.violating_seeds) {
            (Some(seed), 1..) => in_share("first violating seed", seed)?,
            (None, 0) => {}
            (first, n) => {
                return Err(format!(
                    "first violating seed {first:?} with {n} violating seeds"
                ));
            }
        }
        for (p, seed) in &s.first_seed_per_property {
            in_share(&format!("first seed of {}", p.name()), *seed)?;
        }
        if let Some((seed, _, _)) = s.first_inconclusive {
            in_share("first inconclusive seed", seed)?;
        }
        Ok(())
    };
    match checks() {
        Ok(()) => Ok(()),
        Err(m) => err(m),
    }
}

/// The totals the merge adds up, checked: the shards' counts must not overflow.
fn check_totals(shards: &[ShardFile]) -> Result<(), String> {
    let sum = |what: &str, get: &dyn Fn(&SweepSummary) -> u64| -> Result<u64, String> {
        shards.iter().try_fold(0u64, |acc, f| {
            acc.checked_add(get(&f.summary)).ok_or_else(|| {
                format!(
                    "{}: the shards' {what} add up past 2^64: not the output of a sweep",
                    f.at
                )
            })
        })
    };
    sum("events", &|s| s.events)?;
    sum("acquisitions", &|s| s.acquisitions)?;
    sum("total overlap", &|s| s.total_overlap_ns)?;
    for i in 0..6 {
        sum("margin counts", &|s| s.margin_histogram[i])?;
    }
    Ok(())
}

pub fn exec(a: Args, ctx: &Ctx) -> ExitCode {
    match merge(&a, ctx) {
        Ok(code) => code,
        Err(e) => bad_input(&e),
    }
}

fn merge(a: &Args, ctx: &Ctx) -> Result<ExitCode, String> {
    // Pass one: every file's summary line, checked against the first.
    let mut shards: Vec<ShardFile> = Vec::new();
    // The first file's model name, seeds, model path and model hash (None: a shard from
    // before the hash was written).
    let mut first: Option<(String, [u64; 2], String, Option<String>)> = None;
    for path in &a.files {
        let mut lines = Lines::open(path)?;
        let mut found = None;
        while let Some((v, _)) = lines.next()? {
            if let Some(s) = v.get("summary") {
                if found.is_some() {
                    return Err(lines.err("a second summary line: one shard per file"));
                }
                found = Some((s.clone(), lines.line));
            } else if found.is_some() {
                return Err(lines.err("a line after the summary line"));
            }
        }
        let (s, line) = found.ok_or_else(|| {
            format!(
                "{}: no summary line (is it the output of `sweep --json`, run to its end?)",
                path.display()
            )
        })?;
        let at = |msg: &str| format!("{}:{line}: {msg}", path.display());
        let partial = s.get("partial").ok_or_else(|| {
            at("the summary has no \"partial\" object: run the sweep with --shard I/N")
        })?;
        let summary = cli::shard::summary_from_partial(partial).map_err(|e| at(&e))?;
        let model = s["model"].as_str().unwrap_or_default().to_string();
        let seeds = match s["seeds"]
            .as_array()
            .map(|x| (x[0].as_u64(), x[1].as_u64()))
        {
            Some((Some(a), Some(b))) if a <= b => [a, b],
            _ => return Err(at("\"seeds\" is not [start, end]")),
        };
        let shard = match s["shard"]
            .as_array()
            .map(|x| (x[0].as_u64(), x[1].as_u64()))
        {
            Some((Some(index), Some(count))) if index < count => Shard { index, count },
            _ => return Err(at("\"shard\" is not [index, count]")),
        };
        let model_path = partial["path"].as_str().unwrap_or_default().to_string();
        let model_hash = match partial.get("model_sha1") {
            None | Some(Value::Null) => None,
            Some(Value::String(h)) => Some(h.clone()),
            Some(_) => return Err(at("partial: \"model_sha1\" is not a string")),
        };
        match &first {
            None => first = Some((model.clone(), seeds, model_path, model_hash)),
            Some((m, sd, _, h)) => {
                if *m != model || *sd != seeds {
                    return Err(at(&format!(
                        "model {model} seeds {}..{} is not the sweep of the first file ({m}, seeds {}..{})",
                        seeds[0], seeds[1], sd[0], sd[1]
                    )));
                }
                if *h != model_hash {
                    return Err(at(&format!(
                        "the model this shard ran (sha1 {}) is not the first file's (sha1 {})",
                        model_hash.as_deref().unwrap_or("not recorded"),
                        h.as_deref().unwrap_or("not recorded")
                    )));
                }
            }
        }
        if let Some(other) = shards.first()
            && other.shard.count != shard.count
        {
            return Err(at(&format!(
                "shard {}/{} of a sweep split {} ways",
                shard.index, shard.count, other.shard.count
            )));
        }
        if shards.iter().any(|f| f.shard.index == shard.index) {
            return Err(at(&format!(
                "shard {}/{} given twice",
                shard.index, shard.count
            )));
        }
        shards.push(ShardFile {
            summary,
            shard,
            jobs: s["jobs"].as_u64().unwrap_or(0),
            wall_s: s["wall_s"].as_f64().unwrap_or(0.0),
            at: format!("{}:{line}", path.display()),
        });
    }
    let (model_name, seeds, model_path, model_hash) = first.expect("clap requires a file");
    // The count is what the files say, bounded by how many files there are: the missing
    // ones are counted and the first few named, never listed one by one.
    let count = shards[0].shard.count;
    if shards.len() as u64 != count {
        let given: std::collections::BTreeSet<u64> = shards.iter().map(|f| f.shard.index).collect();
        let first_missing: Vec<String> = (0..count)
            .filter(|i| !given.contains(i))
            .take(MISSING_NAMED)
            .map(|i| format!("{i}/{count}"))
            .collect();
        let missing = count - shards.len() as u64;
        let more = missing - first_missing.len() as u64;
        return Err(format!(
            "{} of {count} shards given; missing {}{}",
            shards.len(),
            first_missing.join(", "),
            if more > 0 {
                format!(" and {more} more ({missing} missing in all)")
            } else {
                String::new()
            }
        ));
    }
    let range = seeds[0]..seeds[1];
    for f in &shards {
        check_shard(f, &range)?;
    }
    check_totals(&shards)?;
    let sc = match ctx.load(a.model.as_deref().unwrap_or(&model_path)) {
        Ok(sc) => sc,
        Err(code) => {
            eprintln!("note: the shards ran the model from {model_path:?}; name it with --model");
            return Ok(code);
        }
    };
    // The model must be the one the shards ran: its text's hash when they recorded it,
    // else its name.
    match (&model_hash, cli::shard::model_sha1(&sc)) {
        (Some(theirs), Some(ours)) if *theirs != ours => {
            return Err(format!(
                "{}: not the model the shards ran (its sha1 is {ours}, theirs {theirs}; the shards ran {model_path:?})",
                sc.path
            ));
        }
        (Some(_), None) => {
            return Err(format!(
                "{}: cannot read the model's text to check it is the one the shards ran",
                sc.path
            ));
        }
        _ if sc.name != model_name => {
            return Err(format!(
                "{}: model {}, but the shards ran model {model_name}",
                sc.path, sc.name
            ));
        }
        _ => {}
    }
    // Wall time and jobs: the sum over the shards (the work done, not the elapsed time).
    let jobs: u64 = shards.iter().map(|f| f.jobs).sum();
    let wall_s: f64 = shards.iter().map(|f| f.wall_s).sum();
    let mut merged = SweepSummary::default();
    for f in shards {
        merged.merge(f.summary);
    }
    let seeds = SeedRange(seeds[0]..seeds[1]);
    let jobs = usize::try_from(jobs).unwrap_or(usize::MAX);
    if a.json {
        stream_violating_lines(&a.files)?;
        out(&cli::sweep_json(
            &sc,
            &merged,
            &seeds,
            Shard::WHOLE,
            jobs,
            wall_s,
        ));
    } else {
        out(&cli::sweep_text(
            &sc,
            &merged,
            &seeds,
            Shard::WHOLE,
            jobs,
            wall_s,
            None,
        ));
    }
    Ok(exit_with(cli::sweep_outcome(&sc, &merged)))
}

/// Pass two: the violating-seed lines of all files in seed order (each file is in seed
/// order already, so this is a k-way merge holding one line per file).
fn stream_violating_lines(files: &[PathBuf]) -> Result<(), String> {
    let mut readers: Vec<Lines> = files
        .iter()
        .map(|p| Lines::open(p))
        .collect::<Result<_, _>>()?;
    let next_seed_line = |r: &mut Lines| -> Result<Option<(u64, String)>, String> {
        match r.next()? {
            Some((v, text)) if v.get("summary").is_none() => {
                let seed = v["seed"]
                    .as_u64()
                    .ok_or_else(|| r.err("a violating-seed line without a \"seed\""))?;
                Ok(Some((seed, text)))
            }
            _ => Ok(None),
        }
    };
    let mut heads: Vec<Option<(u64, String)>> = readers
        .iter_mut()
        .map(next_seed_line)
        .collect::<Result<_, _>>()?;
    loop {
        let Some(i) = (0..heads.len())
            .filter(|i| heads[*i].is_some())
            .min_by_key(|i| heads[*i].as_ref().map(|h| h.0))
        else {
            return Ok(());
        };
        let (_, text) = heads[i].take().expect("chosen because present");
        out(&format!("{text}\n"));
        heads[i] = next_seed_line(&mut readers[i])?;
    }
}
