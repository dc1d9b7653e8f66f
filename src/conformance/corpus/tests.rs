use super::*;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/redis7");
const START: i64 = 1_700_000_000_000;

fn read(file: &str) -> Option<String> {
    match std::fs::read_to_string(format!("{DIR}/{file}")) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("skipping {file}: {e}");
            None
        }
    }
}

fn single(body: &str) -> String {
    format!("# case: t\n# topology: single\n{body}\n")
}

fn mr(body: &str) -> String {
    format!("# case: t\n# topology: master-replica\n{body}\n")
}

/// The one step of a one-step single-topology case.
fn step1(line: &str) -> StepKind {
    let corpus = parse(&single(line)).unwrap_or_else(|e| panic!("{line}: {e}"));
    corpus.cases[0].steps[0].kind.clone()
}

fn expect_of(reply: &str) -> Expect {
    match step1(&format!("@0 GET k -> {reply}")) {
        StepKind::Command { expect, .. } => expect,
        other => panic!("not a command: {other:?}"),
    }
}

fn argv_of(args: &str) -> Vec<Arg> {
    match step1(&format!("@0 {args} -> OK")) {
        StepKind::Command { argv, .. } => argv,
        other => panic!("not a command: {other:?}"),
    }
}

fn bytes(argv: &[Arg]) -> Vec<Vec<u8>> {
    argv.iter().map(|a| resolve_arg(a, START)).collect()
}

fn err_of(text: &str) -> ParseError {
    match parse(text) {
        Ok(c) => panic!("expected an error for {text:?}, got {c:?}"),
        Err(e) => e,
    }
}

fn assert_err(text: &str, line: usize, needle: &str) {
    let e = err_of(text);
    assert_eq!(e.line, line, "{text:?} -> {e}");
    assert!(
        e.message.contains(needle),
        "{text:?}: message {:?} lacks {needle:?}",
        e.message
    );
    assert!(e.to_string().starts_with(&format!("line {line}: ")));
}

#[test]
fn corpus_files_parse_with_readme_counts() {
    let files = [
        ("strings-and-set.txt", 34, Topology::Single),
        ("expire.txt", 25, Topology::Single),
        ("scripts.txt", 16, Topology::Single),
        ("replication.txt", 15, Topology::MasterReplica),
        ("random.txt", 60, Topology::Single),
    ];
    for (file, n_cases, topology) in files {
        let Some(text) = read(file) else { continue };
        let corpus = parse(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(corpus.cases.len(), n_cases, "{file}");
        let at_lines = text
            .lines()
            .filter(|l| l.trim_start().starts_with('@'))
            .count();
        let steps: usize = corpus.cases.iter().map(|c| c.steps.len()).sum();
        assert_eq!(steps, at_lines, "{file}");
        let lines: Vec<&str> = text.lines().collect();
        for case in &corpus.cases {
            assert_eq!(case.topology, topology, "{file} {}", case.name);
            assert_eq!(lines[case.line - 1], format!("# case: {}", case.name));
            for step in &case.steps {
                let src = lines[step.line - 1];
                assert!(src.starts_with(&format!("@{} ", step.at_ms)), "{src}");
                if let StepKind::Command { node, expect, .. } = &step.kind {
                    assert_eq!(node.is_some(), topology == Topology::MasterReplica);
                    // Rendering gives back the file's reply text.
                    let (_, reply) = src.split_once(" -> ").expect("reply");
                    assert_eq!(expect.render(), reply.trim(), "{file}:{}", step.line);
                    assert_eq!(parse_reply(&expect.render()).as_ref(), Ok(expect));
                }
            }
        }
    }
}

#[test]
fn corpus_spot_checks() {
    if let Some(text) = read("strings-and-set.txt") {
        let corpus = parse(&text).unwrap();
        let c0 = &corpus.cases[0];
        assert_eq!((c0.name.as_str(), c0.line), ("set-get-basic", 23));
        assert_eq!(c0.steps.len(), 10);
        let StepKind::Command {
            argv, expect, node, ..
        } = &c0.steps[5].kind
        else {
            panic!()
        };
        assert_eq!(*node, None);
        assert_eq!(
            bytes(argv),
            vec![
                b"SET".to_vec(),
                b"k with space".to_vec(),
                br#"value with "quotes" and \ backslash"#.to_vec()
            ]
        );
        assert_eq!(*expect, Expect::Status("OK".into()));
        let c1 = &corpus.cases[1];
        let StepKind::Command { expect, .. } = &c1.steps[1].kind else {
            panic!()
        };
        assert_eq!(*expect, Expect::Bulk(b"\x00\x01\xff\r\n".to_vec()));
        let exat = corpus.cases.iter().find(|c| c.name == "set-exat").unwrap();
        let StepKind::Command { argv, .. } = &exat.steps[0].kind else {
            panic!()
        };
        assert_eq!(argv[4], Arg::UnixS(1));
        let StepKind::Command { expect, .. } = &exat.steps[3].kind else {
            panic!()
        };
        assert_eq!(*expect, Expect::Int(IntPattern::ExactUnixMs(1000)));
    }
    if let Some(text) = read("replication.txt") {
        let corpus = parse(&text).unwrap();
        let c0 = &corpus.cases[0];
        assert_eq!(c0.steps[0].kind, StepKind::Link);
        assert_eq!(c0.steps[1].kind, StepKind::WaitSync);
        let StepKind::Command {
            node, argv, expect, ..
        } = &c0.steps[2].kind
        else {
            panic!()
        };
        assert_eq!(*node, Some(NodeRole::Master));
        assert_eq!(argv[0], Arg::Bytes(b"SET".to_vec()));
        assert_eq!(*expect, Expect::Status("OK".into()));
        let StepKind::Command { node, .. } = &c0.steps[4].kind else {
            panic!()
        };
        assert_eq!(*node, Some(NodeRole::Replica));
    }
    if let Some(text) = read("scripts.txt") {
        let corpus = parse(&text).unwrap();
        let case = corpus
            .cases
            .iter()
            .find(|c| c.name == "script-return-types")
            .unwrap();
        let StepKind::Command { expect, .. } = &case.steps[7].kind else {
            panic!()
        };
        let want = Reply::Array(vec![
            Reply::Int(1),
            Reply::Bulk(b"two".to_vec()),
            Reply::Array(vec![Reply::Int(3), Reply::Bulk(b"four".to_vec())]),
        ]);
        assert!(expect.matches(&want, START));
    }
}

#[test]
fn an_error_inside_an_array_may_hold_commas_that_do_not_start_a_reply() {
    let got = expect_of(
        "[(error) ERR NX and XX, GT or LT options at the same time are not compatible, OK, \
         (error) ERR x script: ab12, on @user_script:1., (integer) 3, (error) E, \"s\"]",
    );
    assert_eq!(
        got,
        Expect::Array(vec![
            Expect::Error(
                "ERR NX and XX, GT or LT options at the same time are not compatible".into()
            ),
            Expect::Status("OK".into()),
            Expect::Error("ERR x script: ab12, on @user_script:1.".into()),
            Expect::Int(IntPattern::Exact(3)),
            Expect::Error("E".into()),
            Expect::Bulk(b"s".to_vec()),
        ])
    );
}

#[test]
fn an_error_reply_keeps_its_trailing_spaces() {
    let text = "ERR unknown command 'FOO', with args beginning with: 'a' ";
    assert_eq!(
        expect_of(&format!("(error) {text}")),
        Expect::Error(text.to_string())
    );
    // Two trailing spaces and a CRLF line end: the spaces stay, the CR goes.
    let corpus = parse("# case: t\n# topology: single\n@0 FOO -> (error) x  \r\n").unwrap();
    match &corpus.cases[0].steps[0].kind {
        StepKind::Command { expect, .. } => assert_eq!(*expect, Expect::Error("x  ".into())),
        other => panic!("not a command: {other:?}"),
    }
    // Other reply forms ignore trailing layout, and an error inside an array ends at its
    // delimiter.
    assert_eq!(
        expect_of("(integer) 3   "),
        Expect::Int(IntPattern::Exact(3))
    );
    assert_eq!(
        expect_of("[(error) e , (integer) 1]  "),
        Expect::Array(vec![
            Expect::Error("e".into()),
            Expect::Int(IntPattern::Exact(1))
        ])
    );
    // A line of spaces alone is still a blank line.
    assert!(parse("# case: t\n# topology: single\n   \n@0 PING -> PONG\n").is_ok());
}

#[test]
fn reply_forms() {
    assert_eq!(expect_of("OK"), Expect::Status("OK".into()));
    assert_eq!(expect_of("PONG"), Expect::Status("PONG".into()));
    assert_eq!(expect_of("none"), Expect::Status("none".into()));
    assert_eq!(expect_of("(nil)"), Expect::Nil);
    assert_eq!(
        expect_of("(integer) -2"),
        Expect::Int(IntPattern::Exact(-2))
    );
    assert_eq!(
        expect_of("(integer) 9223372036854775807"),
        Expect::Int(IntPattern::Exact(i64::MAX))
    );
    assert_eq!(
        expect_of("(integer) -9223372036854775808"),
        Expect::Int(IntPattern::Exact(i64::MIN))
    );
    assert_eq!(
        expect_of("(integer) {unix_ms+300}"),
        Expect::Int(IntPattern::ExactUnixMs(300))
    );
    assert_eq!(
        expect_of("(integer) {unix_s}"),
        Expect::Int(IntPattern::ExactUnixS(0))
    );
    assert_eq!(expect_of("~100"), Expect::Int(IntPattern::Approx(100)));
    assert_eq!(
        expect_of("~{unix_ms+500}"),
        Expect::Int(IntPattern::ApproxUnixMs(500))
    );
    assert_eq!(
        expect_of("~{unix_s-2}"),
        Expect::Int(IntPattern::ApproxUnixS(-2))
    );
    assert_eq!(expect_of("\"\""), Expect::Bulk(vec![]));
    assert_eq!(
        expect_of(r#""a -> \"b\" \\ \x00\xFF""#),
        Expect::Bulk(b"a -> \"b\" \\ \x00\xff".to_vec())
    );
    assert_eq!(
        expect_of("(error) ERR syntax error   "),
        Expect::Error("ERR syntax error   ".into())
    );
    assert_eq!(
        expect_of("(error) ERR a, b [c] -> \"d\""),
        Expect::Error("ERR a, b [c] -> \"d\"".into())
    );
    assert_eq!(expect_of("[]"), Expect::Array(vec![]));
    assert_eq!(
        expect_of(r#"[(integer) 1, "two", [(integer) 3, "four"], (nil), OK, [], ~5]"#),
        Expect::Array(vec![
            Expect::Int(IntPattern::Exact(1)),
            Expect::Bulk(b"two".to_vec()),
            Expect::Array(vec![
                Expect::Int(IntPattern::Exact(3)),
                Expect::Bulk(b"four".to_vec())
            ]),
            Expect::Nil,
            Expect::Status("OK".into()),
            Expect::Array(vec![]),
            Expect::Int(IntPattern::Approx(5)),
        ])
    );
    assert_eq!(
        expect_of("[(error) ERR x, \"y\"]"),
        Expect::Array(vec![
            Expect::Error("ERR x".into()),
            Expect::Bulk(b"y".to_vec())
        ])
    );
    assert_eq!(
        expect_of(r#"["keep"]"#),
        Expect::Array(vec![Expect::Bulk(b"keep".to_vec())])
    );
    // Render round trip.
    for text in [
        "OK",
        "(nil)",
        "(integer) -7",
        "(integer) {unix_ms}",
        "(integer) {unix_ms-1000}",
        "(integer) {unix_s+1}",
        "~300",
        "~{unix_ms+500}",
        r#""caf\xc3\xa9\r\n\"\\""#,
        "(error) NOSCRIPT No matching script. Please use EVAL.",
        r#"[(integer) 1, "two", [(integer) 3, "four"]]"#,
        "[]",
    ] {
        assert_eq!(expect_of(text).render(), text);
    }
}

#[test]
fn matching() {
    let ok = expect_of("OK");
    assert!(ok.matches(&Reply::Ok, START));
    assert!(ok.matches(&Reply::Status("OK".into()), START));
    assert!(!ok.matches(&Reply::Bulk(b"OK".to_vec()), START));
    assert!(!expect_of("PONG").matches(&Reply::Ok, START));
    assert!(expect_of("(nil)").matches(&Reply::Nil, START));
    assert!(!expect_of("(nil)").matches(&Reply::Array(vec![]), START));
    assert!(expect_of("\"v\"").matches(&Reply::Bulk(b"v".to_vec()), START));
    assert!(!expect_of("\"v\"").matches(&Reply::Status("v".into()), START));
    assert!(expect_of("(error) ERR syntax error").matches(&Reply::err("ERR syntax error"), START));
    assert!(!expect_of("(error) ERR syntax error").matches(&Reply::err("ERR syntax"), START));
    assert!(expect_of("(integer) 3").matches(&Reply::Int(3), START));
    assert!(!expect_of("(integer) 3").matches(&Reply::Int(4), START));
    assert!(!expect_of("(integer) 3").matches(&Reply::Bulk(b"3".to_vec()), START));
    let arr = expect_of("[(integer) 1, ~100]");
    assert!(arr.matches(&Reply::Array(vec![Reply::Int(1), Reply::Int(120)]), START));
    assert!(!arr.matches(&Reply::Array(vec![Reply::Int(1), Reply::Int(131)]), START));
    assert!(!arr.matches(&Reply::Array(vec![Reply::Int(1)]), START));
    assert!(!arr.matches(
        &Reply::Array(vec![Reply::Int(1), Reply::Int(100), Reply::Nil]),
        START
    ));
}

#[test]
fn approx_is_within_30_inclusive() {
    let e = expect_of("~100");
    for (got, ok) in [
        (70, true),
        (100, true),
        (130, true),
        (69, false),
        (131, false),
        (-100, false),
    ] {
        assert_eq!(e.matches(&Reply::Int(got), START), ok, "~100 vs {got}");
    }
    let e = expect_of("~{unix_ms+500}");
    let at = START + 500;
    for (got, ok) in [
        (at - 30, true),
        (at + 30, true),
        (at - 31, false),
        (at + 31, false),
    ] {
        assert_eq!(e.matches(&Reply::Int(got), START), ok, "{got}");
    }
    // No overflow at the extremes.
    assert!(!IntPattern::Approx(i64::MAX).matches(i64::MIN, START));
    assert!(IntPattern::Approx(i64::MAX).matches(i64::MAX - 30, START));
    assert!(IntPattern::ApproxUnixMs(i64::MAX).matches(i64::MAX, START));
}

#[test]
fn placeholders() {
    let argv = argv_of(
        "X {unix_ms} {unix_ms+300} {unix_ms-1000} {unix_s} {unix_s+10} {unix_s-10} \"{unix_ms}\" {user}:1 '{unix_s}'",
    );
    assert_eq!(
        argv[1..7],
        [
            Arg::UnixMs(0),
            Arg::UnixMs(300),
            Arg::UnixMs(-1000),
            Arg::UnixS(0),
            Arg::UnixS(10),
            Arg::UnixS(-10)
        ]
    );
    let want: Vec<&[u8]> = vec![
        b"X",
        b"1700000000000",
        b"1700000000300",
        b"1699999999000",
        b"1700000000",
        b"1700000010",
        b"1699999990",
        b"{unix_ms}",
        b"{user}:1",
        b"{unix_s}",
    ];
    assert_eq!(bytes(&argv), want);
    assert!(IntPattern::ExactUnixS(1).matches(1_700_000_001, START));
    assert!(IntPattern::ExactUnixMs(-5).matches(START - 5, START));
    assert!(!IntPattern::ExactUnixMs(-5).matches(START - 4, START));
    assert_eq!(Arg::UnixMs(-5).to_string(), "{unix_ms-5}");
    assert_eq!(Arg::UnixS(0).to_string(), "{unix_s}");
    for bad in [
        "{unix_ms+}",
        "{unix_ms*2}",
        "{unix_s+1x}",
        "{unixms}",
        "{unix_ms",
    ] {
        let e = err_of(&single(&format!("@0 GET {bad} -> OK")));
        assert_eq!(e.line, 3, "{bad}");
        assert!(e.message.contains("placeholder"), "{bad}: {e}");
    }
    let e = err_of(&single("@0 GET k -> (integer) {unix_ms+x}"));
    assert!(e.message.contains("placeholder"), "{e}");
}

#[test]
fn arg_escapes() {
    let argv = argv_of(r#"SET bin "\x00\x01\xff\r\n""#);
    assert_eq!(bytes(&argv)[2], b"\x00\x01\xff\r\n");
    let argv = argv_of(r#"SET k "value with \"quotes\" and \\ backslash" """#);
    assert_eq!(bytes(&argv)[2], br#"value with "quotes" and \ backslash"#);
    assert_eq!(bytes(&argv)[3], b"");
    let argv = argv_of(r#"SET "\t\a\b\q\xzz\xA" 'it\'s "x" \n' a"b""#);
    assert_eq!(
        bytes(&argv),
        vec![
            b"SET".to_vec(),
            b"\t\x07\x08qxzzxA".to_vec(),
            b"it's \"x\" \\n".to_vec(),
            b"ab".to_vec(),
        ]
    );
    assert_err(&single(r#"@0 SET a"b"c -> OK"#), 3, "closing quote");
    // A quoted -> is an argument; the first bare -> separates.
    let argv = argv_of(r#"ECHO "->" '->' x->y"#);
    assert_eq!(
        bytes(&argv)[1..],
        [b"->".to_vec(), b"->".to_vec(), b"x->y".to_vec()]
    );
    match step1("@0 ECHO a -> \"b -> c\"") {
        StepKind::Command { expect, .. } => {
            assert_eq!(expect, Expect::Bulk(b"b -> c".to_vec()))
        }
        other => panic!("{other:?}"),
    }
    // Arg rendering reads back the same.
    let argv = argv_of(r#"SET "" "a b" "\x00" "->" 'q' master: "{unix_x}" plain"#);
    let rendered: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    assert_eq!(argv_of(&rendered.join(" ")), argv);
}

#[test]
fn steps_and_directives() {
    let c = parse(&mr(
        "@0 link replica master\n@0 wait-sync\n@5 master: SET k v -> OK\n@5 replica: GET k -> \"v\"",
    ))
    .unwrap();
    let kinds: Vec<&StepKind> = c.cases[0].steps.iter().map(|s| &s.kind).collect();
    assert_eq!(kinds[0], &StepKind::Link);
    assert_eq!(kinds[1], &StepKind::WaitSync);
    assert_eq!(c.cases[0].steps[2].at_ms, 5);
    assert_eq!(c.cases[0].steps[3].line, 6);
    // Comments, blank lines and leading/trailing spaces are fine; a case may hold comments
    // before its topology.
    let text = "\n# a comment\n\n# case: a\n# about a\n# topology: single\n\n  @0 PING -> PONG  \n# case: b\n# topology: single\n@1 PING -> PONG\r\n@1 PING -> PONG\n";
    let c = parse(text).unwrap();
    assert_eq!(c.cases.len(), 2);
    assert_eq!(c.cases[0].line, 4);
    assert_eq!(c.cases[1].steps.len(), 2);
    assert_eq!(parse("").unwrap().cases.len(), 0);
    assert_eq!(parse("# only comments\n\n").unwrap().cases.len(), 0);
}

#[test]
fn a_named_connection_may_block_and_take_its_reply_on_a_line_of_its_own() {
    let c = parse(&mr(
        "@0 replica: [b] BLPOP l 0 -> (blocked)\n@5 master: [w-2] GET k -> (nil)\n@9 replica: [b] <- [\"l\", \"x\"]",
    ))
    .unwrap();
    let kinds: Vec<&StepKind> = c.cases[0].steps.iter().map(|s| &s.kind).collect();
    assert_eq!(
        kinds[0],
        &StepKind::Blocked {
            node: Some(NodeRole::Replica),
            conn: Some("b".into()),
            argv: vec![
                Arg::Bytes(b"BLPOP".to_vec()),
                Arg::Bytes(b"l".to_vec()),
                Arg::Bytes(b"0".to_vec())
            ],
        }
    );
    assert!(matches!(kinds[1], StepKind::Command { conn: Some(n), .. } if n == "w-2"));
    assert_eq!(
        kinds[2],
        &StepKind::Await {
            node: Some(NodeRole::Replica),
            conn: Some("b".into()),
            expect: Expect::Array(vec![
                Expect::Bulk(b"l".to_vec()),
                Expect::Bulk(b"x".to_vec())
            ]),
        }
    );
    // The default connection may block too; `[x]` as an argument is written quoted.
    assert!(parse(&single("@0 BLPOP l 0.5 -> (blocked)\n@700 <- (nil)")).is_ok());
    assert_eq!(Arg::Bytes(b"[x]".to_vec()).to_string(), "\"[x]\"");
    assert_eq!(Arg::Bytes(b"<-".to_vec()).to_string(), "\"<-\"");
}

#[test]
fn a_blocked_connection_sends_nothing_until_its_reply_line() {
    assert_err(&single("@0 [b] BLPOP l 0 -> (blocked)"), 3, "no '<-' line");
    assert_err(&single("@0 [b] <- (nil)"), 3, "no blocked command");
    assert_err(
        &single("@0 [b] BLPOP l 0 -> (blocked)\n@1 [b] PING -> PONG\n@2 [b] <- (nil)"),
        4,
        "blocked since line 3",
    );
    assert_err(&single("@0 [b] PING <- (nil)"), 3, "takes no command");
    assert_err(&single("@0 [b c] PING -> PONG"), 3, "bad connection");
    assert_err(&single("@0 [] PING -> PONG"), 3, "bad connection");
    // Another case starts clean only once the blocked command was answered.
    assert_err(
        "# case: a\n# topology: single\n@0 [b] BLPOP l 0 -> (blocked)\n# case: b\n# topology: single\n@0 PING -> PONG\n",
        3,
        "no '<-' line",
    );
}

#[test]
fn located_errors() {
    assert_err("@0 GET k -> (nil)\n", 1, "before any '# case:'");
    assert_err("# case: a\n@0 GET k -> (nil)\n", 1, "topology");
    assert_err("\n# case: a\n\n", 2, "no '# topology");
    assert_err("# case: a\n# topology: single\n", 1, "no steps");
    assert_err("# case: a\n# topology: triple\n", 2, "unknown topology");
    assert_err(&single("@0 SET k \"v -> OK"), 3, "unbalanced quotes");
    assert_err(&single("@0 SET k 'v -> OK"), 3, "unbalanced quotes");
    assert_err(&single("@0 SET k \"v\"x -> OK"), 3, "closing quote");
    assert_err(&single("@0 SET k v"), 3, "'->'");
    assert_err(&single("@0 SET k v ->"), 3, "empty reply");
    assert_err(&single("@0 SET k v \"->\" OK"), 3, "'->'");
    assert_err(&single("@x GET k -> OK"), 3, "bad step time");
    assert_err(&single("@ GET k -> OK"), 3, "bad step time");
    assert_err(&single("@-1 GET k -> OK"), 3, "bad step time");
    assert_err(&single("@10ms GET k -> OK"), 3, "bad step time");
    assert_err(&single("@86400001 GET k -> OK"), 3, "limit");
    assert_err(&single("@99999999999999999999999 GET k -> OK"), 3, "limit");
    assert!(parse(&single("@86400000 GET k -> OK")).is_ok());
    assert_err(&single("@0 GET k -> (int) 5"), 3, "unknown reply form");
    assert_err(&single("@0 GET k -> 5"), 3, "bare integer");
    assert_err(&single("@0 GET k -> (integer) five"), 3, "bad integer");
    assert_err(&single("@0 GET k -> ~"), 3, "approximate");
    assert_err(&single("@0 GET k -> [(nil), "), 3, "missing reply value");
    assert_err(&single("@0 GET k -> [(nil)"), 3, "unclosed");
    assert_err(&single("@0 GET k -> [(nil),]"), 3, "unexpected ']'");
    assert_err(&single("@0 GET k -> [a b]"), 3, "expected ',' or ']'");
    assert_err(&single("@0 GET k -> OK OK"), 3, "unexpected text");
    assert_err(&single("@0 GET k -> \"v\" x"), 3, "unexpected text");
    assert_err(&single("@0 GET k -> \"v\"x"), 3, "closing quote");
    assert_err(&single("@0 GET k -> (nil)x"), 3, "unknown reply form");
    assert_err(&single("@0 GET k -> (error)x"), 3, "space after '(error)'");
    assert_err(&single("@0 GET k -> {unix_ms}"), 3, "unknown reply form");
    assert_err(&single("@0 -> OK"), 3, "empty command");
    assert_err(&single("@0"), 3, "empty command");
    assert_err(&single("@0    "), 3, "empty command");
    assert_err(&single("@0 master: GET k -> OK"), 3, "single-topology");
    assert_err(&single("@0 link replica master"), 3, "master-replica");
    assert_err(&single("@0 wait-sync"), 3, "master-replica");
    assert_err(&mr("@0 slave: GET k -> OK"), 3, "unknown node 'slave'");
    assert_err(&mr("@0 GET k -> OK"), 3, "prefix");
    assert_err(&mr("@0 master: -> OK"), 3, "empty command");
    assert_err(&mr("@0 link replica"), 3, "bad directive");
    assert_err(&mr("@0 link master replica"), 3, "bad directive");
    assert_err(&mr("@0 wait-sync now"), 3, "bad directive");
    assert_err(&mr("@0 wait-sync -> OK"), 3, "no '->' reply");
    assert_err(&single("@10 GET k -> OK\n@9 GET k -> OK"), 4, "backwards");
    assert_err(
        &single("@0 GET k -> OK\n# topology: single"),
        4,
        "after the first step",
    );
    assert_err(
        "# case: a\n# topology: single\n# topology: single\n",
        3,
        "second",
    );
    assert_err("# topology: single\n", 1, "before any");
    assert_err("# case:\n", 1, "empty case name");
    assert_err(
        "# case: a\n# topology: single\n@0 PING -> PONG\n# case: a\n",
        4,
        "duplicate",
    );
    assert_err(&single("GET k -> OK"), 3, "unexpected line");
    let nested = format!("@0 GET k -> {}{}", "[".repeat(40), "]".repeat(40));
    assert_err(&single(&nested), 3, "nested deeper");
    let long = format!("@0 SET k {} -> OK", "v".repeat(MAX_LINE_BYTES));
    assert_err(&single(&long), 3, "bytes long");
}

#[test]
fn file_limits() {
    let mut text = String::new();
    for i in 0..=MAX_CASES {
        text.push_str(&format!(
            "# case: c{i}\n# topology: single\n@0 PING -> PONG\n"
        ));
    }
    let e = err_of(&text);
    assert_eq!(e.line, 3 * MAX_CASES + 1);
    assert!(e.message.contains("cases"), "{e}");

    let mut text = String::from("# case: many\n# topology: single\n");
    text.push_str(&"@0 PING -> PONG\n".repeat(MAX_STEPS));
    assert_eq!(parse(&text).unwrap().cases[0].steps.len(), MAX_STEPS);
    text.push_str("@0 PING -> PONG\n");
    let e = err_of(&text);
    assert_eq!(e.line, MAX_STEPS + 3);
    assert!(e.message.contains("steps"), "{e}");
}

/// xorshift64*, enough for fuzzing without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn never_panics_on_garbage_or_truncation() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    const PIECES: &[&str] = &[
        "@",
        "0",
        "12",
        " ",
        "  ",
        "\t",
        "\n",
        "\r",
        "#",
        "# case: x\n",
        "# topology: single\n",
        "# topology: master-replica\n",
        "->",
        "\"",
        "'",
        "\\",
        "\\x",
        "\\xf",
        "ff",
        "[",
        "]",
        ",",
        "(",
        ")",
        "(nil)",
        "(integer)",
        "(error)",
        "~",
        "{",
        "}",
        "{unix_ms",
        "{unix_s",
        "+",
        "-",
        "9223372036854775808",
        "master:",
        "replica:",
        "link",
        "replica",
        "master",
        "wait-sync",
        "OK",
        "SET",
        "é",
        "\u{0}",
        "\u{feff}",
        "日本",
    ];
    for _ in 0..20_000 {
        let mut s = String::new();
        for _ in 0..rng.below(30) {
            s.push_str(PIECES[rng.below(PIECES.len())]);
        }
        let _ = parse(&s);
        let _ = parse(&single(&s));
        let _ = parse(&mr(&s));
    }
    // Random bytes, made into a str.
    for _ in 0..5_000 {
        let len = rng.below(80);
        let raw: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let s = String::from_utf8_lossy(&raw);
        let _ = parse(&s);
        let _ = parse(&single(&format!("@0 {s}")));
        let _ = parse(&mr(&format!("@0 master: {s}")));
    }
    // Every prefix of every line of the corpus, and random cuts of whole files.
    let files = [
        "strings-and-set.txt",
        "expire.txt",
        "scripts.txt",
        "replication.txt",
        "random.txt",
    ];
    for file in files {
        let Some(text) = read(file) else { continue };
        for line in text.lines() {
            for (cut, _) in line.char_indices() {
                let _ = parse(&single(&line[..cut]));
                let _ = parse(&mr(&line[..cut]));
            }
            // Random byte-level damage.
            let mut b = line.as_bytes().to_vec();
            if !b.is_empty() {
                let i = rng.below(b.len());
                b[i] = PIECES[rng.below(PIECES.len())].as_bytes()[0];
                let _ = parse(&single(&String::from_utf8_lossy(&b)));
            }
        }
        for _ in 0..50 {
            let cut = rng.below(text.len() + 1);
            if let Some(prefix) = text.get(..cut) {
                let _ = parse(prefix);
            }
        }
    }
}
