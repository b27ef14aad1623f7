//! The hub: the process that holds the latest sample and the event-stream subscribers. The
//! sampler publishes to it; connection processes fetch from it and subscribe to it. It holds
//! only immutable text and addresses.

use std::sync::Arc;

use super::messages::{ConnMsg, HubMsg, Published, Wanted};
use crate::prelude::*;

/// See the [module docs](self).
#[process]
pub(crate) struct Hub {
    latest: Option<Published>,
    subscribers: Vec<Recipient<ConnMsg>>,
    max_subscribers: usize,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("subscribers", &self.subscribers.len())
            .finish_non_exhaustive()
    }
}

impl Hub {
    pub(crate) fn new(max_subscribers: usize) -> Self {
        Hub {
            latest: None,
            subscribers: Vec::new(),
            max_subscribers,
        }
    }
}

#[process]
impl Hub {
    #[handle]
    fn message(&mut self, msg: HubMsg, ctx: &mut Ctx<Self>) {
        match msg {
            HubMsg::Publish(published) => {
                // A subscriber that is gone, or whose inbox refuses, is dropped.
                self.subscribers
                    .retain(|s| s.post(ConnMsg::Tick(Arc::clone(&published.tick))).is_ok());
                self.latest = Some(published);
            }
            HubMsg::Subscribe(conn) => {
                if self.subscribers.len() >= self.max_subscribers {
                    let _ = conn.post(ConnMsg::Refused);
                } else {
                    if let Some(latest) = &self.latest {
                        let _ = conn.post(ConnMsg::Tick(Arc::clone(&latest.tick)));
                    }
                    self.subscribers.push(conn);
                }
            }
            HubMsg::Fetch(wanted, conn) => {
                let body = self.latest.as_ref().map(|p| match wanted {
                    Wanted::Snapshot => Arc::clone(&p.snapshot),
                    Wanted::Metrics => Arc::clone(&p.metrics),
                    Wanted::OpenMetrics => Arc::clone(&p.open_metrics),
                });
                let _ = conn.post(ConnMsg::Fetched(wanted, body));
            }
            HubMsg::Stop => ctx.complete(),
        }
    }
}
