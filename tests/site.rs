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
    assert_eq!(site::CLASSICS.len(), 4);
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
