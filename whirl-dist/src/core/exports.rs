//! What this node offers: exported processes, the tags of its message types, and the bounce
//! routes of its addresses.
//!
//! An export maps a local process id to how to post (or ask) each message type it accepts,
//! by tag; the receive path looks it up for every data frame. When the process ends, its
//! export, its names and its remote watchers are withdrawn and told. A bounce route is
//! registered by an address with a bounce handler and kept while an address uses it
//! ([`RouteGuard`]).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::{Core, RouteFn, RouteGuard};
use crate::dispatch::Export;
use crate::remote::tag_of;
use crate::wire::{self, Header, RemoteExit};
use crate::DistError;

impl Core {
    /// Records that `name` is this node's tag for its hash; refuses a different name with the
    /// same hash.
    pub(crate) fn claim_tag(&self, name: &'static str) -> Result<(), DistError> {
        let mut tags = self.tags.lock();
        match tags.entry(tag_of(name)) {
            std::collections::hash_map::Entry::Occupied(e) if *e.get() != name => {
                Err(DistError::TagCollision {
                    first: e.get(),
                    second: name,
                })
            }
            std::collections::hash_map::Entry::Occupied(_) => Ok(()),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(name);
                Ok(())
            }
        }
    }

    /// Installs (or replaces) the export of `local`; returns it.
    pub(crate) fn install_export(&self, local: u64, export: Export) -> Arc<Export> {
        let export = Arc::new(export);
        self.exports.write().insert(local, Arc::clone(&export));
        export
    }

    /// The export of local process `local`.
    pub(crate) fn export_of(&self, local: u64) -> Option<Arc<Export>> {
        self.exports.read().get(&local).cloned()
    }

    pub(crate) fn remove_export(&self, local: u64) -> bool {
        self.exports.write().remove(&local).is_some()
    }

    /// Local process `local` ended: withdraw its export and its names, tell its watchers.
    /// Runs on the thread that ended it (a worker, usually): short locks and queued frames.
    pub(crate) fn process_ended(self: &Arc<Self>, local: u64, reason: &whirl::ExitReason) {
        self.exports.write().remove(&local);
        if self.any_moves.load(Relaxed) && self.moves.lock().is_moving(local) {
            // Handed over: its watchers and names go with it (`migrate.rs`).
            return;
        }
        let watchers = self.watches.lock().ended(local);
        let exit = RemoteExit::of(reason);
        for w in watchers {
            let header = Header::Down {
                mref: w.mref,
                reason: exit.clone(),
            };
            self.send_control(w.node, wire::encode_raw(self.id, &header, &[]));
        }
        let names = self.tokens.lock().remove(&local).unwrap_or_default();
        self.forget_names(names);
    }

    pub(crate) fn add_route(self: &Arc<Self>, route: RouteFn) -> Arc<RouteGuard> {
        let id = self.next_route.fetch_add(1, Relaxed);
        self.routes.write().insert(id, route);
        Arc::new(RouteGuard {
            core: Arc::downgrade(self),
            id,
        })
    }
}
