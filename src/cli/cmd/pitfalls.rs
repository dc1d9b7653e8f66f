//! `pitfalls [--out FILE]`: regenerate the pitfall guide from the bundled models.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{self, Ctx, bad_input, models_dir, out};
use crate::explore;
use crate::view;

#[derive(clap::Args)]
pub struct Args {
    /// Where to write it (default: print it); its folder is created if missing, and its
    /// pictures go to `pitfalls/` beside it.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Worker threads, 1..=256.
    #[arg(long, default_value_t = cli::default_jobs(), value_parser = cli::parse_jobs)]
    jobs: usize,
}

pub fn exec(a: Args, _ctx: &Ctx) -> ExitCode {
    // A folder that cannot be made is bad input before the long part.
    if let Some(p) = &a.out
        && let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = explore::create_dir_all(dir)
    {
        return bad_input(&format!("--out {e}"));
    }
    // Progress on stderr, one line per model swept: the guide takes most of a minute.
    let mut progress = |i: usize, n: usize, name: &str| eprintln!("pitfalls: [{i}/{n}] {name}");
    match view::pitfalls::render_with_progress(&models_dir(), a.jobs, &mut progress) {
        Ok(guide) => match a.out {
            Some(p) => match write_guide(&p, &guide) {
                Ok(()) => {
                    eprintln!(
                        "pitfalls: wrote {} and {} pictures",
                        p.display(),
                        guide.pictures.len()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => bad_input(&e),
            },
            None => {
                out(&guide.markdown);
                ExitCode::SUCCESS
            }
        },
        Err(e) => bad_input(&e),
    }
}

/// Writes the guide and, next to it, its pictures (replacing stale ones).
fn write_guide(p: &Path, guide: &view::pitfalls::Guide) -> Result<(), String> {
    let err = |q: &Path, e: std::io::Error| format!("{}: {e}", q.display());
    std::fs::write(p, &guide.markdown).map_err(|e| err(p, e))?;
    let dir = p
        .parent()
        .unwrap_or(Path::new("."))
        .join(view::pitfalls::PICTURE_DIR);
    explore::create_dir_all(&dir)?;
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let q = e.path();
            if q.extension().is_some_and(|x| x == "svg") {
                std::fs::remove_file(&q).map_err(|e| err(&q, e))?;
            }
        }
    }
    for (file, text) in &guide.pictures {
        let q = dir.join(file);
        std::fs::write(&q, text).map_err(|e| err(&q, e))?;
    }
    Ok(())
}
