//! The model answers like Redis 7.0.15: every recorded single-node case passes, and the
//! project's copy of the corpus is the recorded data, byte for byte.

use std::path::{Path, PathBuf};

use distlock_sim::conformance::{CaseResult, run_dir};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/redis7")
}

#[test]
fn every_single_node_case_of_the_redis7_corpus_passes() {
    let report = run_dir(&corpus_dir()).expect("corpus parses");
    let failures = report.render();
    assert_eq!(report.failed(), 0, "{failures}");
    assert!(report.passed() >= 150, "{failures}");
    // Master-replica cases run too (a master and a replica in virtual time): nothing skipped.
    assert_eq!(report.skipped(), 0, "{failures}");
    let repl_passed = report
        .files
        .iter()
        .flat_map(|f| &f.cases)
        .filter(|(name, _, r)| name.starts_with("repl-") && *r == CaseResult::Passed)
        .count();
    assert_eq!(repl_passed, 15, "{failures}");
}

/// Cases recorded for the commands the lock libraries added (hashes, GETDEL/GETEX, PUBLISH,
/// argument errors) and the differential test's recording, from Redis 7.0.15 too; see its
/// README.
fn recorded_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/recorded")
}

#[test]
fn every_case_recorded_for_the_library_commands_passes() {
    let report = run_dir(&recorded_dir()).expect("corpus parses");
    let failures = report.render();
    assert_eq!(report.failed(), 0, "{failures}");
    assert_eq!(report.skipped(), 0, "{failures}");
    // Every file replays, and none is empty: a directory that stopped being read would pass.
    assert_eq!(report.files.len(), 25, "{failures}");
    // 43 library commands, 5 shebang, 8 differential, 7 SELECT, 15 transactions, 14 Lua
    // libraries (cjson, cmsgpack, bit), 3 of their nesting limits, 2 pub/sub, 1 Redisson
    // client; issue 27's commands: 6 strings (STRLEN/APPEND/SETRANGE, OBJECT ENCODING,
    // ECHO), 6 keys (RENAME/RENAMENX/COPY, RANDOMKEY, WATCH), 5 hashes and lists, 5
    // server and scripts (READONLY/READWRITE, AUTH, ROLE in scripts, MULTI, SELECT's
    // range), 4 master + replica, 13 BLPOP (11 on one node, 2 master + replica), 6
    // HINCRBYFLOAT (1 master + replica), 7 MOVE/SWAPDB and EXEC/SCRIPT in subscribed mode
    // and MULTI (1 master + replica), 5 connection set-up (HELLO, CLIENT, ECHO, INFO; 1
    // master + replica); 10 functions (FUNCTION LOAD/LIST/DELETE/FLUSH, FCALL/FCALL_RO; 2
    // master + replica); 4 redis.setresp(3) in scripts; 5 Lua's struct library.
    assert_eq!(
        report.passed(),
        43 + 5 + 8 + 7 + 15 + 14 + 3 + 2 + 1 + 6 + 6 + 5 + 5 + 4 + 13 + 6 + 7 + 5 + 10 + 4 + 5,
        "{failures}"
    );
}

#[test]
fn the_corpus_copy_is_byte_identical_to_the_shared_recording() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/redis7");
    if !shared.is_dir() {
        // A fresh clone without ../shared: the copy in tests/ is all there is.
        return;
    }
    let mut names: Vec<_> = std::fs::read_dir(&shared)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    for name in names {
        let theirs = std::fs::read(shared.join(&name)).unwrap();
        let ours = std::fs::read(corpus_dir().join(&name)).unwrap_or_else(|_| {
            panic!("{name:?} is in ../shared/conformance/redis7 but not in tests/: copy it")
        });
        assert!(
            theirs == ours,
            "{name:?} differs from ../shared/conformance/redis7: copy it again"
        );
    }
}

/// Cases the differential test (tests/differential.rs) recorded from a real redis-server:
/// replayed offline here, so a clone without a server still tests them.
#[test]
fn every_case_recorded_from_redis_server_by_the_differential_test_passes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/recorded");
    let report = run_dir(&dir).expect("recorded corpus parses");
    let failures = report.render();
    assert_eq!(report.failed(), 0, "{failures}");
    assert_eq!(report.skipped(), 0, "{failures}");
    assert!(report.passed() >= 8, "{failures}");
}
