use super::*;

fn report(text: &str) -> Report {
    judge(text.as_bytes()).unwrap()
}
fn verdicts(text: &str) -> Vec<Verdict> {
    report(text).findings.iter().map(|f| f.verdict).collect()
}
const HEAD: &str = r#"{"schema":"distlock-log/1","hosts":{"a":{"clock_uncertainty_ms":5},"b":{"clock_uncertainty_ms":5}}}"#;
fn acq(host: &str, client: &str, inv: u64, comp: u64, tok: &str, validity: u64) -> String {
    format!(
        r#"{{"op":"acquire","host":"{host}","client":"{client}","invoke_ms":{inv},"complete_ms":{comp},"result":"ok","token":"{tok}","validity_ms":{validity}}}"#
    )
}
fn write(host: &str, client: &str, inv: u64, comp: u64, fence: u64, result: &str) -> String {
    format!(
        r#"{{"op":"write","host":"{host}","client":"{client}","invoke_ms":{inv},"complete_ms":{comp},"result":"{result}","token":{fence}}}"#
    )
}
fn lines(ls: &[String]) -> String {
    let mut s = HEAD.to_string();
    for l in ls {
        s.push('\n');
        s.push_str(l);
    }
    s
}

#[test]
fn holdings_that_overlap_beyond_both_bounds_are_a_certain_violation() {
    // a believes 0..100, b believes 50..150: 50 ms shared, far more than 5+5.
    let v = verdicts(&lines(&[
        acq("a", "c1", 0, 1, "x", 100),
        acq("b", "c2", 49, 50, "y", 100),
    ]));
    assert_eq!(v[0], Verdict::Violated);
}

#[test]
fn holdings_that_overlap_only_within_the_bounds_are_only_possible() {
    // a believes until 100, b from 95: the 5 ms could be clock error (±5 each side).
    let v = verdicts(&lines(&[
        acq("a", "c1", 0, 1, "x", 100),
        acq("b", "c2", 94, 95, "y", 100),
    ]));
    assert_eq!(v[0], Verdict::Possible);
}

#[test]
fn holdings_further_apart_than_the_bounds_hold() {
    let v = verdicts(&lines(&[
        acq("a", "c1", 0, 1, "x", 100),
        acq("b", "c2", 110, 111, "y", 100),
    ]));
    assert_eq!(v[..2], [Verdict::Held; 2]);
    assert_eq!(v[2], Verdict::Unobserved);
}

#[test]
fn a_release_ends_the_belief_at_its_invocation() {
    let rel = r#"{"op":"release","host":"a","client":"c1","invoke_ms":40,"complete_ms":41,"result":"ok","token":"x"}"#;
    let v = verdicts(&lines(&[
        acq("a", "c1", 0, 1, "x", 100),
        rel.to_string(),
        acq("b", "c2", 60, 61, "y", 100),
    ]));
    assert_eq!(v[0], Verdict::Held);
}

#[test]
fn one_client_overlapping_itself_is_not_a_violation() {
    let v = verdicts(&lines(&[
        acq("a", "c1", 0, 1, "x", 100),
        acq("a", "c1", 50, 51, "y", 100),
    ]));
    assert_eq!(v[0], Verdict::Held);
}

#[test]
fn a_lower_token_written_surely_after_a_higher_one_is_a_certain_violation() {
    let v = verdicts(&lines(&[
        write("a", "c2", 100, 101, 34, "ok"),
        write("b", "c1", 200, 201, 33, "ok"),
    ]));
    assert_eq!(v[1], Verdict::Violated);
}

#[test]
fn a_lower_token_written_within_the_bounds_of_a_higher_one_is_only_possible() {
    let v = verdicts(&lines(&[
        write("a", "c2", 100, 101, 34, "ok"),
        write("b", "c1", 105, 106, 33, "ok"),
    ]));
    assert_eq!(v[1], Verdict::Possible);
}

#[test]
fn a_refused_stale_write_is_fencing_working_not_a_violation() {
    let v = verdicts(&lines(&[
        write("a", "c2", 100, 101, 34, "ok"),
        write("b", "c1", 200, 201, 33, "fail"),
    ]));
    assert_eq!(v[1], Verdict::Held);
}

#[test]
fn a_stale_write_of_unknown_outcome_is_only_possible() {
    let v = verdicts(&lines(&[
        write("a", "c2", 100, 101, 34, "ok"),
        write("b", "c1", 200, 201, 33, "unknown"),
    ]));
    assert_eq!(v[1], Verdict::Possible);
}

#[test]
fn tokens_written_in_increasing_order_hold() {
    let v = verdicts(&lines(&[
        write("a", "c1", 100, 101, 33, "ok"),
        write("b", "c2", 200, 201, 34, "ok"),
    ]));
    assert_eq!(v[1], Verdict::Held);
}

#[test]
fn a_release_that_removed_another_token_is_a_foreign_unlock() {
    let rel = r#"{"op":"release","host":"a","client":"c1","invoke_ms":40,"complete_ms":41,"result":"ok","token":"x","removed_token":"y"}"#;
    let v = verdicts(&lines(&[rel.to_string()]));
    assert_eq!(v[2], Verdict::Violated);
    let own = rel.replace(r#""removed_token":"y""#, r#""removed_token":"x""#);
    assert_eq!(verdicts(&lines(&[own]))[2], Verdict::Held);
}

#[test]
fn bad_lines_are_located_by_line_and_field() {
    let e = judge(
        lines(&[
            acq("a", "c1", 0, 1, "x", 100),
            acq("zz", "c1", 0, 1, "x", 1),
        ])
        .as_bytes(),
    )
    .unwrap_err();
    assert_eq!(e.line, 3);
    assert!(e.message.contains("field `host`"), "{}", e.message);
    let e = judge(format!("{HEAD}\n{{\"op\":\"acquire\"}}").as_bytes()).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.contains("missing field"), "{}", e.message);
    let e = judge(r#"{"schema":"distlock-log/9","hosts":{}}"#.as_bytes()).unwrap_err();
    assert!(e.message.contains("field `schema`"), "{}", e.message);
}

#[test]
fn an_overlong_line_is_refused_without_reading_it_whole() {
    let long = format!("{HEAD}\n{}\n", "x".repeat(MAX_LINE_BYTES * 4));
    let e = judge(long.as_bytes()).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.contains("longer than"));
}

// ---- stale_write, lost_update, and the hostile inputs of issue 26.6 ----

const ONE: &str = r#"{"schema":"distlock-log/1","hosts":{"a":{"clock_uncertainty_ms":1}}}"#;
fn with(head: &str, ls: &[String]) -> String {
    let mut s = head.to_string();
    for l in ls {
        s.push('\n');
        s.push_str(l);
    }
    s
}
fn ev(op: &str, client: &str, inv: f64, comp: f64, result: &str, extra: &str) -> String {
    format!(
        r#"{{"op":"{op}","host":"a","client":"{client}","invoke_ms":{inv},"complete_ms":{comp},"result":"{result}"{extra}}}"#
    )
}
fn find(text: &str, property: &str) -> Finding {
    report(text)
        .findings
        .into_iter()
        .find(|f| f.property == property)
        .unwrap()
}
fn rmw(client: &str, inv: f64, read: u64, wrote: u64) -> String {
    ev(
        "write",
        client,
        inv,
        inv + 1.0,
        "ok",
        &format!(r#","token":null,"read_version":{read},"wrote_version":{wrote}"#),
    )
}

#[test]
fn a_write_begun_after_its_writers_validity_ran_out_is_a_certain_stale_write() {
    // Validity 100 ms from the invoke at 0; the write at 150 is 50 ms past it (±1 each).
    let f = find(
        &with(
            ONE,
            &[
                ev(
                    "acquire",
                    "c1",
                    0.0,
                    1.0,
                    "ok",
                    r#","token":"x","validity_ms":100"#,
                ),
                ev("write", "c1", 150.0, 151.0, "ok", r#","token":null"#),
            ],
        ),
        "stale_write",
    );
    assert_eq!(f.verdict, Verdict::Violated, "{}", f.message);
    assert_eq!(f.lines, vec![2, 3]);
    assert!(
        f.message.contains("began 50ms after its holding"),
        "{}",
        f.message
    );
}

#[test]
fn a_write_within_the_bounds_of_its_writers_expiry_is_only_a_possible_stale_write() {
    let f = find(
        &with(
            ONE,
            &[
                ev(
                    "acquire",
                    "c1",
                    0.0,
                    1.0,
                    "ok",
                    r#","token":"x","validity_ms":100"#,
                ),
                ev("write", "c1", 98.5, 99.0, "ok", r#","token":null"#),
            ],
        ),
        "stale_write",
    );
    assert_eq!(f.verdict, Verdict::Possible, "{}", f.message);
}

#[test]
fn a_write_after_its_writers_release_is_a_certain_stale_write_by_program_order() {
    let f = find(
        &with(
            ONE,
            &[
                ev("acquire", "c1", 0.0, 1.0, "ok", r#","token":"x""#),
                ev("release", "c1", 10.0, 10.1, "ok", r#","token":"x""#),
                ev("write", "c1", 10.2, 10.3, "ok", r#","token":null"#),
            ],
        ),
        "stale_write",
    );
    assert_eq!(f.verdict, Verdict::Violated, "{}", f.message);
    assert!(f.message.contains("after its release"), "{}", f.message);
}

#[test]
fn a_refused_or_unknown_write_after_the_holding_is_not_certain() {
    let log = |result: &str| {
        with(
            ONE,
            &[
                ev("acquire", "c1", 0.0, 1.0, "ok", r#","token":"x""#),
                ev("release", "c1", 10.0, 10.1, "ok", r#","token":"x""#),
                ev("write", "c1", 20.0, 21.0, result, r#","token":null"#),
            ],
        )
    };
    assert_eq!(
        find(&log("fail"), "stale_write").verdict,
        Verdict::Unobserved
    );
    assert_eq!(
        find(&log("unknown"), "stale_write").verdict,
        Verdict::Possible
    );
}

#[test]
fn a_write_inside_another_clients_holding_is_a_certain_stale_write() {
    // c1's own belief never ends (no validity), so only c2's holding makes it stale.
    let f = find(
        &with(
            ONE,
            &[
                ev(
                    "acquire",
                    "c2",
                    0.0,
                    1.0,
                    "ok",
                    r#","token":"y","validity_ms":500"#,
                ),
                ev("acquire", "c1", 600.0, 601.0, "ok", r#","token":"x""#),
                ev("write", "c1", 700.0, 701.0, "ok", r#","token":null"#),
                ev(
                    "acquire",
                    "c2",
                    650.0,
                    651.0,
                    "ok",
                    r#","token":"z","validity_ms":500"#,
                ),
            ],
        ),
        "stale_write",
    );
    assert_eq!(f.verdict, Verdict::Violated, "{}", f.message);
    assert!(
        f.message.contains("landed inside c2's holding"),
        "{}",
        f.message
    );
    assert_eq!(f.lines, vec![5, 4]);
}

#[test]
fn writes_by_clients_that_make_no_lock_calls_leave_stale_write_unobserved() {
    let f = find(&with(ONE, &[rmw("c1", 0.0, 0, 1)]), "stale_write");
    assert_eq!(f.verdict, Verdict::Unobserved);
}

#[test]
fn validity_left_counts_from_the_completion_and_validity_from_the_invoke() {
    // Invoke 0, complete 50: validity 100 ends at 100, validity left 100 ends at 150.
    let log = |validity: &str| {
        with(
            ONE,
            &[
                ev(
                    "acquire",
                    "c1",
                    0.0,
                    50.0,
                    "ok",
                    &format!(r#","token":"x",{validity}"#),
                ),
                ev("write", "c1", 120.0, 121.0, "ok", r#","token":null"#),
            ],
        )
    };
    assert_eq!(
        find(&log(r#""validity_ms":100"#), "stale_write").verdict,
        Verdict::Violated
    );
    assert_eq!(
        find(&log(r#""validity_left_ms":100"#), "stale_write").verdict,
        Verdict::Held
    );
    let both = log(r#""validity_ms":100,"validity_left_ms":100"#);
    let e = judge(both.as_bytes()).unwrap_err();
    assert!(
        e.message.starts_with("field `validity_left_ms`"),
        "{}",
        e.message
    );
}

#[test]
fn two_applied_writes_that_made_the_same_version_are_a_certain_lost_update() {
    let f = find(
        &with(ONE, &[rmw("c1", 0.0, 0, 1), rmw("c2", 10.0, 0, 1)]),
        "lost_update",
    );
    assert_eq!(f.verdict, Verdict::Violated, "{}", f.message);
    assert_eq!(f.lines, vec![2, 3]);
}

#[test]
fn a_write_without_read_version_is_based_on_what_its_client_last_read() {
    let read = |c: &str, inv: f64, v: u64| {
        ev(
            "read",
            c,
            inv,
            inv + 1.0,
            "ok",
            &format!(r#","token":null,"read_version":{v}"#),
        )
    };
    let write = |c: &str, inv: f64| ev("write", c, inv, inv + 1.0, "ok", r#","token":null"#);
    // c1 and c2 both read v0, then both write: each makes v1.
    let lost = with(
        ONE,
        &[
            read("c1", 0.0, 0),
            read("c2", 2.0, 0),
            write("c1", 4.0),
            write("c2", 6.0),
        ],
    );
    assert_eq!(find(&lost, "lost_update").verdict, Verdict::Violated);
    // In turn: c2 reads what c1 wrote.
    let serial = with(
        ONE,
        &[
            read("c1", 0.0, 0),
            write("c1", 4.0),
            read("c2", 10.0, 1),
            write("c2", 12.0),
        ],
    );
    assert_eq!(find(&serial, "lost_update").verdict, Verdict::Held);
}

#[test]
fn a_write_that_made_more_than_one_above_its_base_overwrote_updates_between() {
    // The resource's own counter says v3 after a write based on v1: v2 was overwritten.
    let f = find(&with(ONE, &[rmw("c1", 0.0, 1, 3)]), "lost_update");
    assert_eq!(f.verdict, Verdict::Violated, "{}", f.message);
    assert!(f.message.contains("1 other update(s)"), "{}", f.message);
}

#[test]
fn a_write_applied_after_one_that_made_a_higher_version_is_a_lost_update() {
    // v5 made at 0..1; v2 made at 100: certainly after. Within 1 ms: only possible.
    let late = with(ONE, &[rmw("c1", 0.0, 4, 5), rmw("c2", 100.0, 1, 2)]);
    assert_eq!(find(&late, "lost_update").verdict, Verdict::Violated);
    let close = with(ONE, &[rmw("c1", 0.0, 4, 5), rmw("c2", 1.5, 1, 2)]);
    assert_eq!(find(&close, "lost_update").verdict, Verdict::Possible);
}

#[test]
fn a_read_lower_than_a_version_certainly_written_before_it_is_a_lost_update() {
    let read = ev(
        "read",
        "c2",
        50.0,
        51.0,
        "ok",
        r#","token":null,"read_version":1"#,
    );
    let f = find(&with(ONE, &[rmw("c1", 0.0, 1, 2), read]), "lost_update");
    assert_eq!(f.verdict, Verdict::Violated, "{}", f.message);
    assert!(f.message.contains("went back"), "{}", f.message);
}

#[test]
fn a_chain_of_versions_in_turn_holds_and_unversioned_writes_are_unobserved() {
    let chain = with(
        ONE,
        &[
            rmw("c1", 0.0, 0, 1),
            rmw("c2", 10.0, 1, 2),
            rmw("c1", 20.0, 2, 3),
        ],
    );
    assert_eq!(find(&chain, "lost_update").verdict, Verdict::Held);
    let plain = with(ONE, &[ev("write", "c1", 0.0, 1.0, "ok", r#","token":3"#)]);
    assert_eq!(find(&plain, "lost_update").verdict, Verdict::Unobserved);
}

#[test]
fn times_at_the_accepted_limit_are_judged_without_overflow() {
    // Issue 26.6: both hold for 1e15 ms from 8.9e15 ms: a certain overlap, once "held".
    let acq = |c: &str, t: f64, tok: &str, v: &str| {
        ev(
            "acquire",
            c,
            t,
            t + 1.0,
            "ok",
            &format!(r#","token":"{tok}","validity_ms":{v}"#),
        )
    };
    let far = with(
        ONE,
        &[
            acq("c1", 8.9e15, "x", "1e15"),
            acq("c2", 8.9e15 + 10.0, "y", "1e15"),
        ],
    );
    assert_eq!(find(&far, "mutual_exclusion").verdict, Verdict::Violated);
    // Two empty holdings under a 9e15 ms bound: possible (the bound is huge), not certain.
    let huge = r#"{"schema":"distlock-log/1","hosts":{"a":{"clock_uncertainty_ms":9e15}}}"#;
    let empty = with(
        huge,
        &[acq("c1", 1e15, "x", "0"), acq("c2", 1e15 + 10.0, "y", "0")],
    );
    assert_eq!(find(&empty, "mutual_exclusion").verdict, Verdict::Possible);
    // A span of 1.6e16 ms is printed as such (its nanoseconds do not fit a u64).
    let long = with(
        ONE,
        &[
            ev("acquire", "c1", -8e15, -8e15, "ok", r#","token":"x""#),
            ev("release", "c1", 8e15, 8e15, "ok", r#","token":"x""#),
        ],
    );
    assert!(
        report(&long).timeline().contains("0us .. 16000000000000s"),
        "{}",
        report(&long).timeline()
    );
    // Beyond the limit: a located range error.
    let e = judge(with(ONE, &[acq("c1", 9.1e15, "x", "1")]).as_bytes()).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.starts_with("field `invoke_ms`"), "{}", e.message);
}

#[test]
fn a_host_declared_twice_is_refused_at_the_header() {
    let twice = r#"{"schema":"distlock-log/1","hosts":{"a":{"clock_uncertainty_ms":50},"a":{"clock_uncertainty_ms":0}}}"#;
    let e = judge(twice.as_bytes()).unwrap_err();
    assert_eq!((e.line, e.column), (1, 1));
    assert_eq!(e.message, r#"field `hosts`: host "a" declared twice"#);
    let dup = ev(
        "acquire",
        "c1",
        0.0,
        1.0,
        "ok",
        r#","token":"x","client":"c2""#,
    );
    let e = judge(with(ONE, &[dup]).as_bytes()).unwrap_err();
    assert_eq!(e.message, "field `client`: given twice");
}

#[test]
fn a_call_begun_before_its_clients_previous_call_completed_is_a_located_error() {
    // Issue 26.6: a release (at 100) written before its acquire (at 0).
    let e = judge(
        with(
            ONE,
            &[
                ev("release", "c1", 100.0, 101.0, "ok", r#","token":"x""#),
                ev("acquire", "c1", 0.0, 1.0, "ok", r#","token":"x""#),
            ],
        )
        .as_bytes(),
    )
    .unwrap_err();
    assert_eq!(e.line, 3);
    assert!(
        e.message.contains("before its previous call (line 2)"),
        "{}",
        e.message
    );
    // Overlap within both bounds (±1 ms each) is clock error, not disorder.
    let ok = with(
        ONE,
        &[
            ev("acquire", "c1", 0.0, 10.0, "ok", r#","token":"x""#),
            ev("release", "c1", 8.5, 9.0, "ok", r#","token":"x""#),
        ],
    );
    assert!(judge(ok.as_bytes()).is_ok());
}

#[test]
fn a_release_that_matches_no_open_holding_is_judged_with_a_warning() {
    let r = report(&with(
        ONE,
        &[
            ev("release", "c1", 100.0, 101.0, "ok", r#","token":"x""#),
            ev("acquire", "c1", 200.0, 201.0, "ok", r#","token":"x""#),
        ],
    ));
    assert_eq!(r.warnings_total, 1);
    assert_eq!(r.warnings[0].line, 2);
    assert!(
        r.warnings[0].message.contains("matches no open holding"),
        "{:?}",
        r.warnings
    );
}

#[test]
fn error_texts_name_the_field_without_serdes_position_suffix() {
    let e = judge(
        with(
            ONE,
            &[ev(
                "acquire",
                "c1",
                0.0,
                1.0,
                "ok",
                r#","token":"x","valdity_ms":1"#,
            )],
        )
        .as_bytes(),
    )
    .unwrap_err();
    assert_eq!((e.line, e.column), (2, 1));
    assert!(
        e.message
            .starts_with("field `valdity_ms`: unknown in an event"),
        "{}",
        e.message
    );
    assert!(!e.message.contains("at line"), "{}", e.message);
    let e = judge(
        with(
            ONE,
            &[ev(
                "acquire",
                "c1",
                0.0,
                1.0,
                "ok",
                r#","token":"x","validity_ms":"1s""#,
            )],
        )
        .as_bytes(),
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "field `validity_ms`: expected a number, not a string"
    );
    // A syntax error keeps its column in the log's line, and no suffix.
    let e = judge(format!("{ONE}\n{{\"op\": }}").as_bytes()).unwrap_err();
    assert_eq!((e.line, e.column), (2, 8));
    assert!(
        e.message.starts_with("not JSON: ") && !e.message.contains("at line"),
        "{}",
        e.message
    );
}

#[test]
fn distinct_names_past_the_cap_are_a_located_error() {
    let mut names = Names {
        cap_bytes: 3 * (4 + NAME_OVERHEAD_BYTES),
        ..Names::default()
    };
    for (i, n) in ["aaaa", "bbbb", "cccc", "aaaa"].iter().enumerate() {
        assert!(names.id(i + 1, "client", n).is_ok());
    }
    let e = names.id(9, "lock", "dddd").unwrap_err();
    assert_eq!(e.line, 9);
    assert!(
        e.message.starts_with("field `lock`: more than"),
        "{}",
        e.message
    );
}

#[test]
fn long_tokens_are_shown_cut_and_matched_whole() {
    let head = "t".repeat(100);
    let (x, y) = (format!("{head}x"), format!("{head}y"));
    let r = report(&with(
        ONE,
        &[
            ev(
                "acquire",
                "c1",
                0.0,
                1.0,
                "ok",
                &format!(r#","token":"{x}""#),
            ),
            // Same first 100 bytes, another token: it does not end c1's holding.
            ev(
                "release",
                "c1",
                5.0,
                6.0,
                "ok",
                &format!(r#","token":"{y}""#),
            ),
            ev("acquire", "c2", 10.0, 11.0, "ok", r#","token":"z""#),
            ev("release", "c2", 50.0, 51.0, "ok", r#","token":"z""#),
        ],
    ));
    assert_eq!(r.findings[0].verdict, Verdict::Violated);
    assert_eq!(r.warnings_total, 1);
    assert!(r.timeline().contains("…(101 bytes)"), "{}", r.timeline());
}
