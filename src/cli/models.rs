//! Model arguments: a file path or the name of a bundled model, and the `list` of bundled
//! models.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::cli::report::expect_text;
use crate::scenario::units::closest_name;

/// The bundled models directory: `./models` if present, else the one in the source tree.
pub fn models_dir() -> PathBuf {
    let local = PathBuf::from("models");
    if local.is_dir() {
        local
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("models")
    }
}

/// The names of the bundled models (file stems), sorted; empty when the directory cannot be
/// read.
pub fn bundled_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "ron"))
                .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A model argument: a path, or the name of a bundled model. A name that is neither is bad
/// input, with what was searched and the nearest bundled name: the file was never opened,
/// so the message has no position in it.
pub fn resolve_model(arg: &str) -> Result<String, String> {
    if Path::new(arg).exists() {
        return Ok(arg.to_string());
    }
    let dir = models_dir();
    let names = bundled_names(&dir);
    let stem = Path::new(arg)
        .file_stem()
        .map_or(String::new(), |s| s.to_string_lossy().into_owned());
    let hint = closest_name(&stem, names.iter().map(String::as_str));
    if arg.ends_with(".ron") || arg.contains('/') {
        let hint = hint.map_or(String::new(), |n| {
            format!(
                " (did you mean {}?)",
                Path::new(arg).with_file_name(format!("{n}.ron")).display()
            )
        });
        return Err(format!("{arg}: no such model file{hint}"));
    }
    let p = dir.join(format!("{arg}.ron"));
    if p.exists() {
        return Ok(p.display().to_string());
    }
    let hint = hint.map_or(String::new(), |n| format!(" (did you mean {n:?}?)"));
    Err(format!(
        "{arg:?} is neither a model file nor a bundled model{hint}; searched ./{arg} and the \
         {} bundled models in {}/ (`distlock-sim list` shows them)",
        names.len(),
        dir.display()
    ))
}

/// `list`: two lines per bundled model, the names in a column as wide as the longest.
pub fn list_models(dir: &Path) -> Result<String, String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    paths.sort();
    let width = paths
        .iter()
        .filter_map(|p| p.file_stem())
        .map(|s| s.to_string_lossy().chars().count())
        .max()
        .unwrap_or(0);
    let mut s = String::new();
    for p in paths {
        match crate::scenario::load(&p) {
            Ok(sc) => {
                let _ = writeln!(s, "{:<width$}  {}", sc.name, sc.model.description);
                let _ = writeln!(
                    s,
                    "{:<width$}  expect: {}",
                    "",
                    expect_text(sc.model.expect.as_ref())
                );
            }
            Err(e) => {
                let _ = writeln!(
                    s,
                    "{:<width$}  INVALID: {e}",
                    p.file_stem().unwrap_or_default().to_string_lossy()
                );
            }
        }
    }
    Ok(s)
}
