//! Algorithms a user crate registers by name (`cli::Registry`): a model's client group names
//! one with `algorithm: "my-lock"`, and every command runs it like a built-in.
//!
//! The table is set once per process, before any model is read, and read-only after: a
//! model's meaning never depends on when it was loaded, and sweeps share it across worker
//! threads. A registered algorithm reads the single-instance fields (`node`, `ttl`, `hold`,
//! `retry`, `request_timeout`, `max_attempts`, `via_sentinels`, ...) and is handed them as a
//! `ClientConfig`, as the built-in single-instance clients are; fields of its own it reads
//! from the group's `options: (...)`, as a type it registered with them
//! (`cli::Registry::algorithm_with_options`), checked when the model is read.

use std::sync::OnceLock;

use crate::client::ClientConfig;
use crate::process::Process;

/// Makes one client process of a registered algorithm from its group's configuration.
pub type AlgorithmFactory = dyn Fn(&ClientConfig) -> Box<dyn Process> + Send + Sync;

/// Reads a group's `options: (...)` as the algorithm's own type, to refuse bad ones when the
/// model is read (the error names the field the type did not take).
pub type OptionsCheck = dyn Fn(&ron::Value) -> Result<(), String> + Send + Sync;

/// One algorithm as a user crate registers it (`cli::Registry`).
pub struct Registration {
    pub name: String,
    pub make: Box<AlgorithmFactory>,
    /// `None`: the algorithm takes no `options`.
    pub options: Option<Box<OptionsCheck>>,
}

struct Registered {
    name: &'static str,
    make: Box<AlgorithmFactory>,
    options: Option<Box<OptionsCheck>>,
}

static TABLE: OnceLock<Vec<Registered>> = OnceLock::new();

/// Installs the registered algorithms; once per process. A name already taken (by a
/// built-in algorithm or twice in the list) is refused, and so is a second installation.
pub fn install(
    algorithms: Vec<Registration>,
    builtin: &dyn Fn(&str) -> bool,
) -> Result<(), String> {
    let mut table: Vec<Registered> = Vec::with_capacity(algorithms.len());
    for Registration {
        name,
        make,
        options,
    } in algorithms
    {
        if builtin(&name) {
            return Err(format!(
                "algorithm {name:?} is built in: register yours under another name"
            ));
        }
        if table.iter().any(|r| r.name == name) {
            return Err(format!("algorithm {name:?} registered twice"));
        }
        // Leaked once per registered name, for the process's life: names are `&'static`
        // like the built-ins'.
        let name: &'static str = Box::leak(name.into_boxed_str());
        table.push(Registered {
            name,
            make,
            options,
        });
    }
    if table.len() > usize::from(u16::MAX) {
        return Err("more than 65535 registered algorithms".into());
    }
    TABLE
        .set(table)
        .map_err(|_| "the algorithm registry is installed once per process".to_string())
}

fn table() -> &'static [Registered] {
    TABLE.get().map_or(&[], Vec::as_slice)
}

/// The index of a registered algorithm.
pub fn lookup(name: &str) -> Option<u16> {
    table()
        .iter()
        .position(|r| r.name == name)
        .map(|i| i as u16)
}

/// Every registered algorithm's index, in registration order.
pub fn indices() -> impl Iterator<Item = u16> {
    (0..table().len()).map(|i| i as u16)
}

/// The name of registered algorithm `i`.
pub fn name(i: u16) -> &'static str {
    table()[usize::from(i)].name
}

/// A client of registered algorithm `i`.
pub fn make(i: u16, cfg: &ClientConfig) -> Box<dyn Process> {
    (table()[usize::from(i)].make)(cfg)
}

/// Whether a group of registered algorithm `i` may have these `options` (`None`: the group
/// gives none, which every algorithm takes; one with options then gets its type's default).
pub fn check_options(i: u16, options: Option<&ron::Value>) -> Result<(), String> {
    match (&table()[usize::from(i)].options, options) {
        (_, None) => Ok(()),
        (None, Some(_)) => Err(
            "this algorithm takes no options (it was registered without a type for them)".into(),
        ),
        (Some(check), Some(v)) => check(v),
    }
}
