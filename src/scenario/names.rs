//! How a scenario's processes, locks and runs are named: the process table's lookups, the
//! lock keys, the shell line that replays a seed, and a run's verdict worded with the world's
//! names.

use crate::check::monitor::{Judgement, Monitor};
use crate::check::{Checks, Violation};
use crate::proto::Bytes;
use crate::scenario::model::Scenario;
use crate::sim::World;
use crate::time::ProcId;

/// What printed replay lines call the tool when nothing says how it was invoked.
pub const DEFAULT_REPLAY_PROGRAM: &str = "distlock-sim";

/// `word` as one shell word: as is when it has only characters no shell treats specially,
/// else in single quotes (a printed command must run as pasted, whatever the path holds).
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

impl Scenario {
    /// The shell command that re-runs `seed` of this scenario as it was run here (path,
    /// adversary and sparsity flags): what every replay line, page and JSON record prints.
    pub fn replay_command(&self, seed: u64) -> String {
        format!(
            "{} replay {} --seed {seed}{}",
            shell_word(&self.replay_program),
            shell_word(&self.path),
            self.replay_flags
        )
    }

    /// This scenario's properties judged over a run of its world, as every command reports
    /// them: processes by name, locks by their key ("lock `lock`"). The world's history must
    /// be kept (`run_world`); a streamed run is judged by its monitor (`violations`).
    pub fn check(&self, w: &World) -> Vec<Violation> {
        let mut checks = Checks::new(&self.properties, self.liveness_bound_ns)
            .release_within(self.release_within_ns);
        checks.observe_all(&w.history);
        self.worded(&checks, w)
    }

    /// A monitor of this scenario's properties, to feed a run's records to.
    pub fn monitor(&self) -> Monitor {
        Monitor::new(&self.properties, self.liveness_bound_ns)
            .release_within(self.release_within_ns)
    }

    /// The violations a monitor found over a run of `w`, worded as `check` words them.
    pub fn violations(&self, judged: &Judgement, w: &World) -> Vec<Violation> {
        self.worded(&judged.checks, w)
    }

    fn worded(&self, checks: &Checks, w: &World) -> Vec<Violation> {
        let names = w.names();
        let keys = self.lock_keys();
        let lock_name = |l: u32| match keys.get(l as usize) {
            Some(k) => format!("lock `{}`", String::from_utf8_lossy(k)),
            None => format!("lock {l}"),
        };
        checks.violations(w.now(), &|p| names[p.index()].clone(), &lock_name)
    }

    /// The lock keys of the model's client groups, each once (timelines and reports show
    /// their life on every node).
    pub fn lock_keys(&self) -> Vec<Bytes> {
        let mut keys: Vec<Bytes> = Vec::new();
        for g in self.model.clients.iter() {
            let k = g.key_bytes();
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys
    }

    pub fn proc_id(&self, name: &str) -> ProcId {
        ProcId(
            self.procs
                .iter()
                .position(|(n, _)| n == name)
                .expect("validated name") as u32,
        )
    }
}
