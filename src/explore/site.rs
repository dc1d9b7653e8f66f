//! `distlock-sim site --out DIR`: a static site a teacher can publish as it is — an index of
//! the catalogue and one lesson page per model: the story (the model file's header), the
//! stepper opened on the first failing seed, the fix variant beside it when the model
//! declares one, and "what happens next?" stops at the notable events before the violation.
//! Every page is the self-contained page of `replay --format html`; nothing is fetched.

use std::fmt::Write as _;
use std::path::Path;

use crate::explore::stepper::{self, Notable};
use crate::explore::{report, run_world};
use crate::sim::TraceMode;

/// Seeds tried per model for a failing one (the pitfall guide's pictures use the same span).
const SEEDS: u64 = 20;
/// Questions per lesson: the notable stops just before the first violation.
const QUESTIONS: usize = 6;

/// The site's files: (file name, HTML).
pub struct Site {
    pub pages: Vec<(String, String)>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders the site for the models in `dir` (the benchmarks left out).
pub fn render(dir: &Path) -> Result<Site, String> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .filter(|p| {
            !p.file_stem()
                .is_some_and(|s| s.to_string_lossy().starts_with("bench-"))
        })
        .collect();
    paths.sort();
    let mut pages = Vec::new();
    let mut index = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>distlock-sim lessons</title>\n<style>body{font-family:\"DejaVu Sans\",Helvetica,Arial,sans-serif;margin:24px;max-width:980px;color:#222} li{margin:6px 0} .bad{color:#c00000} .ok{color:#2a7a2a} .d{color:#555}</style></head><body>\n<h1>Distributed locks on Redis, step by step</h1>\n<p>Each lesson is one run of a model from the catalogue, on its first failing seed: step through it (← →, Shift for the notable events), read what every node stores and every client believes, and compare with the fix on the same schedule where the model declares one.</p>\n<ol>\n",
    );
    for p in &paths {
        let sc = crate::scenario::load(p).map_err(|e| e.to_string())?;
        let seed = (0..SEEDS)
            .find(|s| run_world(&sc, *s, TraceMode::Off).0.violated())
            .unwrap_or(0);
        let (o, world) = run_world(&sc, seed, TraceMode::Full);
        let mut page = report::html(&sc, seed, &world, &o.violations, None);
        let story = crate::explore::pitfalls::header(p);
        let mut lesson = String::new();
        let _ = write!(
            lesson,
            "<section class=\"lesson\"><p><a href=\"index.html\">← all lessons</a></p><h2>The story</h2>"
        );
        for para in story.split("\n\n") {
            let _ = write!(lesson, "<p>{}</p>", esc(&para.replace('\n', " ")));
        }
        // What happens next? The notable stops before the first violation, each with the
        // next notable event as its answer.
        let steps = stepper::steps(&sc, &world, &o.violations);
        let notable: Vec<usize> = (0..steps.len())
            .filter(|&i| steps[i].notable.is_some())
            .collect();
        let first_v = notable
            .iter()
            .position(|&i| steps[i].notable == Some(Notable::Violation))
            .unwrap_or(notable.len().min(QUESTIONS));
        let from = first_v.saturating_sub(QUESTIONS);
        if first_v > 0 {
            lesson.push_str("<h2>What happens next?</h2><ol class=\"questions\">");
            for w in notable[from..=first_v.min(notable.len() - 1)].windows(2) {
                let (q, a) = (&steps[w[0]], &steps[w[1]]);
                let _ = write!(
                    lesson,
                    "<li><a href=\"#step={}\" class=\"stop\">step {} at {}</a>: {} <details><summary>What happens next?</summary><a href=\"#step={}\">step {}</a>: {}</details></li>",
                    w[0],
                    w[0],
                    q.at,
                    esc(&q.sentence),
                    w[1],
                    w[1],
                    esc(&a.sentence)
                );
            }
            lesson.push_str("</ol>");
        }
        lesson.push_str("</section>\n");
        page = page.replacen("</header>", &format!("{lesson}</header>"), 1);
        // A click on a stop opens the page there (the page reads #step= when it loads).
        page = page.replacen(
            "</body>",
            "<script>for (const a of document.querySelectorAll('.lesson a[href^=\"#step=\"]')) a.addEventListener('click', () => setTimeout(() => location.reload(), 0));</script>\n</body>",
            1,
        );
        let file = format!("{}.html", sc.name);
        let _ = writeln!(
            index,
            "<li><a href=\"{file}\"><b>{}</b></a> <span class=\"{}\">{}</span>{} — <span class=\"d\">{}</span></li>",
            esc(&sc.name),
            if o.violated() { "bad" } else { "ok" },
            if o.violated() {
                format!("fails on seed {seed}")
            } else {
                "holds".to_string()
            },
            if sc.variants.is_empty() {
                String::new()
            } else {
                format!(
                    ", with {}",
                    esc(&sc
                        .variants
                        .iter()
                        .map(|v| v.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "))
                )
            },
            esc(&sc.model.description)
        );
        pages.push((file, page));
    }
    index.push_str("</ol>\n</body></html>\n");
    pages.insert(0, ("index.html".into(), index));
    Ok(Site { pages })
}

/// Writes the site into `out` (created if missing); returns the number of pages.
pub fn write(dir: &Path, out: &Path) -> Result<usize, String> {
    let site = render(dir)?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    for (file, html) in &site.pages {
        let p = out.join(file);
        std::fs::write(&p, html).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(site.pages.len())
}
