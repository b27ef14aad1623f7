//! What a node needs from the network, as a trait: publishing bytes on a key, subscribing to a
//! key, and liveliness tokens. [`ZenohTransport`] is the production implementation; a
//! simulated network implements the same trait, so the whole protocol above it (links,
//! handshakes, membership, migration) runs unchanged on either.
//!
//! The contract a [`Transport`] keeps, which the protocol relies on:
//!
//! * **Per-publisher order.** The payloads one [`Publisher`] puts reach each subscriber of its
//!   key in the order they were put, or not at all once the link between the two nodes broke
//!   (which also withdraws the sender's tokens at the receiver: the sender is Down there).
//!   Nothing is promised between two publishers, or between a publisher and
//!   [`Transport::put`]; [`Class`] only says what should go first when both are queued.
//! * **Tokens.** A token is present at a watcher from when it is declared until it is
//!   undeclared or its declarer's link to the watcher is lost. A watcher is first told of the
//!   tokens its endpoint knows when it starts watching (`history`, delivered as it is declared),
//!   then of each change, for each key in the order of the changes. A token's appearance
//!   reaches an endpoint before any payload its declarer put afterwards. A node declares its
//!   watchers before its own token, so a peer that sees the token and posts at once is
//!   already known when its first frame arrives.
//! * **Callbacks** run on the transport's threads (or the simulator's); they must not block on
//!   the network and must not declare or undeclare anything (the node defers such work).

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use zenoh::qos::{CongestionControl, Priority};
use zenoh::sample::SampleKind;
use zenoh::{Session, Wait};

/// An error from a [`Transport`]: the underlying network's own error, kept as the source.
#[derive(Debug)]
pub struct TransportError(Box<dyn StdError + Send + Sync + 'static>);

impl TransportError {
    /// Wraps the network's own error.
    pub fn new(source: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        TransportError(source.into())
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl StdError for TransportError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.0.source()
    }
}

/// What a payload is, which decides its priority and what happens when the way out is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// A hello: ahead of everything, waits for room rather than being dropped.
    Hello,
    /// Acknowledgements, bounces, replies, protocol notices: ahead of data, waits for room.
    Control,
    /// Messages: waits for room (never dropped once accepted).
    Data,
    /// An answer that may be dropped when the way out is full (a bounce to a quarantined node).
    Droppable,
}

/// A change of a watched token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    /// The token was declared (or was present when watching began).
    Present,
    /// The token was undeclared, or its declarer was lost.
    Gone,
}

/// Called with each payload put on a subscribed key.
pub type OnPayload = Box<dyn Fn(&[u8]) + Send + Sync + 'static>;

/// Called with each change of a watched token: its key and whether it is present.
pub type OnToken = Box<dyn Fn(&str, Presence) + Send + Sync + 'static>;

/// A declared subscriber, watcher or token; dropping it undeclares it too, without reporting
/// an error.
pub trait Declared: Send + Sync {
    /// Undeclares it now, reporting what went wrong.
    fn undeclare(self: Box<Self>) -> Result<(), TransportError>;
}

/// Puts payloads on one key, in order ([`Transport::publisher`]).
pub trait Publisher: Send + Sync {
    /// Puts one payload. May wait while the way out is full (classes that wait).
    fn put(&self, payload: Vec<u8>) -> Result<(), TransportError>;
}

/// The network under a node: see the [module documentation](self) for the contract.
pub trait Transport: Send + Sync + 'static {
    /// A publisher for `key`, of one class.
    fn publisher(&self, key: &str, class: Class) -> Result<Box<dyn Publisher>, TransportError>;
    /// Puts one payload on `key` without a publisher.
    fn put(&self, key: &str, payload: Vec<u8>, class: Class) -> Result<(), TransportError>;
    /// Calls `on_payload` with every payload put on `key` from now on.
    fn subscribe(
        &self,
        key: &str,
        on_payload: OnPayload,
    ) -> Result<Box<dyn Declared>, TransportError>;
    /// Declares a liveliness token on `key`.
    fn declare_token(&self, key: &str) -> Result<Box<dyn Declared>, TransportError>;
    /// Calls `on_token` for every token whose key starts with `prefix`: those present now,
    /// then every change.
    fn watch_tokens(
        &self,
        prefix: &str,
        on_token: OnToken,
    ) -> Result<Box<dyn Declared>, TransportError>;
    /// A node id for a node without a certificate, if the transport chooses them (a
    /// simulation, so that runs replay); `None` (the default) for a fresh random one.
    fn plaintext_node_id(&self) -> Option<u128> {
        None
    }
    /// Milliseconds since the Unix epoch, as stamped on registrations: the system's clock,
    /// or a simulation's (so that a run replays).
    fn wall_clock_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
    /// The monotonic clock the node reads its deadlines on (asks, probes, acknowledgements):
    /// the system's, or a simulation's, which moves only when the simulator says (so that
    /// timeouts fire at the same step of every replay).
    fn clock(&self) -> Arc<dyn whirl::time::Clock> {
        Arc::new(whirl::time::SystemClock)
    }
    /// Closes the transport: nothing more is sent or received, and the node's tokens are
    /// withdrawn everywhere.
    fn close(&self) -> Result<(), TransportError>;
}

/// The production transport: one Zenoh session.
pub struct ZenohTransport {
    session: Session,
}

impl ZenohTransport {
    /// Opens a Zenoh session with `config`.
    pub fn open(config: zenoh::Config) -> Result<Arc<ZenohTransport>, zenoh::Error> {
        let session = zenoh::open(config).wait()?;
        Ok(Arc::new(ZenohTransport { session }))
    }
}

fn priority(class: Class) -> Priority {
    match class {
        Class::Hello => Priority::RealTime,
        Class::Control => Priority::InteractiveHigh,
        Class::Data | Class::Droppable => Priority::Data,
    }
}

fn congestion(class: Class) -> CongestionControl {
    match class {
        Class::Droppable => CongestionControl::Drop,
        _ => CongestionControl::Block,
    }
}

struct ZenohPublisher(zenoh::pubsub::Publisher<'static>);

impl Publisher for ZenohPublisher {
    fn put(&self, payload: Vec<u8>) -> Result<(), TransportError> {
        self.0.put(payload).wait().map_err(TransportError)
    }
}

/// A Zenoh declaration, undeclared by [`Declared::undeclare`] or when dropped.
enum ZenohDeclared {
    Subscriber(zenoh::pubsub::Subscriber<()>),
    Token(zenoh::liveliness::LivelinessToken),
}

impl Declared for ZenohDeclared {
    fn undeclare(self: Box<Self>) -> Result<(), TransportError> {
        match *self {
            ZenohDeclared::Subscriber(subscriber) => subscriber.undeclare().wait(),
            ZenohDeclared::Token(token) => token.undeclare().wait(),
        }
        .map_err(TransportError)
    }
}

impl Transport for ZenohTransport {
    fn publisher(&self, key: &str, class: Class) -> Result<Box<dyn Publisher>, TransportError> {
        let publisher = self
            .session
            .declare_publisher(key.to_owned())
            .congestion_control(congestion(class))
            .priority(priority(class))
            .wait()
            .map_err(TransportError)?;
        Ok(Box::new(ZenohPublisher(publisher)))
    }

    fn put(&self, key: &str, payload: Vec<u8>, class: Class) -> Result<(), TransportError> {
        self.session
            .put(key.to_owned(), payload)
            .congestion_control(congestion(class))
            .priority(priority(class))
            .wait()
            .map_err(TransportError)
    }

    fn subscribe(
        &self,
        key: &str,
        on_payload: OnPayload,
    ) -> Result<Box<dyn Declared>, TransportError> {
        let subscriber = self
            .session
            .declare_subscriber(key.to_owned())
            .callback(move |sample| on_payload(&sample.payload().to_bytes()))
            .wait()
            .map_err(TransportError)?;
        Ok(Box::new(ZenohDeclared::Subscriber(subscriber)))
    }

    fn declare_token(&self, key: &str) -> Result<Box<dyn Declared>, TransportError> {
        let token = self
            .session
            .liveliness()
            .declare_token(key.to_owned())
            .wait()
            .map_err(TransportError)?;
        Ok(Box::new(ZenohDeclared::Token(token)))
    }

    fn watch_tokens(
        &self,
        prefix: &str,
        on_token: OnToken,
    ) -> Result<Box<dyn Declared>, TransportError> {
        let subscriber = self
            .session
            .liveliness()
            .declare_subscriber(format!("{prefix}**"))
            .history(true)
            .callback(move |sample| {
                let presence = match sample.kind() {
                    SampleKind::Put => Presence::Present,
                    SampleKind::Delete => Presence::Gone,
                };
                on_token(sample.key_expr().as_str(), presence)
            })
            .wait()
            .map_err(TransportError)?;
        Ok(Box::new(ZenohDeclared::Subscriber(subscriber)))
    }

    fn close(&self) -> Result<(), TransportError> {
        self.session.close().wait().map_err(TransportError)
    }
}
