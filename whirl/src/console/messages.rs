//! The messages between the console's processes: what the sampler publishes to the hub,
//! what connections ask of it, and what it answers. Kept apart from both so that neither
//! depends on the other's type: the hub answers any `Recipient<ConnMsg>`.

use std::sync::Arc;

use crate::prelude::*;

/// One sample, as text.
#[derive(Clone, Debug, Isolated)]
pub(crate) struct Published {
    /// `/api/snapshot`.
    pub(crate) snapshot: Arc<str>,
    /// The `data:` of the `tick` event.
    pub(crate) tick: Arc<str>,
    /// `/metrics` in the classic Prometheus text format.
    pub(crate) metrics: Arc<str>,
    /// `/metrics` in OpenMetrics text, for scrapers that ask for it.
    pub(crate) open_metrics: Arc<str>,
}

/// What a connection asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Isolated)]
pub(crate) enum Wanted {
    Snapshot,
    /// In the classic text format.
    Metrics,
    OpenMetrics,
}

/// What the hub is told.
#[derive(Message, Debug)]
pub(crate) enum HubMsg {
    /// A new sample, from the sampler.
    Publish(Published),
    /// Send me every tick from now on.
    Subscribe(Recipient<ConnMsg>),
    /// Answer me with the latest snapshot or metrics.
    Fetch(Wanted, Recipient<ConnMsg>),
    /// The console is stopping.
    Stop,
}

/// What a connection is told, besides its socket's events.
#[derive(Message, Debug)]
pub(crate) enum ConnMsg {
    /// The hub's answer to a fetch (`None` before the first sample).
    Fetched(Wanted, Option<Arc<str>>),
    /// A sample for the event stream.
    Tick(Arc<str>),
    /// The hub has as many subscribers as it serves.
    Refused,
}
