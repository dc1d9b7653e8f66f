//! What a person reads of a run: the text timeline (timeline.rs), the SVG/HTML page
//! (report.rs) and its stepper (stepper.rs), JSON lines and Chrome trace exports
//! (export.rs), the lesson site (site.rs), `serve` (serve.rs, its request-head parser
//! http.rs) and the generated pitfall guide (pitfalls.rs). Each renders what `explore` ran;
//! nothing here decides a verdict.

pub mod export;
pub mod http;
pub mod map;
pub mod pitfalls;
pub mod report;
pub mod serve;
pub mod site;
pub mod stepper;
pub mod timeline;
