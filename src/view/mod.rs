//! What a person reads of a run: the text timeline (timeline.rs), the SVG/HTML page
//! (report.rs: what is drawn in scene.rs, with an expiry's words in expiry.rs, how in svg.rs)
//! and its stepper (stepper.rs), JSON lines and Chrome trace exports
//! (export.rs), the lesson site (site.rs), `serve` (serve.rs, its request-head parser
//! http.rs), the generated pitfall guide (pitfalls.rs) and the page of a recorded log
//! (recorded.rs, `check-log --format html`: the same page over the log's history). Each
//! renders what `explore` ran (or check-log judged); nothing here decides a verdict.

mod expiry;
pub mod exploration;
pub mod export;
pub mod http;
pub mod map;
pub mod pitfalls;
pub mod recorded;
pub mod report;
mod scene;
pub mod serve;
pub mod site;
pub mod stepper;
mod svg;
pub mod timeline;
