//! How processes end: the exit reason, the failure that caused it, the notice monitors get.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use super::ProcessId;
use crate::isolation::{Isolated, Message};

/// Why a process terminated.
///
/// Non-exhaustive: match the variants you act on and treat the rest as "not a failure"
/// with [`ExitReason::is_failure`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum ExitReason {
    /// `complete()`, or the runtime shutting down: not an error.
    Normal,
    /// Stopped by its supervisor (OTP's `shutdown`): not an error, and not the process's own
    /// doing. A supervisor stops its children with it, and exits with it after an ordered
    /// shutdown; a transient child stopped this way is not restarted.
    Shutdown,
    /// Anything else: `fail()`, a handler `Err`, a panic, a linked failure.
    Failed(Failure),
}

impl ExitReason {
    /// Whether this is a failure (a *non-normal* termination in the paper's words);
    /// `Normal` and `Shutdown` are not.
    pub fn is_failure(&self) -> bool {
        matches!(self, ExitReason::Failed(_))
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Normal => f.write_str("normal"),
            ExitReason::Shutdown => f.write_str("shutdown"),
            ExitReason::Failed(failure) => write!(f, "failed: {failure}"),
        }
    }
}

/// What made a process fail.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub enum FailureKind {
    /// The process called `fail()` or a handler returned `Err`.
    Error,
    /// A handler or hook panicked; the panic was contained.
    Panic,
    /// A process this one monitors failed, and this one is not a system process.
    Linked(ProcessId),
    /// Another process of this one's group failed, and the group shares state
    /// ([`GroupBuilder::shares_state`](crate::GroupBuilder::shares_state)): the state they
    /// share may be left inconsistent, so the group fails together. Names the process that
    /// failed first; the reason is its reason.
    SharedState(ProcessId),
}

/// A process failure: a kind, a human-readable reason, and the chain of causes.
///
/// Any `std::error::Error` converts into it, so handlers can use `?`; the error's
/// [`source`](std::error::Error::source) chain is kept as [`causes`](Failure::causes), and
/// the alternate format (`{:#}`) prints it: `"cannot load config: No such file or directory"`.
/// The chain is kept as text, not as the error values: a failure is copied into every
/// monitor's [`Down`] notice, and an error value may hold state no two processes may share
/// (invariant I8).
///
/// ```
/// use whirl::Failure;
///
/// #[derive(Debug)]
/// struct LoadConfig(std::io::Error);
/// impl std::fmt::Display for LoadConfig {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("cannot load config")
///     }
/// }
/// impl std::error::Error for LoadConfig {
///     fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
///         Some(&self.0)
///     }
/// }
///
/// let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
/// let failure = Failure::from(LoadConfig(io));
/// assert_eq!(failure.reason(), "cannot load config");
/// assert_eq!(failure.causes().collect::<Vec<_>>(), ["no such file"]);
/// assert_eq!(format!("{failure:#}"), "cannot load config: no such file");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Failure {
    kind: FailureKind,
    /// Behind one thin pointer: a failure travels inside every `ExitReason` a turn returns,
    /// so it is kept small (24 bytes).
    text: Arc<Text>,
}

/// A failure's words: its reason and the error's sources, outermost first.
#[derive(PartialEq, Eq)]
struct Text {
    reason: Box<str>,
    causes: Box<[Box<str>]>,
}

impl Failure {
    /// A failure with the given reason.
    pub fn new(reason: impl Into<Cow<'static, str>>) -> Self {
        Failure {
            kind: FailureKind::Error,
            text: Arc::new(Text {
                reason: reason.into().into(),
                causes: Box::default(),
            }),
        }
    }

    pub(crate) fn with_kind(kind: FailureKind, reason: impl AsRef<str>) -> Self {
        Failure {
            kind,
            text: Arc::new(Text {
                reason: reason.as_ref().into(),
                causes: Box::default(),
            }),
        }
    }

    /// What caused it.
    pub fn kind(&self) -> &FailureKind {
        &self.kind
    }

    /// The reason, as given or as the panic payload said.
    pub fn reason(&self) -> &str {
        &self.text.reason
    }

    /// The causes of the error this failure was made from (its
    /// [`source`](std::error::Error::source) chain), outermost first; empty for a failure made
    /// with [`Failure::new`] or from a panic.
    pub fn causes(&self) -> impl Iterator<Item = &str> + '_ {
        self.text.causes.iter().map(|c| &**c)
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Failure({:?}: {:?}", self.kind, self.reason())?;
        for cause in self.causes() {
            write!(f, ", caused by {cause:?}")?;
        }
        f.write_str(")")
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FailureKind::Error => f.write_str(self.reason()),
            FailureKind::Panic => write!(f, "panicked: {}", self.reason()),
            FailureKind::Linked(id) => write!(f, "linked process {id} failed: {}", self.reason()),
            FailureKind::SharedState(id) => write!(
                f,
                "process {id} of this group, which shares state, failed: {}",
                self.reason()
            ),
        }?;
        if f.alternate() {
            for cause in self.causes() {
                write!(f, ": {cause}")?;
            }
        }
        Ok(())
    }
}

impl<E: std::error::Error> From<E> for Failure {
    fn from(err: E) -> Self {
        let mut causes = Vec::new();
        let mut source = err.source();
        while let Some(cause) = source {
            causes.push(cause.to_string().into_boxed_str());
            source = cause.source();
        }
        Failure {
            kind: FailureKind::Error,
            text: Arc::new(Text {
                reason: err.to_string().into(),
                causes: causes.into(),
            }),
        }
    }
}

/// A failure serializes as `{"kind": ..., "reason": ..., "causes": [...]}`.
#[cfg(feature = "serde")]
impl serde::Serialize for Failure {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Failure", 3)?;
        s.serialize_field("kind", &self.kind)?;
        s.serialize_field("reason", self.reason())?;
        s.serialize_field("causes", &*self.text.causes)?;
        s.end()
    }
}

/// The termination notice a monitoring process receives.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Down {
    /// The process that terminated.
    pub id: ProcessId,
    /// Why.
    pub reason: ExitReason,
}

impl Down {
    /// The notice that process `id` terminated with `reason`: what the runtime sends; for
    /// tests of system processes, which compare what they receive with it.
    pub fn new(id: ProcessId, reason: ExitReason) -> Self {
        Down { id, reason }
    }
}

// SAFETY: `ExitReason`, `Failure`, `FailureKind` and `Down` hold ids and immutable
// text behind an `Arc` (reason and causes); nothing in them can be mutated once built (invariant I8).
#[diagnostic::do_not_recommend]
unsafe impl Isolated for ExitReason {}
impl crate::isolation::Reply for ExitReason {}
// SAFETY: as above. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for Failure {}
impl crate::isolation::Reply for Failure {}
// SAFETY: as above. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for FailureKind {}
// SAFETY: as above. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for Down {}
impl crate::isolation::Reply for Down {}

/// Termination notices are the messages system processes receive.
impl Message for Down {
    const __IS_DOWN: bool = true;
}
