//! The cluster-wide registry on the node: registering names as liveliness tokens, and keeping
//! the local copy of every node's names from their tokens.
//!
//! A registration is a token under `whirl/<cluster>/reg/`, held by this node while the name is
//! registered; every node subscribes to those tokens and keeps the whole registry
//! ([`crate::registry`]), so a lookup never goes to the network. A node's names vanish with
//! its tokens, so with the node.

use zenoh::sample::{Sample, SampleKind};
use zenoh::Wait;

use super::{Core, Registration};
use crate::counts::bump;
use crate::registry::{self, Entry as RegEntry};
use crate::{DistError, MemberState, NodeEvent, Pid};

impl Core {
    /// Registers exported local process `pid` under `name`.
    pub(crate) fn register(&self, name: &str, pid: Pid) -> Result<(), DistError> {
        if !registry::valid_name(name) {
            return Err(DistError::InvalidName {
                name: name.to_owned(),
            });
        }
        if pid.node() != self.id || !self.exports.read().contains_key(&pid.local()) {
            return Err(DistError::NotExported(pid));
        }
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let entry = RegEntry { ms, pid };
        let key = format!("{}reg/{}", self.root, registry::key_suffix(name, entry));
        let token = self
            .session
            .liveliness()
            .declare_token(key)
            .wait()
            .map_err(|source| DistError::Declare {
                what: "registry token",
                source,
            })?;
        let conflict = self.registry.lock().insert(name.to_owned(), entry);
        if let Some(holder) = conflict {
            tracing::warn!(name, %holder, refused = %pid, "registered a name already held: the first holder keeps it");
            let event = NodeEvent::NameConflict {
                name: name.to_owned(),
                holder,
                refused: pid,
            };
            self.publish(self.members.lock(), Some(event));
        }
        let mut tokens = self.tokens.lock();
        tokens
            .entry(pid.local())
            .or_default()
            .push((name.to_owned(), entry, token));
        drop(tokens);
        // The process may have ended while the token was being declared.
        if !self.exports.read().contains_key(&pid.local()) {
            let names = self.tokens.lock().remove(&pid.local()).unwrap_or_default();
            self.forget_names(names);
            return Err(DistError::NotExported(pid));
        }
        Ok(())
    }

    /// Withdraws `pid`'s registration under `name`.
    pub(crate) fn unregister(&self, name: &str, pid: Pid) -> bool {
        let removed: Vec<Registration> = {
            let mut tokens = self.tokens.lock();
            let Some(list) = tokens.get_mut(&pid.local()) else {
                return false;
            };
            let (gone, kept): (Vec<_>, Vec<_>) = list.drain(..).partition(|(n, _, _)| n == name);
            *list = kept;
            gone
        };
        let any = !removed.is_empty();
        self.forget_names(removed);
        any
    }

    pub(crate) fn whereis(&self, name: &str) -> Option<Pid> {
        self.registry.lock().first(name)
    }

    pub(crate) fn whereis_all(&self, name: &str) -> Vec<Pid> {
        self.registry.lock().all(name)
    }

    pub(crate) fn registered(&self) -> Vec<(String, usize)> {
        self.registry.lock().names()
    }

    /// A registry token appeared or was withdrawn. Runs on a Zenoh thread.
    pub(crate) fn on_registry(&self, sample: &Sample) {
        let prefix = format!("{}reg/", self.root);
        let parsed = sample
            .key_expr()
            .as_str()
            .strip_prefix(&prefix)
            .and_then(registry::parse_suffix);
        let mut registry = self.registry.lock();
        let Some((name, entry)) = parsed else {
            registry.malformed += 1;
            return;
        };
        match sample.kind() {
            SampleKind::Put => {
                let theirs = entry.pid.node() != self.id;
                if theirs && !self.policy.may_register(&name) {
                    drop(registry);
                    bump(&self.counts.unauthorised);
                    tracing::warn!(name, holder = %entry.pid, "ignored a registration the policy does not allow");
                    return;
                }
                let quarantined = theirs
                    && self.members.lock().membership.state(entry.pid.node())
                        == Some(MemberState::Quarantined);
                if quarantined {
                    return;
                }
                if let Some(holder) = registry.insert(name.clone(), entry) {
                    drop(registry);
                    tracing::warn!(name, %holder, refused = %entry.pid, "a name registered twice: the first holder keeps it");
                    let members = self.members.lock();
                    self.publish(
                        members,
                        Some(NodeEvent::NameConflict {
                            name,
                            holder,
                            refused: entry.pid,
                        }),
                    );
                }
            }
            SampleKind::Delete => registry.remove(&name, entry),
        }
    }

    /// Removes registrations of this node from the table, then withdraws their tokens. The
    /// tokens are dropped after the table's lock is released: Zenoh tells this node's own
    /// registry subscriber of the withdrawal synchronously, on this thread.
    pub(super) fn forget_names(&self, names: Vec<Registration>) {
        {
            let mut registry = self.registry.lock();
            for (name, entry, _) in &names {
                registry.remove(name, *entry);
            }
        }
        drop(names);
    }
}
