//! check-log's reader and checkers on arbitrary bytes (`check::recorded::judge`): a report
//! or a located error, never a panic; a report has one finding per property, witness lines
//! inside the log, and a timeline that renders; an error carries no serde position.
#![no_main]

use distlock_sim::check::recorded;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match recorded::judge(data) {
        Ok(r) => {
            let lines = data.split(|&b| b == b'\n').count();
            assert_eq!(r.findings.len(), 5);
            for f in &r.findings {
                assert!(f.lines.iter().all(|&l| l >= 1 && l <= lines), "{f:?}");
            }
            assert!(matches!(r.exit_code(), 0 | 1 | 3));
            let _ = r.timeline();
        }
        Err(e) => {
            assert!(e.line >= 1 && e.column >= 1, "{e:?}");
            assert!(!serde_suffix(&e.message), "{e:?}");
        }
    }
});

/// Whether `m` ends as serde_json's errors do, "... at line N column M" (the log's own text
/// quoted in a message may say "at line" anywhere).
fn serde_suffix(m: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    m.rfind(" at line ").is_some_and(|i| {
        m[i + " at line ".len()..]
            .split_once(" column ")
            .is_some_and(|(l, c)| digits(l) && digits(c))
    })
}
