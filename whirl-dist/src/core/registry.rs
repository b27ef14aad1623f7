//! The cluster-wide registry on the node: registering names as liveliness tokens, and keeping
//! the local copy of every node's names from their tokens.
//!
//! A registration is a token under `whirl/<cluster>/reg/`, held by this node while the name is
//! registered; every node subscribes to those tokens and keeps the whole registry
//! ([`crate::registry`]), so a lookup never goes to the network. A node's names vanish with
//! its tokens, so with the node.

use std::sync::atomic::Ordering::Relaxed;

use crate::transport::Presence;

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
        let now = self.transport.wall_clock_ms();
        let ms = match self.last_stamp.fetch_update(Relaxed, Relaxed, |last| {
            Some(now.max(last.saturating_add(1)))
        }) {
            Ok(last) | Err(last) => now.max(last.saturating_add(1)),
        };
        let entry = RegEntry { ms, pid };
        let signature = match &self.auth {
            Some(auth) => Some(
                auth.sign_registration(name, entry)
                    .map_err(DistError::Credentials)?,
            ),
            None => None,
        };
        let key = format!(
            "{}reg/{}",
            self.root,
            registry::key_suffix(name, entry, signature.as_deref())
        );
        let token = self
            .transport
            .declare_token(&key)
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
    ///
    /// On a TLS node, a registration by another node counts only once its signature verifies
    /// with that node's certificate: any member can declare a token under any key. One that
    /// names a node not yet proven waits (bounded) until its hello verifies.
    pub(crate) fn on_registry(&self, key: &str, presence: Presence) {
        let prefix = format!("{}reg/", self.root);
        let parsed = key.strip_prefix(&prefix).and_then(registry::parse_suffix);
        let Some((name, entry, signature)) = parsed else {
            self.registry.lock().malformed += 1;
            return;
        };
        match presence {
            // This node's own registrations are listed by `register` and removed by
            // `unregister` (or the process's end): its tokens' news only echo that; any other
            // token naming this node is someone else's forgery (the other nodes count it: it
            // is unsigned, or signed by another key).
            _ if entry.pid.node() == self.id => {}
            Presence::Gone => self.registry.lock().remove(&name, entry),
            Presence::Present if self.auth.is_none() => self.list(name, entry),
            Presence::Present => match signature {
                Some(signature) => self.signed_registration(name, entry, &signature),
                None => self.forged_registration(&name, entry),
            },
        }
    }

    /// A registration by another node, signed: listed if the signature verifies, kept until
    /// the node proves itself if it has not yet.
    pub(super) fn signed_registration(&self, name: String, entry: RegEntry, signature: &[u8]) {
        let Some(auth) = &self.auth else { return };
        match auth.verify_registration(&name, entry, signature) {
            Some(true) => self.list(name, entry),
            Some(false) => self.forged_registration(&name, entry),
            None => auth.park(name, entry, signature.to_vec()),
        }
    }

    fn forged_registration(&self, name: &str, entry: RegEntry) {
        bump(&self.counts.unauthenticated);
        tracing::warn!(name, holder = %entry.pid, "ignored a registration its node did not sign");
    }

    /// Lists a registration this node accepts: the policy allows the name, its node is not
    /// quarantined; a second holder is reported as a conflict.
    fn list(&self, name: String, entry: RegEntry) {
        let theirs = entry.pid.node() != self.id;
        if theirs && !self.policy.may_register(&name) {
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
        let conflict = self.registry.lock().insert(name.clone(), entry);
        if let Some(holder) = conflict {
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
