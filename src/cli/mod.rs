//! The `distlock-sim` command line, in the library so that tests check the exact text users
//! see and a user crate can run the whole CLI (`src/main.rs` is one call to [`main`]).
//!
//! - `args`: argument types (seed ranges, shards, windows, `--jobs`);
//! - `models`: model arguments (paths or bundled names) and `list`;
//! - `report`: the text of run, replay and sweep;
//! - `cmd`: the subcommands, one file each, registered in `cmd/mod.rs`.
//!
//! Exit codes, for every subcommand: 0 every property held, 1 a property was violated, 2 bad
//! input, 3 inconclusive (a budget stopped a run before its duration), 4 vacuous (a hazard the
//! model requires was never reached). Subcommands that write a file (`--out`, `--report`)
//! still exit with the verdict; a file that cannot be written is bad input (2).

pub mod args;
pub mod cmd;
pub mod models;
pub mod report;
pub mod shard;

use std::path::Path;
use std::process::ExitCode;

pub use args::*;
pub use models::{bundled_names, list_models, models_dir, resolve_model};
pub use report::*;

use crate::scenario::{self, Scenario};

/// Runs the command line on this process's arguments; what `distlock-sim`'s `main` is.
pub fn main() -> ExitCode {
    main_with(Registry::new())
}

/// The algorithms a user crate adds to the command line, by name: a model's client group
/// then says `algorithm: "my-lock"` and every command (run, sweep, replay in every format,
/// hunt, minimize, check, merge) runs it as it runs a built-in one. docs/custom-algorithm.md.
#[derive(Default)]
pub struct Registry {
    algorithms: Vec<scenario::custom::Registration>,
}

impl Registry {
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Registers an algorithm under `name`, made per client from its group's configuration
    /// (the single-instance fields: `node`, `ttl`, `hold`, `retry`, `request_timeout`, ...).
    pub fn algorithm(
        mut self,
        name: &str,
        make: impl Fn(&crate::client::ClientConfig) -> Box<dyn crate::process::Process>
        + Send
        + Sync
        + 'static,
    ) -> Registry {
        self.algorithms.push(scenario::custom::Registration {
            name: name.to_string(),
            make: Box::new(make),
            options: None,
        });
        self
    }

    /// Registers an algorithm that also takes fields of its own: a client group's
    /// `options: (...)` is read as a `T` when the model is read (a field `T` does not take,
    /// or a value of the wrong kind, is bad input naming the file, line and field, exit 2),
    /// and each client is made from its configuration and that `T` (`T::default()` when the
    /// group gives no `options`).
    pub fn algorithm_with_options<T>(
        mut self,
        name: &str,
        make: impl Fn(&crate::client::ClientConfig, &T) -> Box<dyn crate::process::Process>
        + Send
        + Sync
        + 'static,
    ) -> Registry
    where
        T: serde::de::DeserializeOwned + Default + 'static,
    {
        let read = |v: &ron::Value| v.clone().into_rust::<T>().map_err(|e| e.to_string());
        self.algorithms.push(scenario::custom::Registration {
            name: name.to_string(),
            make: Box::new(move |cfg| {
                let options = match &cfg.options {
                    Some(v) => read(v).expect("options checked when the model was read"),
                    None => T::default(),
                };
                make(cfg, &options)
            }),
            options: Some(Box::new(move |v| read(v).map(|_| ()))),
        });
        self
    }
}

/// The whole command line with the registered algorithms added: what a user crate's `main`
/// calls (`fn main() -> ExitCode { distlock_sim::cli::main_with(Registry::new().algorithm(..)) }`).
/// A name that clashes with a built-in algorithm is bad input (exit 2).
pub fn main_with(registry: Registry) -> ExitCode {
    if !registry.algorithms.is_empty() {
        let builtin = |n: &str| scenario::clients::ClientKind::from_name(n).is_some();
        if let Err(e) = scenario::custom::install(registry.algorithms, &builtin) {
            return bad_input(&e);
        }
    }
    cmd::main()
}

/// What every subcommand is given besides its own arguments.
pub struct Ctx {
    /// How printed replay and picture commands call this tool (`program_for_replay`).
    pub program: String,
}

impl Ctx {
    /// The context of this process: printed commands call the program as it was invoked.
    pub fn from_env() -> Ctx {
        Ctx {
            program: program_for_replay(),
        }
    }

    /// Loads a model argument (path or bundled name); bad input is reported (exit 2).
    pub fn load(&self, model: &str) -> Result<Scenario, ExitCode> {
        let path = resolve_model(model).map_err(|e| bad_input(&e))?;
        let mut sc = scenario::load(Path::new(&path)).map_err(|e| bad_input(&e.to_string()))?;
        sc.replay_program = self.program.clone();
        Ok(sc)
    }

    /// Loads a model argument with its `--set` overrides applied (`scenario::overrides`):
    /// the scenario, whose replay lines carry the same `--set` flags, and the model text it
    /// was read from (the file's, overridden), for commands that write scripted models from
    /// it. Bad input is reported (exit 2).
    pub fn load_model(&self, m: &ModelArg) -> Result<(Scenario, String), ExitCode> {
        let (sc, text) = self.load_overridden(m)?;
        match &m.variant {
            None => Ok((sc, text)),
            Some(name) => variant_of(sc, name),
        }
    }

    /// `load_model` before `--variant`.
    fn load_overridden(&self, m: &ModelArg) -> Result<(Scenario, String), ExitCode> {
        if m.set.is_empty() {
            let sc = self.load(&m.file)?;
            let text = std::fs::read_to_string(&sc.path)
                .map_err(|e| bad_input(&format!("{}: {e}", sc.path)))?;
            return Ok((sc, text));
        }
        // The file as the loader reads it (size, UTF-8), then the overrides on its text.
        let plain = self.load(&m.file)?;
        let text = std::fs::read_to_string(&plain.path)
            .map_err(|e| bad_input(&format!("{}: {e}", plain.path)))?;
        let (mut sc, text) =
            scenario::overrides::load_with(&plain.name, &plain.path, &text, &m.set)
                .map_err(|e| bad_input(&e))?;
        sc.replay_program = self.program.clone();
        sc.replay_flags = m
            .set
            .iter()
            .map(|s| format!(" --set {}", scenario::names::shell_word(&s.arg)))
            .collect();
        Ok((sc, text))
    }
}

/// The variant `name` of `sc` as a scenario of its own, with the text it was read from; its
/// replay lines carry `sc`'s flags and `--variant NAME`. A name the model does not declare is
/// bad input, listing those it does.
fn variant_of(sc: Scenario, name: &str) -> Result<(Scenario, String), ExitCode> {
    let Some(v) = sc.variants.iter().find(|v| v.name == name) else {
        let names: Vec<String> = sc
            .variants
            .iter()
            .map(|v| format!("{:?}", v.name))
            .collect();
        return Err(bad_input(&format!(
            "{}: no variant {name:?} ({})",
            sc.path,
            if names.is_empty() {
                "the model declares none".to_string()
            } else {
                format!("it declares {}", names.join(", "))
            }
        )));
    };
    let mut vsc = scenario::load_str(&sc.name, &sc.path, &v.text)
        .map_err(|e| bad_input(&format!("in variant {name:?}: {e}")))?;
    vsc.replay_program = sc.replay_program.clone();
    vsc.replay_flags = format!(
        "{} --variant {}",
        sc.replay_flags,
        scenario::names::shell_word(name)
    );
    Ok((vsc, v.text.clone()))
}

/// `--out FILE` of a search that may find a scripted model (`explore`, `search`): writes
/// the model there when one was found, and gives the path its report names (`None`: no
/// file asked for, or nothing found). A file that cannot be written is bad input.
pub fn save_found(
    out: Option<&Path>,
    model_text: Option<&str>,
) -> Result<Option<String>, ExitCode> {
    let (Some(p), Some(text)) = (out, model_text) else {
        return Ok(None);
    };
    std::fs::write(p, text).map_err(|e| bad_input(&format!("{}: {e}", p.display())))?;
    Ok(Some(p.display().to_string()))
}

/// How printed commands begin, so that they run as pasted: the program as this process was
/// invoked (its `argv[0]`). A bare name (`distlock-sim`) was found on PATH and will be again;
/// a path (`target/release/distlock-sim`, or the absolute path `cargo run` executes) runs
/// from the same directory the model paths are relative to. An `argv[0]` that names no file
/// (a launcher that rewrote it) gives the executable's own path.
pub fn program_for_replay() -> String {
    let argv0 = std::env::args_os()
        .next()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bare =
        !argv0.is_empty() && !argv0.contains(std::path::MAIN_SEPARATOR) && !argv0.contains('/');
    if bare || (!argv0.is_empty() && Path::new(&argv0).is_file()) {
        return argv0;
    }
    std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| scenario::names::DEFAULT_REPLAY_PROGRAM.to_string())
}

/// Writes to stdout; a closed pipe (`| head`) is not an error worth a panic.
/// Writes to standard output, checked (issue 26.8: `list > /dev/full` exited 0, and a
/// `sweep --json` shard written to a full disk looked like a real one to `merge`): a failed
/// write ends the process at once, exit 2 with the OS error; a reader that went away
/// (`| head -1`, EPIPE) ends it quietly with 141, the status a shell shows for SIGPIPE,
/// which Rust programs ignore.
pub fn out(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        stdout_failed(&e);
    }
}

/// Ends the process for a failed write to standard output (see [`out`]).
pub fn stdout_failed(e: &std::io::Error) -> ! {
    use std::io::Write;
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(141);
    }
    let _ = writeln!(std::io::stderr(), "error: standard output: {e}");
    std::process::exit(2);
}

/// Reports bad input on stderr: exit code 2.
pub fn bad_input(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// Exit code: 0 every property held, 1 a property was violated, 3 nothing violated but a run
/// stopped on its budget before its duration (inconclusive), 4 nothing violated but a hazard
/// the model requires (`witness`) was never reached (vacuous); 2 is bad input.
pub fn exit_with(outcome: Outcome) -> ExitCode {
    ExitCode::from(outcome.exit_code())
}

/// 1 when something was violated, else 0.
pub fn exit_for(violated: bool) -> ExitCode {
    if violated {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
