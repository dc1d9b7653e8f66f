//! Replays corpus cases against a `RedisNode` in virtual time.
//!
//! Each case gets a fresh node whose wall clock starts on a whole second (the recorder started
//! every case on one). `@T` moves the node's clock to `start + T`; the server cron (active
//! expiry) runs every 100 ms of node time in between, as `hz 10` does. Commands on the same
//! `@T` run back to back at the same instant; the corpus's `~N` tolerance (±30) covers the few
//! ms the recorder needed between them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::conformance::corpus::{self, Case, ParseError, StepKind, Topology, resolve_arg};
use crate::proto::Command;
use crate::redis::node::{Caller, RedisConfig, RedisNode};
use crate::time::NS_PER_MS;

/// Unix ms at which every case starts (a whole second, as in the recording).
pub const CASE_START_UNIX_MS: i64 = 1_700_000_000_000;
const CRON_MS: u64 = 100;

/// What happened to one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CaseResult {
    Passed,
    /// First mismatch: corpus line, command text, expected pattern, reply got.
    Failed {
        line: usize,
        command: String,
        expected: String,
        got: String,
    },
    Skipped {
        reason: &'static str,
    },
}

#[derive(Clone, Debug)]
pub struct FileReport {
    pub path: PathBuf,
    pub cases: Vec<(String, usize, CaseResult)>,
}

impl FileReport {
    fn count(&self, f: impl Fn(&CaseResult) -> bool) -> usize {
        self.cases.iter().filter(|(_, _, r)| f(r)).count()
    }
    pub fn passed(&self) -> usize {
        self.count(|r| matches!(r, CaseResult::Passed))
    }
    pub fn failed(&self) -> usize {
        self.count(|r| matches!(r, CaseResult::Failed { .. }))
    }
    pub fn skipped(&self) -> usize {
        self.count(|r| matches!(r, CaseResult::Skipped { .. }))
    }
}

/// Replays one case.
pub fn run_case(case: &Case) -> CaseResult {
    if case.topology == Topology::MasterReplica {
        return crate::conformance::replicated::run_case(case);
    }
    let start = CASE_START_UNIX_MS;
    let mut node = RedisNode::new(RedisConfig {
        observe_keys: false,
        ..RedisConfig::default()
    });
    let mut next_cron_ms = CRON_MS;
    for step in &case.steps {
        while next_cron_ms <= step.at_ms {
            let _ = node.cron(start + next_cron_ms as i64, next_cron_ms * NS_PER_MS);
            next_cron_ms += CRON_MS;
        }
        let now = start + step.at_ms as i64;
        let StepKind::Command { argv, expect, .. } = &step.kind else {
            return CaseResult::Skipped {
                reason: "replication directive in a single-node case",
            };
        };
        let argv: Vec<Vec<u8>> = argv.iter().map(|a| resolve_arg(a, start)).collect();
        let got = match Command::parse(&argv) {
            Ok(cmd) => node.execute(now, &cmd, Caller { proc: None }),
            Err(e) => e.client_reply(),
        };
        if !expect.matches(&got, start) {
            return CaseResult::Failed {
                line: step.line,
                command: render_argv(&argv),
                expected: expect.render(),
                got: got.to_string(),
            };
        }
    }
    CaseResult::Passed
}

pub(crate) fn render_argv(argv: &[Vec<u8>]) -> String {
    let mut s = String::new();
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let plain = !a.is_empty()
            && a.iter()
                .all(|&b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
        if plain {
            s.push_str(&String::from_utf8_lossy(a));
        } else {
            s.push('"');
            let _ = crate::proto::reply::write_quoted(&mut s, a);
            s.push('"');
        }
    }
    s
}

/// Replays a corpus file's text.
pub fn run_text(path: &Path, text: &str) -> Result<FileReport, ParseError> {
    let parsed = corpus::parse(text)?;
    let cases = parsed
        .cases
        .iter()
        .map(|c| (c.name.clone(), c.line, run_case(c)))
        .collect();
    Ok(FileReport {
        path: path.to_path_buf(),
        cases,
    })
}

/// A whole corpus directory.
#[derive(Clone, Debug, Default)]
pub struct DirReport {
    pub files: Vec<FileReport>,
}

/// Why a corpus directory could not be replayed (bad input: exit 2).
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Malformed {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{0}: no corpus files (*.txt) found")]
    Empty(String),
}

/// Largest corpus file accepted (the recorded ones are ~100 KB).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Replays every `*.txt` file of `dir` in name order (a single file also works).
pub fn run_dir(dir: &Path) -> Result<DirReport, CorpusError> {
    let io = |e: std::io::Error| CorpusError::Io {
        path: dir.display().to_string(),
        source: e,
    };
    let mut paths: Vec<PathBuf> = if dir.is_file() {
        vec![dir.to_path_buf()]
    } else {
        std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect()
    };
    paths.sort();
    if paths.is_empty() {
        return Err(CorpusError::Empty(dir.display().to_string()));
    }
    let mut report = DirReport::default();
    for path in paths {
        let p = path.display().to_string();
        let meta = std::fs::metadata(&path).map_err(|e| CorpusError::Io {
            path: p.clone(),
            source: e,
        })?;
        if meta.len() > MAX_FILE_BYTES {
            return Err(CorpusError::Malformed {
                path: p,
                line: 1,
                message: format!("file larger than {MAX_FILE_BYTES} bytes"),
            });
        }
        let bytes = std::fs::read(&path).map_err(|e| CorpusError::Io {
            path: p.clone(),
            source: e,
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            CorpusError::Malformed {
                path: p.clone(),
                line,
                message: "not valid UTF-8".into(),
            }
        })?;
        let file = run_text(&path, &text).map_err(|e| CorpusError::Malformed {
            path: p.clone(),
            line: e.line,
            message: e.message,
        })?;
        report.files.push(file);
    }
    Ok(report)
}

impl DirReport {
    pub fn passed(&self) -> usize {
        self.files.iter().map(FileReport::passed).sum()
    }
    pub fn failed(&self) -> usize {
        self.files.iter().map(FileReport::failed).sum()
    }
    pub fn skipped(&self) -> usize {
        self.files.iter().map(FileReport::skipped).sum()
    }

    /// The report people read: each failure with expected vs got, each skip by name, and the
    /// closing line `N passed, M failed, K skipped`.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for f in &self.files {
            for (name, case_line, r) in &f.cases {
                match r {
                    CaseResult::Passed => {}
                    CaseResult::Failed {
                        line,
                        command,
                        expected,
                        got,
                    } => {
                        let _ = writeln!(
                            s,
                            "FAIL {} (case at {}:{case_line})",
                            name,
                            f.path.display()
                        );
                        let _ = writeln!(s, "  {}:{line}: {command}", f.path.display());
                        let _ = writeln!(s, "    expected: {expected}");
                        let _ = writeln!(s, "    got:      {got}");
                    }
                    CaseResult::Skipped { reason } => {
                        let _ = writeln!(s, "skip {name}: {reason}");
                    }
                }
            }
        }
        let _ = writeln!(
            s,
            "{} passed, {} failed, {} skipped",
            self.passed(),
            self.failed(),
            self.skipped()
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_expectation_is_reported_with_both_sides() {
        let text = "# case: x\n# topology: single\n@0 SET k v -> OK\n@0 GET k -> \"w\"\n";
        let r = run_text(Path::new("t.txt"), text).unwrap();
        match &r.cases[0].2 {
            CaseResult::Failed {
                line,
                expected,
                got,
                ..
            } => {
                assert_eq!(
                    (*line, expected.as_str(), got.as_str()),
                    (4, "\"w\"", "\"v\"")
                );
            }
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[test]
    fn lazy_and_active_expiry_follow_virtual_time() {
        let text = "# case: x\n# topology: single\n@0 SET k v PX 150 -> OK\n@0 SET keep v -> OK\n@900 DBSIZE -> (integer) 1\n";
        let r = run_text(Path::new("t.txt"), text).unwrap();
        assert_eq!(r.cases[0].2, CaseResult::Passed);
    }

    #[test]
    fn a_malformed_line_is_a_located_error() {
        let text = "# case: x\n# topology: single\n@0 SET k \"v -> OK\n";
        let e = run_text(Path::new("t.txt"), text).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
    }
}
