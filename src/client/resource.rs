//! The protected resource: a storage service that clients update inside their critical
//! section, and that — with fencing on — rejects operations carrying a token lower than the
//! highest it has seen (Kleppmann's fencing tokens).

use crate::history::Observation;
use crate::process::{Cx, Process};
use crate::proto::Msg;
use crate::time::ProcId;

#[derive(Clone, Debug)]
pub struct Resource {
    pub fencing: bool,
    /// Number of accepted writes so far; a critical section reads it and writes it + 1.
    version: u64,
    /// Highest token presented in an accepted operation.
    max_token: Option<u64>,
}

impl Resource {
    pub fn new(fencing: bool) -> Resource {
        Resource {
            fencing,
            version: 0,
            max_token: None,
        }
    }

    /// Fencing check: a token is admissible unless a higher one was already seen. With
    /// fencing on, an operation without a token is refused.
    fn admit(&mut self, token: Option<u64>) -> bool {
        if !self.fencing {
            return true;
        }
        match (token, self.max_token) {
            (None, _) => false,
            (Some(t), Some(m)) if t < m => false,
            (Some(t), _) => {
                self.max_token = Some(self.max_token.map_or(t, |m| m.max(t)));
                true
            }
        }
    }
}

impl Process for Resource {
    fn on_start(&mut self, _cx: &mut Cx<'_>) {}

    fn on_message(&mut self, cx: &mut Cx<'_>, from: ProcId, msg: Msg) {
        match msg {
            Msg::ResourceRead { id, token } => {
                let accepted = self.admit(token);
                cx.observe(Observation::ResourceRead {
                    client: from,
                    token,
                    version: self.version,
                    accepted,
                });
                cx.send(
                    from,
                    Msg::ResourceAck {
                        id,
                        accepted,
                        version: self.version,
                    },
                );
            }
            Msg::ResourceWrite {
                id,
                token,
                base_version,
            } => {
                let accepted = self.admit(token);
                if accepted {
                    self.version += 1;
                }
                cx.observe(Observation::ResourceWrite {
                    client: from,
                    token,
                    base_version,
                    accepted,
                    version_after: self.version,
                });
                cx.send(
                    from,
                    Msg::ResourceAck {
                        id,
                        accepted,
                        version: self.version,
                    },
                );
            }
            _ => {}
        }
    }

    fn on_timer(&mut self, _cx: &mut Cx<'_>, _tag: u64) {}

    /// The resource is durable storage: it keeps its version and fencing state.
    fn on_restart(&mut self, _keep_data: bool) {}
}
