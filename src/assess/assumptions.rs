//! What the findings assume of the world where the user's files say nothing: the faults
//! injected (`--faults`), how many clients contend and how long they hold.

use super::setup::Library;
use crate::scenario;

/// What the findings assume of the world: the faults they inject and the clients' work.
#[derive(Clone, Debug)]
pub struct Assumptions {
    pub crash: bool,
    pub failover: bool,
    pub pause_max_ms: Option<u64>,
    pub clock_step_max_ms: Option<u64>,
    pub latency_max_ms: Option<u64>,
    /// Renewal starvation of a watchdog (Redisson without a lease).
    pub renewal_delay_max_ms: Option<u64>,
    /// The caller's thread interrupted while `lock()` waits (Redisson).
    pub interrupt: bool,
    pub clients: u32,
    pub hold_ms: (u64, u64),
    /// The inputs as named on the command line (for the models' headers).
    pub inputs: Vec<String>,
}

/// `--faults` when it is not given.
pub const DEFAULT_FAULTS: &str = "crash,failover,pause:<=15s,clock_step:<=2s,latency:<=15s";

impl Assumptions {
    /// `--faults LIST`: `none`, or kinds separated by commas, `KIND` or `KIND:<=D`. The
    /// default list also assumes, for Redisson's watchdog, renewals starved by up to five
    /// sixths of the lease, and from 3.51.0 callers interrupted in `lock()` (redisson#7272).
    pub fn parse_faults(text: &str, lib: &Library) -> Result<Assumptions, String> {
        let watchdog_ttl_ms = match lib {
            Library::Redisson {
                lease_ms: None,
                watchdog_ms,
                ..
            } => Some(*watchdog_ms),
            _ => None,
        };
        let mut a = Assumptions {
            crash: false,
            failover: false,
            pause_max_ms: None,
            clock_step_max_ms: None,
            latency_max_ms: None,
            renewal_delay_max_ms: None,
            interrupt: false,
            clients: 3,
            hold_ms: (1_000, 3_000),
            inputs: Vec::new(),
        };
        if text.trim() == "none" {
            return Ok(a);
        }
        let mut starve_given = false;
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (kind, bound) = match item.split_once(":<=") {
                Some((k, b)) => (k.trim(), Some(b.trim())),
                None => (item, None),
            };
            let max = |default: Option<u64>| -> Result<u64, String> {
                match bound {
                    None => default.ok_or_else(|| {
                        format!("--faults {item}: give its largest size ({kind}:<=15s)")
                    }),
                    Some(b) => {
                        let ns = scenario::units::parse_duration_ns(b)
                            .map_err(|e| format!("--faults {item}: {e}"))?;
                        if !(1_000_000..=3_600_000_000_000).contains(&ns) {
                            return Err(format!("--faults {item}: between 1ms and 1h"));
                        }
                        Ok((ns / 1_000_000) as u64)
                    }
                }
            };
            match kind {
                "crash" | "failover" | "interrupt" if bound.is_some() => {
                    return Err(format!("--faults {item}: {kind} takes no size"));
                }
                "crash" => a.crash = true,
                "failover" => a.failover = true,
                "interrupt" => a.interrupt = true,
                "pause" => a.pause_max_ms = Some(max(Some(15_000))?),
                "clock_step" => a.clock_step_max_ms = Some(max(Some(2_000))?),
                "latency" => a.latency_max_ms = Some(max(Some(15_000))?),
                "starve" => {
                    starve_given = true;
                    a.renewal_delay_max_ms = Some(max(watchdog_ttl_ms.map(|t| t * 5 / 6))?);
                }
                _ => {
                    const KINDS: [&str; 7] = [
                        "crash",
                        "failover",
                        "pause",
                        "clock_step",
                        "latency",
                        "starve",
                        "interrupt",
                    ];
                    let near = scenario::units::closest_name(kind, KINDS.iter().copied())
                        .map_or(String::new(), |n| format!(" (did you mean {n:?}?)"));
                    return Err(format!(
                        "--faults {item}: not a fault kind (crash, failover, pause, clock_step, latency, starve, interrupt, or none){near}"
                    ));
                }
            }
        }
        // A watchdog is assumed starved too unless --faults names the kinds itself.
        if !starve_given && text == DEFAULT_FAULTS {
            a.renewal_delay_max_ms = watchdog_ttl_ms.map(|t| t * 5 / 6);
            a.interrupt = matches!(lib, Library::Redisson { version, lease_ms: None, .. }
                if super::setup::version_at_least(version, (3, 51)));
        }
        Ok(a)
    }

    pub fn faults_text(&self) -> String {
        let mut v = Vec::new();
        if self.crash {
            v.push("crash".to_string());
        }
        if self.failover {
            v.push("failover".into());
        }
        if let Some(p) = self.pause_max_ms {
            v.push(format!("pause:<={p}ms"));
        }
        if let Some(p) = self.clock_step_max_ms {
            v.push(format!("clock_step:<={p}ms"));
        }
        if let Some(p) = self.latency_max_ms {
            v.push(format!("latency:<={p}ms"));
        }
        if let Some(p) = self.renewal_delay_max_ms {
            v.push(format!("starve:<={p}ms"));
        }
        if self.interrupt {
            v.push("interrupt".into());
        }
        if v.is_empty() {
            "none".into()
        } else {
            v.join(",")
        }
    }
}
