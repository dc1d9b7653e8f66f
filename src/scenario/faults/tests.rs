use super::*;

fn read(list: &str, entries: &str) -> Vec<FaultEntry> {
    crate::scenario::marks::begin(None);
    let text = format!("[{entries}]");
    let opts =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    let mut de = ron::Deserializer::from_str_with_options(&text, &opts).unwrap();
    let out = match list {
        "faults" => scripted(&mut de),
        "random" => random(&mut de),
        _ => triggered(&mut de),
    };
    crate::scenario::marks::end();
    out.unwrap()
}

#[test]
fn a_scripted_entry_written_back_reads_as_the_same_entry() {
    let written = [
        r#"pause(target: "c1", at: "5s", duration: "3.25s")"#,
        r#"crash(target: "m1", at: "13.79669949s", restart_after: "2.113819855s", keep_data: false, host: down)"#,
        r#"crash(target: "@master", at: "1s")"#,
        r#"clock_step(target: "r1", at: "10s", delta: "-2500ms")"#,
        r#"drift(target: "r1", at: "1s", ppm: 200, duration: "3s")"#,
        r#"drift(target: "r1", at: "1s", ppm: -20)"#,
        r#"isolate(target: "@holder", at: "2s", duration: "1s")"#,
        r#"partition(from: ["a", "b"], to: ["c"], at: "1s", duration: "2s", one_way: true)"#,
        r#"latency_spike(from: ["r1", "r2"], to: ["a"], at: "0.000273119s", duration: "40s", extra: "11s")"#,
        r#"loss(from: ["a"], to: ["b"], at: "1s", duration: "2s", loss_ppm: 250000)"#,
    ];
    for w in written {
        let e = read("faults", w).remove(0);
        let back = e.ron().expect("scripted");
        assert_eq!(read("faults", &back).remove(0), e, "{w} -> {back}");
    }
    // Written as the hand-written RON of earlier versions was.
    let e = read("faults", written[1]).remove(0);
    assert_eq!(e.ron().unwrap(), written[1]);
}

#[test]
fn the_three_lists_spell_one_kind_in_their_own_words() {
    let scripted = read(
        "faults",
        r#"isolate(target: "c1", at: "1s", duration: "2s")"#,
    );
    let random = read(
        "random",
        r#"partition(targets: ["c1"], every: ("10s", "20s"), duration: ("2s", "2s"))"#,
    );
    let trig = read(
        "triggers",
        r#"partition_after_acquire(targets: ["c1"], duration: "2s")"#,
    );
    for e in [&scripted[0], &random[0], &trig[0]] {
        assert_eq!(
            e.kind,
            KindSpec::Isolate {
                duration: Some(DurRange::fixed(Dur(2_000_000_000)))
            }
        );
    }
    assert_eq!(
        (scripted[0].name(), random[0].name(), trig[0].name()),
        ("isolate", "partition", "partition_after_acquire")
    );
    assert!(random[0].ron().is_none() && trig[0].ron().is_none());
}

#[test]
fn delayed_replies_span_the_links_back_to_the_attempting_clients() {
    let e = read(
        "triggers",
        r#"delay_replies_after_attempt(targets: ["a"], from: ["r1", "r2"], delay: ("1s", "2s"))"#,
    )
    .remove(0);
    assert_eq!(
        e.span,
        Span::Links {
            from: vec![Name::new("r1"), Name::new("r2")],
            to: vec![Name::new("a")]
        }
    );
    assert_eq!(
        e.kind.window(),
        Some(DurRange::fixed(Dur(DEFAULT_DELAY_WINDOW_NS)))
    );
    assert_eq!(e.name(), "delay_replies_after_attempt");
}
