//! Remote spawn on the node: the factories it offers, and the `Spawn` frames that run them.
//!
//! A factory is registered under a name (its tag); a `Spawn` frame names the factory, carries
//! its encoded arguments and the principal it runs for, and is answered with a `Reply`: the new
//! process's local id, `Incompatible` for arguments that do not decode, `NoProcess` for an
//! unknown factory, or the factory's failure.

use std::sync::Arc;

use super::Core;
use crate::counts::bump;
use crate::dispatch::{FactoryFn, FactoryResult};
use crate::remote::tag_of;
use crate::wire::{self, BounceReason, Header, Outcome, WirePrincipal};
use crate::{DistError, NodeId};

impl Core {
    pub(crate) fn add_factory(
        &self,
        name: &'static str,
        factory: FactoryFn,
    ) -> Result<(), DistError> {
        self.claim_tag(name)?;
        self.factories.write().insert(tag_of(name), factory);
        Ok(())
    }

    pub(super) fn on_spawn(
        self: &Arc<Self>,
        from: NodeId,
        seq: u64,
        req: u64,
        factory: u64,
        principal: Option<WirePrincipal>,
        args: &[u8],
    ) {
        let name = self.tags.lock().get(&factory).copied();
        let peer = self.peer_name(from);
        let allowed =
            from == self.id || name.is_some_and(|name| self.policy.may_call(name, peer.as_deref()));
        let known = self.factories.read().contains_key(&factory);
        let result = match allowed {
            false if !known => None,
            false => {
                bump(&self.counts.unauthorised);
                tracing::warn!(%from, peer = peer.as_deref(), factory = name, "refused a spawn the policy does not allow");
                Some(FactoryResult::Unauthorised)
            }
            true => {
                let factories = self.factories.read();
                factories
                    .get(&factory)
                    .map(|f| f(args, principal.and_then(|p| self.principal(from, p))))
            }
        };
        let (outcome, payload) = match result {
            None => (Outcome::Bounced(BounceReason::NoProcess), Vec::new()),
            Some(FactoryResult::Unauthorised) => {
                (Outcome::Bounced(BounceReason::Unauthorised), Vec::new())
            }
            Some(FactoryResult::BadArguments) => {
                (Outcome::Bounced(BounceReason::Incompatible), Vec::new())
            }
            Some(FactoryResult::Failed(why)) => (Outcome::Failed, why.into_bytes()),
            Some(FactoryResult::Spawned(local)) => (
                Outcome::Answered,
                postcard::to_stdvec(&local).unwrap_or_default(),
            ),
        };
        match outcome {
            Outcome::Answered => bump(&self.counts.delivered),
            _ => bump(&self.counts.bounced),
        }
        let header = Header::Reply { req, outcome, seq };
        self.send_control(from, wire::encode_raw(self.id, &header, &payload));
    }
}
