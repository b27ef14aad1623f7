//! Principals: the unit of work seen from outside (a request, a connection, a session).
//!
//! All processes serving one principal share it, so schedulers and predicates can treat them
//! consistently across groups. A process spawned from a handler inherits its parent's
//! principal.
//!
//! The application-specific part of admission control, estimating what a message will cost
//! and what it is worth, lives here (Whirlwind's "template methods ... on the principal and
//! message classes"): a principal carries a base [utility](Principal::utility) and,
//! optionally, an [`Estimate`] that refines cost and utility per [`MessageType`].
//!
//! Layer 2: uses `isolation`.

use std::any::TypeId;
use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use crate::isolation::Isolated;

/// The type of a message, as estimators and predicates see it: compared by [`TypeId`], named
/// for logs.
///
/// ```
/// use whirl::admission::MessageType;
///
/// struct Search;
/// let t = MessageType::of::<Search>();
/// assert!(t.is::<Search>());
/// assert!(!t.is::<u32>());
/// assert!(t.name().ends_with("Search"));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct MessageType {
    id: TypeId,
    name: &'static str,
}

impl MessageType {
    /// The type `M`.
    pub fn of<M: ?Sized + 'static>() -> Self {
        MessageType {
            id: TypeId::of::<M>(),
            name: std::any::type_name::<M>(),
        }
    }

    /// Whether this is the type `M`.
    #[inline]
    pub fn is<M: ?Sized + 'static>(&self) -> bool {
        self.id == TypeId::of::<M>()
    }

    /// Its [`TypeId`], for maps keyed by message type.
    pub fn id(&self) -> TypeId {
        self.id
    }

    /// Its Rust name, for logs (not unique, not stable across compiler versions: compare with
    /// [`is`](MessageType::is) or [`id`](MessageType::id)).
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl PartialEq for MessageType {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for MessageType {}

impl std::hash::Hash for MessageType {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

/// Application hooks estimating what a message sent on behalf of a principal costs and what it
/// is worth. Both methods have defaults, so an implementation overrides only what it knows.
///
/// They run in the sender's thread inside message predicates: keep them cheap and
/// non-blocking.
///
/// An estimator travels with its principal inside every message and every child process that
/// carries it, so it must be [`Isolated`] (`#[derive(Isolated)]` on a type of your own): an
/// estimator holding a `Mutex` or an atomic would be state shared by every process serving the
/// principal. Estimates that learn belong in a process, or in the group's
/// [`MessagePredicate`](crate::admission::MessagePredicate), which may share state.
///
/// ```
/// use whirl::admission::{Estimate, MessageType};
/// use whirl::{Isolated, Message, Principal};
///
/// #[derive(Message)]
/// struct Search(String);
/// #[derive(Message)]
/// struct Read(u64);
///
/// /// Searches cost ten times a plain read and are worth less to us.
/// #[derive(Isolated)]
/// struct MailCosts;
///
/// impl Estimate for MailCosts {
///     fn cost(&self, _: &Principal, message: MessageType, message_cost: u64) -> u64 {
///         if message.is::<Search>() { message_cost * 10 } else { message_cost }
///     }
///     fn utility(&self, principal: &Principal, message: MessageType) -> f64 {
///         let base = principal.utility();
///         if message.is::<Search>() { base / 2.0 } else { base }
///     }
/// }
///
/// let gold = Principal::builder(7).priority(2).class(1).utility(5.0).estimator(MailCosts).build()?;
/// assert_eq!(gold.estimate_cost(MessageType::of::<Search>(), 3), 30);
/// assert_eq!(gold.estimate_utility(MessageType::of::<Search>()), 2.5);
/// assert_eq!(gold.estimate_utility(MessageType::of::<Read>()), 5.0);
/// # Ok::<(), whirl::PrincipalError>(())
/// ```
pub trait Estimate: Isolated + Sync {
    /// The estimated cost of handling a message of type `message` for `principal`, given the
    /// message's own estimate `message_cost` ([`Handles::cost`](crate::Handles::cost)).
    /// Default: `message_cost`.
    fn cost(&self, principal: &Principal, message: MessageType, message_cost: u64) -> u64 {
        let _ = (principal, message);
        message_cost
    }

    /// The estimated utility (value to the service) of handling a message of type `message`
    /// for `principal`. Default: the principal's base [`utility`](Principal::utility).
    fn utility(&self, principal: &Principal, message: MessageType) -> f64 {
        let _ = message;
        principal.utility()
    }
}

/// A cheaply cloned handle on a principal: an id, a priority, a class, a base utility and
/// optional cost/utility estimation hooks. Built with [`Principal::builder`].
///
/// ```
/// use whirl::admission::MessageType;
/// use whirl::Principal;
///
/// let session = Principal::builder(42).priority(3).class(1).utility(2.0).build()?;
/// let same = session.clone();
/// assert!(same.same_as(&session));
/// assert_eq!((session.id(), session.priority(), session.class()), (42, 3, 1));
/// // Without an estimator, a message's cost is its own estimate.
/// assert_eq!(session.estimate_cost(MessageType::of::<u8>(), 9), 9);
/// assert_eq!(session.estimate_utility(MessageType::of::<u8>()), 2.0);
/// # Ok::<(), whirl::PrincipalError>(())
/// ```
#[derive(Clone)]
pub struct Principal {
    inner: Arc<PrincipalInner>,
}

struct PrincipalInner {
    id: u64,
    priority: u8,
    class: u16,
    utility: f64,
    estimator: Option<Arc<dyn Estimate>>,
    /// Messages handled by processes serving this principal.
    handled: AtomicU64,
    /// Their total handling time, nanoseconds.
    handling_nanos: AtomicU64,
    /// Messages sent on its behalf that a group's predicate rejected.
    rejected: AtomicU64,
}

/// Why [`PrincipalBuilder::build`] refused a principal.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PrincipalError {
    /// A utility that is not a finite number of zero or more.
    #[error("a principal's utility must be a finite number, zero or more, not {0}")]
    Utility(f64),
}

/// Builds a [`Principal`]: `Principal::builder(id)`, then the parameters that differ from the
/// defaults (priority 0, class 0, utility 1.0, no estimator), then [`build`](Self::build).
#[must_use = "a builder does nothing until `build` is called"]
pub struct PrincipalBuilder {
    id: u64,
    priority: u8,
    class: u16,
    utility: f64,
    estimator: Option<Arc<dyn Estimate>>,
}

impl PrincipalBuilder {
    /// Its priority: higher is more important (default 0).
    pub fn priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// Its class, for class-based schedulers and predicates (default 0).
    pub fn class(mut self, class: u16) -> Self {
        self.class = class;
        self
    }

    /// Its base utility, the value of its work to the service (default 1.0): a finite number,
    /// zero or more ([`build`](Self::build) refuses any other).
    pub fn utility(mut self, utility: f64) -> Self {
        self.utility = utility;
        self
    }

    /// Hooks estimating the cost and utility of each message sent on its behalf.
    pub fn estimator(mut self, estimator: impl Estimate) -> Self {
        self.estimator = Some(Arc::new(estimator));
        self
    }

    /// The principal, or why its parameters are refused.
    pub fn build(self) -> Result<Principal, PrincipalError> {
        if !(self.utility.is_finite() && self.utility >= 0.0) {
            return Err(PrincipalError::Utility(self.utility));
        }
        Ok(Principal {
            inner: Arc::new(PrincipalInner {
                id: self.id,
                priority: self.priority,
                class: self.class,
                utility: self.utility,
                estimator: self.estimator,
                handled: AtomicU64::new(0),
                handling_nanos: AtomicU64::new(0),
                rejected: AtomicU64::new(0),
            }),
        })
    }
}

impl fmt::Debug for PrincipalBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrincipalBuilder")
            .field("id", &self.id)
            .field("priority", &self.priority)
            .field("class", &self.class)
            .field("utility", &self.utility)
            .field("estimator", &self.estimator.is_some())
            .finish()
    }
}

impl Principal {
    /// Starts building the principal the application knows as `id` (a session number, a
    /// connection number...).
    pub fn builder(id: u64) -> PrincipalBuilder {
        PrincipalBuilder {
            id,
            priority: 0,
            class: 0,
            utility: 1.0,
            estimator: None,
        }
    }

    /// The application's identifier for it (session number, connection number...).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Its priority: higher is more important.
    pub fn priority(&self) -> u8 {
        self.inner.priority
    }

    /// Its class, used by class-based schedulers and predicates.
    pub fn class(&self) -> u16 {
        self.inner.class
    }

    /// Its base utility (1.0 unless [set](PrincipalBuilder::utility) otherwise).
    pub fn utility(&self) -> f64 {
        self.inner.utility
    }

    /// The estimated cost of a message of type `message` whose own estimate is
    /// `message_cost`: the estimator's answer, or `message_cost` without one.
    pub fn estimate_cost(&self, message: MessageType, message_cost: u64) -> u64 {
        match &self.inner.estimator {
            Some(e) => e.cost(self, message, message_cost),
            None => message_cost,
        }
    }

    /// The estimated utility of a message of type `message`: the estimator's answer, or the
    /// base [`utility`](Principal::utility) without one.
    pub fn estimate_utility(&self, message: MessageType) -> f64 {
        match &self.inner.estimator {
            Some(e) => e.utility(self, message),
            None => self.inner.utility,
        }
    }

    /// Counts `messages` handled for this principal in one turn that took `handling`.
    ///
    /// The runtime calls it after each turn of a process serving this principal: two relaxed
    /// atomic adds on a line shared by every worker serving the principal.
    pub(crate) fn record_handled(&self, messages: u64, handling: Duration) {
        let nanos = u64::try_from(handling.as_nanos()).unwrap_or(u64::MAX);
        self.inner.handled.fetch_add(messages, Relaxed);
        self.inner.handling_nanos.fetch_add(nanos, Relaxed);
    }

    /// Messages handled so far by processes serving this principal, in every group
    /// (per-principal accounting for schedulers and predicates).
    pub fn handled(&self) -> u64 {
        self.inner.handled.load(Relaxed)
    }

    /// Total time spent in handlers for this principal so far.
    pub fn handling_time(&self) -> Duration {
        Duration::from_nanos(self.inner.handling_nanos.load(Relaxed))
    }

    /// Counts one message sent on this principal's behalf that a group's predicate rejected.
    pub(crate) fn record_rejected(&self) {
        self.inner.rejected.fetch_add(1, Relaxed);
    }

    /// Messages sent on this principal's behalf that a group's predicate rejected so far, in
    /// every group (those to processes serving it, and those posted on its behalf with
    /// [`on_behalf`](crate::request::Request::on_behalf)).
    pub fn rejected(&self) -> u64 {
        self.inner.rejected.load(Relaxed)
    }

    /// Whether two handles name the same principal.
    pub fn same_as(&self, other: &Principal) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal")
            .field("id", &self.inner.id)
            .field("priority", &self.inner.priority)
            .field("class", &self.inner.class)
            .field("utility", &self.inner.utility)
            .field("estimator", &self.inner.estimator.is_some())
            .field("handled", &self.handled())
            .finish()
    }
}

// SAFETY: a `Principal` is an `Arc` shared on purpose so schedulers can classify work
// consistently: its identity, priority, utility and estimator are immutable (the estimator is
// `Isolated`, see `Estimate`), and its two counters (handled, handling time) are written only by
// the runtime's workers, never by a process, which can only read them, like any statistic
// (invariant I8).
#[diagnostic::do_not_recommend]
unsafe impl Isolated for Principal {}
impl crate::isolation::Reply for Principal {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Double;
    // SAFETY: no data at all. (I8)
    unsafe impl Isolated for Double {}

    impl Estimate for Double {
        fn cost(&self, _: &Principal, _: MessageType, message_cost: u64) -> u64 {
            message_cost * 2
        }
    }

    fn t() -> MessageType {
        MessageType::of::<u32>()
    }

    #[test]
    fn defaults_without_estimator() {
        let p = Principal::builder(1)
            .priority(2)
            .class(3)
            .build()
            .expect("a valid principal");
        assert_eq!(p.utility(), 1.0);
        assert_eq!(p.estimate_cost(t(), 5), 5);
        assert_eq!(p.estimate_utility(t()), 1.0);
    }

    #[test]
    fn estimator_overrides_only_what_it_defines() {
        let p = Principal::builder(1)
            .priority(2)
            .class(3)
            .utility(4.0)
            .estimator(Double)
            .build()
            .expect("a valid principal");
        assert_eq!(p.estimate_cost(t(), 5), 10);
        // `utility` not overridden: the base utility.
        assert_eq!(p.estimate_utility(t()), 4.0);
        assert_eq!((p.id(), p.priority(), p.class()), (1, 2, 3));
    }

    #[test]
    fn accounting_is_shared_by_all_handles() {
        let p = Principal::builder(1).build().expect("a valid principal");
        let q = p.clone();
        p.record_handled(1, Duration::from_millis(2));
        q.record_handled(1, Duration::from_millis(3));
        assert_eq!((p.handled(), q.handled()), (2, 2));
        assert_eq!(p.handling_time(), Duration::from_millis(5));
    }

    #[test]
    fn a_utility_that_is_not_a_finite_number_of_zero_or_more_is_refused() {
        for bad in [f64::NAN, f64::INFINITY, -1.0] {
            let refused = Principal::builder(2).utility(bad).build();
            assert!(matches!(refused, Err(PrincipalError::Utility(_))), "{bad}");
        }
        let zero = Principal::builder(2).utility(0.0).build();
        assert_eq!(zero.map(|p| p.utility()), Ok(0.0));
    }

    #[test]
    fn message_types_compare_by_type_id() {
        struct A;
        assert_eq!(MessageType::of::<A>(), MessageType::of::<A>());
        assert_ne!(MessageType::of::<A>(), MessageType::of::<u32>());
    }
}
