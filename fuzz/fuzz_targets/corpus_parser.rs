//! The conformance corpus parser on arbitrary bytes: `Ok` or `Err(line, message)`, never a
//! panic; what it accepts resolves and renders back without a panic either.
#![no_main]

use distlock_sim::conformance::corpus::{self, StepKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = corpus::parse(text) {
        for case in &c.cases {
            for step in &case.steps {
                if let StepKind::Command { argv, expect, .. } = &step.kind {
                    for a in argv {
                        let _ = corpus::resolve_arg(a, 1_700_000_000_000);
                    }
                    let _ = expect.render();
                }
            }
        }
    }
});
