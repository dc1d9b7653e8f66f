//! Replays corpus cases against a `RedisNode` in virtual time.
//!
//! Each case gets a fresh node whose wall clock starts on a whole second (the recorder started
//! every case on one). `@T` moves the node's clock to `start + T`; the server cron (active
//! expiry) runs every 100 ms of node time in between, as `hz 10` does. Commands on the same
//! `@T` run back to back at the same instant; the corpus's `~N` tolerance (±30) covers the few
//! ms the recorder needed between them. A named connection (`[b]`) is a client of its own
//! (`ConnId` `Some(ProcId(1..))`; the default connection is the node's `None`), so a
//! command that blocks parks at the node while the others go on.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::conformance::corpus::{
    self, Arg, Case, ParseError, StepKind, Topology, render_argv, resolve_arg,
};
pub use crate::conformance::corpus::{CASE_START_UNIX_MS, CaseResult};
use crate::proto::{Command, Msg, Reply};
use crate::redis::node::connection::ConnId;
use crate::redis::node::{Caller, RedisConfig, RedisNode};
use crate::time::{NS_PER_MS, ProcId};

const CRON_MS: u64 = 100;

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

/// One single-node model fed commands at virtual times, as a corpus case feeds it: a fresh
/// node whose clock starts at [`CASE_START_UNIX_MS`], the 100 ms cron run up to each
/// command's time, placeholders resolved against that start. `run_case` replays through it,
/// and so does the differential test against a real server (tests/differential.rs), so a
/// case it records replays here exactly as it was compared.
pub struct NodeReplay {
    node: RedisNode,
    // Invariant: every cron tick before `next_cron_ms` has run, none at or after it.
    next_cron_ms: u64,
    // Invariant: never decreases (virtual time only moves forward).
    last_at_ms: u64,
    /// Named connections, in the order first used: `[b]` is `Some(ProcId(1 + index))`.
    names: Vec<String>,
    /// Blocked requests: the connection and the request id it is answered under.
    blocked: Vec<(ConnId, u64)>,
    /// Replies of blocked requests that have come, not yet taken.
    arrived: Vec<(ConnId, Reply)>,
    last_id: u64,
}

/// What sending a command gives: its reply, or nothing yet (it blocked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    Reply(Reply),
    Blocked,
}

impl Default for NodeReplay {
    fn default() -> Self {
        NodeReplay::new()
    }
}

impl NodeReplay {
    pub fn new() -> NodeReplay {
        NodeReplay {
            node: RedisNode::new(RedisConfig {
                observe_keys: false,
                ..RedisConfig::default()
            }),
            next_cron_ms: CRON_MS,
            last_at_ms: 0,
            names: Vec::new(),
            blocked: Vec::new(),
            arrived: Vec::new(),
            last_id: 0,
        }
    }

    /// The node's connection for a name (`None`: the default one).
    fn conn_id(&mut self, name: Option<&str>) -> ConnId {
        let name = name?;
        let i = match self.names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                self.names.push(name.to_string());
                self.names.len() - 1
            }
        };
        Some(ProcId(1 + i as u32))
    }

    /// Moves virtual time to `at_ms` (not before the last command's time): the cron ticks
    /// in between run, and time out blocked clients as they pass.
    pub fn advance(&mut self, at_ms: u64) {
        assert!(
            at_ms >= self.last_at_ms,
            "virtual time went back: @{at_ms} after @{}",
            self.last_at_ms
        );
        self.last_at_ms = at_ms;
        while self.next_cron_ms <= at_ms {
            let _ = self.node.cron(
                CASE_START_UNIX_MS + self.next_cron_ms as i64,
                self.next_cron_ms * NS_PER_MS,
            );
            self.next_cron_ms += CRON_MS;
            self.collect();
        }
    }

    /// Takes the late replies the node made into `arrived`.
    fn collect(&mut self) {
        let mut late: Vec<(ConnId, u64, Reply)> = self
            .node
            .drain_outbox()
            .filter_map(|(to, m)| match m {
                Msg::Reply { id, reply } => Some((Some(to), id, reply)),
                _ => None,
            })
            .collect();
        late.extend(
            self.node
                .take_runner_replies()
                .into_iter()
                .map(|(id, r)| (None, id, r)),
        );
        for (conn, id, reply) in late {
            if let Some(i) = self.blocked.iter().position(|b| *b == (conn, id)) {
                self.blocked.remove(i);
                self.arrived.push((conn, reply));
            }
        }
    }

    /// Sends `argv` on a connection at `at_ms` after the case start.
    pub fn send(&mut self, conn: Option<&str>, at_ms: u64, argv: &[Arg]) -> Sent {
        self.advance(at_ms);
        let conn = self.conn_id(conn);
        let now = CASE_START_UNIX_MS + at_ms as i64;
        let argv: Vec<Vec<u8>> = argv
            .iter()
            .map(|a| resolve_arg(a, CASE_START_UNIX_MS))
            .collect();
        let caller = Caller { proc: conn };
        let reply = match Command::parse(&argv) {
            Ok(cmd) => self.node.execute(now, &cmd, caller),
            Err(e) => self.node.reject(caller, &e),
        };
        self.last_id += 1;
        let blocked = self.node.park(conn, self.last_id);
        if blocked {
            self.blocked.push((conn, self.last_id));
        }
        self.node.before_sleep(now);
        self.collect();
        if blocked {
            Sent::Blocked
        } else {
            Sent::Reply(reply)
        }
    }

    /// The reply of the command blocked on a connection, if it has come by the time
    /// reached.
    pub fn take_reply(&mut self, conn: Option<&str>) -> Option<Reply> {
        let conn = self.conn_id(conn);
        let i = self.arrived.iter().position(|(c, _)| *c == conn)?;
        Some(self.arrived.remove(i).1)
    }

    /// Has the reply of a blocked command come (and not been taken)?
    pub fn has_reply(&mut self, conn: Option<&str>) -> bool {
        let conn = self.conn_id(conn);
        self.arrived.iter().any(|(c, _)| *c == conn)
    }

    /// The db the replay's connection has selected (a probe: changes nothing).
    pub fn selected_db(&self) -> u8 {
        self.node.selected_db(None)
    }

    /// Runs `argv` on the default connection at `at_ms` after the case start (not before
    /// the previous command's time). A command that blocks answers an error saying so
    /// (`send` tells it apart).
    pub fn execute(&mut self, at_ms: u64, argv: &[Arg]) -> Reply {
        match self.send(None, at_ms, argv) {
            Sent::Reply(r) => r,
            Sent::Blocked => Reply::err("(blocked: the model parked this command)"),
        }
    }
}

/// Replays one case.
pub fn run_case(case: &Case) -> CaseResult {
    if case.topology == Topology::MasterReplica {
        return crate::conformance::replicated::run_case(case);
    }
    let start = CASE_START_UNIX_MS;
    let mut replay = NodeReplay::new();
    // Connections whose command blocked, and its text (for a failure's report).
    let mut waiting: Vec<(Option<&str>, String)> = Vec::new();
    for step in &case.steps {
        replay.advance(step.at_ms);
        let fail = |command: String, expected: String, got: String| CaseResult::Failed {
            line: step.line,
            command,
            expected,
            got,
        };
        // A blocked command's reply may not come before a command is sent ahead of its `<-`
        // line (between two `<-` lines nothing is sent).
        let sends = !matches!(step.kind, StepKind::Await { .. });
        for (conn, text) in &waiting {
            if sends && replay.has_reply(*conn) {
                let got = replay.take_reply(*conn).unwrap_or(Reply::Nil);
                return fail(
                    text.clone(),
                    "(blocked) until its '<-' line".into(),
                    format!("{got} before line {}", step.line),
                );
            }
        }
        let render = |argv: &[Arg]| {
            let argv: Vec<Vec<u8>> = argv.iter().map(|a| resolve_arg(a, start)).collect();
            render_argv(&argv)
        };
        match &step.kind {
            StepKind::Command {
                conn, argv, expect, ..
            } => match replay.send(conn.as_deref(), step.at_ms, argv) {
                Sent::Reply(got) if expect.matches(&got, start) => {}
                Sent::Reply(got) => return fail(render(argv), expect.render(), got.to_string()),
                Sent::Blocked => return fail(render(argv), expect.render(), "(blocked)".into()),
            },
            StepKind::Blocked { conn, argv, .. } => {
                match replay.send(conn.as_deref(), step.at_ms, argv) {
                    Sent::Blocked => waiting.push((conn.as_deref(), render(argv))),
                    Sent::Reply(got) => {
                        return fail(render(argv), "(blocked)".into(), got.to_string());
                    }
                }
            }
            StepKind::Await { conn, expect, .. } => {
                let i = waiting.iter().position(|(c, _)| *c == conn.as_deref());
                let text = i.map(|i| waiting.remove(i).1).unwrap_or_default();
                match replay.take_reply(conn.as_deref()) {
                    Some(got) if expect.matches(&got, start) => {}
                    Some(got) => return fail(text, expect.render(), got.to_string()),
                    None => {
                        let why = format!("(no reply by @{})", step.at_ms);
                        return fail(text, expect.render(), why);
                    }
                }
            }
            StepKind::Link | StepKind::WaitSync => {
                return CaseResult::Skipped {
                    reason: "replication directive in a single-node case",
                };
            }
        }
    }
    CaseResult::Passed
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

/// What a path is, in words, for an error that refuses it.
fn file_kind(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Reads one corpus file: a regular file of at most `MAX_FILE_BYTES`, whatever its metadata
/// claims. The type is checked on the opened file (a symlink is followed to what it names,
/// and a path swapped after a check cannot slip through), and the read goes through
/// `take(MAX_FILE_BYTES + 1)`, so a file that grows, or a device that reports length 0, is
/// cut off at the cap instead of being read to its end.
pub fn read_corpus_file(path: &Path) -> Result<Vec<u8>, CorpusError> {
    use std::io::Read;
    let p = path.display().to_string();
    let io = |e: std::io::Error| CorpusError::Io {
        path: p.clone(),
        source: e,
    };
    let refuse = |message: String| CorpusError::Malformed {
        path: p.clone(),
        line: 1,
        message,
    };
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    // Opening a FIFO for reading blocks until a writer appears; non-blocking, the open
    // returns at once and the type check below refuses it. (Regular files ignore the flag.)
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        open.custom_flags(libc::O_NONBLOCK);
    }
    let file = open.open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(refuse(format!(
            "{} is not a regular file: a corpus file must be one",
            file_kind(meta.file_type())
        )));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(refuse(format!("file larger than {MAX_FILE_BYTES} bytes")));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(refuse(format!("file larger than {MAX_FILE_BYTES} bytes")));
    }
    Ok(bytes)
}

/// Replays every `*.txt` file of `dir` in name order (a single file also works).
pub fn run_dir(dir: &Path) -> Result<DirReport, CorpusError> {
    let io = |e: std::io::Error| CorpusError::Io {
        path: dir.display().to_string(),
        source: e,
    };
    // Anything but a directory is taken as one file; `read_corpus_file` refuses what is
    // not a regular file.
    let mut paths: Vec<PathBuf> = if !std::fs::metadata(dir).map_err(io)?.is_dir() {
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
        let bytes = read_corpus_file(&path)?;
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

    /// The first case that failed because the node refused a command for the simulator's
    /// memory cap (`redis::node::MAX_USED_MEMORY_BYTES`): its file, line and command. A real
    /// server of the recording had no cap, so such a case is past the simulator's limits (bad
    /// input), not a divergence; its replies were recorded without an OOM in them.
    pub fn first_over_memory_cap(&self) -> Option<(&Path, usize, &str)> {
        self.files.iter().find_map(|f| {
            f.cases.iter().find_map(|(_, _, r)| match r {
                CaseResult::Failed {
                    line,
                    command,
                    expected,
                    got,
                } if got.contains(crate::redis::node::OOM) && !expected.contains("OOM") => {
                    Some((f.path.as_path(), *line, command.as_str()))
                }
                _ => None,
            })
        })
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
    fn a_node_past_its_memory_cap_refuses_growing_commands_with_oom_and_still_deletes() {
        // 16 pushes of 16 MiB: past the 256 MiB cap with the items' overheads.
        let text = "# case: cap\n# topology: single\n\
            @0 EVAL \"local s=string.rep('x',2^24) for i=1,16 do redis.call('RPUSH','l',s) end return 1\" 0 -> (integer) 1\n\
            @0 SET k v -> (error) OOM command not allowed when used memory > 'maxmemory'.\n\
            @0 EVAL \"return redis.pcall('RPUSH','l','x')\" 0 -> (error) OOM command not allowed when used memory > 'maxmemory'.\n\
            @0 DEL l -> (integer) 1\n\
            @0 SET k v -> OK\n";
        let r = run_text(Path::new("t.txt"), text).unwrap();
        assert_eq!(r.cases[0].2, CaseResult::Passed, "{:?}", r.cases[0].2);
    }

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

    fn outcome(body: &str) -> CaseResult {
        let text = format!("# case: x\n# topology: single\n{body}\n");
        run_text(Path::new("t.txt"), &text).unwrap().cases[0]
            .2
            .clone()
    }

    #[test]
    fn a_blocked_command_is_answered_on_its_reply_line_and_not_before() {
        let served = "@0 [b] BLPOP l 0 -> (blocked)\n@10 LPUSH l x -> (integer) 1\n@10 [b] <- [\"l\", \"x\"]";
        assert_eq!(outcome(served), CaseResult::Passed);
        // A reply that comes before the step ahead of its line fails there.
        let early = "@0 [b] BLPOP l 0 -> (blocked)\n@10 LPUSH l x -> (integer) 1\n@10 LLEN l -> (integer) 0\n@10 [b] <- [\"l\", \"x\"]";
        assert!(matches!(outcome(early), CaseResult::Failed { line: 5, .. }));
        // Nothing by the reply line's time, or a command that does not block, fails.
        let late = "@0 [b] BLPOP l 0.5 -> (blocked)\n@300 [b] <- (nil)";
        assert!(
            matches!(outcome(late), CaseResult::Failed { line: 4, got, .. } if got.contains("no reply by @300"))
        );
        let at_once = "@0 RPUSH l a -> (integer) 1\n@0 [b] BLPOP l 0 -> (blocked)\n@1 [b] <- (nil)";
        assert!(matches!(
            outcome(at_once),
            CaseResult::Failed { line: 4, .. }
        ));
        // The timeout passes at the first cron tick after the deadline.
        let timed_out =
            "@0 [b] BLPOP l 0.5 -> (blocked)\n@599 LLEN l -> (integer) 0\n@600 [b] <- (nil)";
        assert_eq!(outcome(timed_out), CaseResult::Passed);
    }

    #[test]
    fn a_malformed_line_is_a_located_error() {
        let text = "# case: x\n# topology: single\n@0 SET k \"v -> OK\n";
        let e = run_text(Path::new("t.txt"), text).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
    }
}
