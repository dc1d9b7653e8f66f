//! `distlock-sim site`: the lessons a teacher publishes — the classic figures first, each
//! naming the figure it reproduces and its source, narrated at the figure's moments.

use std::path::Path;

use distlock_sim::view::site;

fn rendered() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    site::render(&dir).expect("the catalogue renders").pages
}

fn page<'a>(pages: &'a [(String, String)], file: &str) -> &'a str {
    &pages
        .iter()
        .find(|(f, _)| f == file)
        .unwrap_or_else(|| panic!("the site has no {file}"))
        .1
}

#[test]
fn the_index_lists_the_classic_figures_first_in_their_order() {
    let pages = rendered();
    let index = page(&pages, "index.html");
    let classics = index
        .find("Classic figures")
        .expect("a Classic figures section");
    let catalogue = index
        .find("<h2>The catalogue</h2>")
        .expect("the catalogue after it");
    assert!(classics < catalogue);
    let mut last = classics;
    for c in site::CLASSICS {
        let at = index[last..]
            .find(&format!("href=\"{}.html\"", c.model))
            .map(|i| i + last)
            .unwrap_or_else(|| panic!("{} is not linked after the previous classic", c.model));
        assert!(
            at < catalogue,
            "{} is not in the Classic figures section",
            c.model
        );
        last = at;
        // Listed once: the catalogue part does not repeat it.
        assert_eq!(
            index.matches(&format!("href=\"{}.html\"", c.model)).count(),
            1,
            "{} is linked twice",
            c.model
        );
    }
    assert_eq!(site::CLASSICS.len(), 6);
}

#[test]
fn each_classic_figure_page_names_its_figure_and_source_and_stops_at_every_moment() {
    let pages = rendered();
    let expect: &[(&str, &[&str])] = &[
        (
            "classic-fencing-tokens-33-34",
            &[
                "How to do distributed locking",
                "Designing Data-Intensive Applications",
                "Figures 8-4 and 8-5",
                "fencing token 33",
                "fencing token 34",
                "refuses client1's write with token 33",
            ],
        ),
        (
            "classic-ddia-delayed-request",
            &[
                "Designing Data-Intensive Applications, 2nd edition, chapter 9",
                "The Trouble with Distributed Systems",
                "latency +12s",
                "refuses client1's write with token 1",
            ],
        ),
        (
            "classic-ddia-fencing-storage",
            &[
                "Designing Data-Intensive Applications, 2nd edition, chapter 9",
                "fencing token 1",
                "fencing token 2",
                "refuses client1's write with token 1",
            ],
        ),
        (
            "redlock-kleppmann-clock-jump",
            &[
                "How to do distributed locking",
                "Breaking Redlock with bad timings",
                "clock step c",
            ],
        ),
        (
            "classic-kleppmann-redlock-gc-pause",
            &[
                "How to do distributed locking",
                "its second scenario",
                "Is Redlock safe?",
                "one gives up",
            ],
        ),
        (
            "classic-redis-docs-failover-race",
            &[
                "Distributed Locks with Redis",
                "Why failover-based implementations are not enough",
                "r1: REPLICAOF NO ONE",
            ],
        ),
    ];
    for (model, needles) in expect {
        let html = page(&pages, &format!("{model}.html"));
        let c = site::classic(model).expect("a classic");
        assert!(
            html.contains("The figure this lesson reproduces"),
            "{model}"
        );
        for n in *needles {
            assert!(html.contains(n), "{model}.html does not say {n:?}");
        }
        // One narrated stop per moment, each but the last asking what happens next.
        assert_eq!(
            html.matches("class=\"figure-stop\"").count(),
            c.moments.len(),
            "{model}"
        );
        assert_eq!(
            html.matches("<summary>What happens next?</summary>")
                .count(),
            c.moments.len() - 1,
            "{model}"
        );
    }
    // The fencing figure's second half opens on its variant.
    let fencing = page(&pages, "classic-fencing-tokens-33-34.html");
    assert!(fencing.contains("&amp;variant=fencing%20tokens\""));
}

/// The steps of a page's run `variant`, as its script carries them.
fn steps_of(html: &str, variant: &str) -> serde_json::Value {
    let open = format!("class=\"steps\" data-variant=\"{variant}\"");
    let at = html
        .find(&open)
        .unwrap_or_else(|| panic!("no steps of {variant}"));
    let body = &html[at..];
    let body = &body[body.find('>').unwrap() + 1..];
    let body = &body[..body.find("</script>").unwrap()];
    serde_json::from_str(&body.replace("<\\/", "</")).expect("the steps are JSON")
}

#[test]
fn a_lesson_starts_where_its_story_starts_and_names_its_tokens_on_the_chart() {
    let pages = rendered();
    let fencing = page(&pages, "classic-fencing-tokens-33-34.html");
    // The 32 grants of `earlier` before the figure are one step: the first.
    for run in ["as written", "fencing tokens"] {
        let s = steps_of(fencing, run);
        let steps = s["steps"].as_array().unwrap();
        assert_eq!(steps[0]["k"], "setup", "{run}: {}", steps[0]);
        let text = steps[0]["s"].as_str().unwrap();
        assert!(text.contains("earlier 32 times"), "{run}: {text}");
        assert!(s["fold"].as_u64().unwrap() > 32, "{run}: {}", s["fold"]);
        // From step 1, the story's first notable steps are client1's and client2's.
        let notable: Vec<&str> = steps[1..]
            .iter()
            .filter(|x| x["k"].is_string())
            .take(3)
            .map(|x| x["s"].as_str().unwrap())
            .collect();
        assert!(
            notable.iter().all(|t| !t.contains("earlier")),
            "{run}: {notable:?}"
        );
        eprintln!(
            "{run}: {} steps, the first folds {}; then {notable:?}",
            steps.len(),
            s["fold"]
        );
    }
    // Tokens 33 and 34 named on the fix's chart: on client1's hold and on the storage's lane.
    for label in ["token 33 · client1-1", ">token 34<", ">token 33 ✗ refused<"] {
        assert!(fencing.contains(label), "the chart does not name {label:?}");
    }
    // The lesson's stops count steps from 1 and fold away.
    assert!(fencing.contains("<details class=\"lesson\" id=\"lesson\">"));
    assert!(fencing.contains("href=\"#s="));
    assert!(!fencing.contains("href=\"#step="));
}
