//! Traces across processes: the span a message was posted from travels with it, and the
//! receiver handles it inside a span of its own whose parent is that one, so a request's
//! trace shows every process it touched (and, with `tracing-opentelemetry`, one trace id from
//! the first process to the last).
//!
//! Both halves are off unless a subscriber enables the target `whirl::message` at `DEBUG`
//! (for example `EnvFilter::new("info,whirl::message=debug")`): then a post made inside a
//! span keeps a handle on it (one allocation: the message's inbox slot holds one word for
//! it), and each message is handled in a `message` span (`process`, `process_type`, `group`,
//! `principal`, `message`) entered around its handler. When the target is disabled, a post
//! pays one cached interest check and the slot's word stays empty; nothing is created at the
//! receiver. A handler that fails leaves its span to the turn's end, so the failure's event
//! is emitted inside it.
//!
//! The span a message was posted from stays open until the message is handled (its handle
//! keeps it alive), as an OpenTelemetry parent must be known when the child starts.

use tracing::Span;

/// Whether message spans are wanted (`whirl::message` at `DEBUG`).
#[inline]
pub(crate) fn message_spans() -> bool {
    tracing::enabled!(target: "whirl::message", tracing::Level::DEBUG)
}

/// A message in an inbox, with the span it was posted from.
pub(crate) struct Envelope<M> {
    pub(crate) msg: M,
    pub(crate) from: SentFrom,
}

impl<M> Envelope<M> {
    /// `msg`, posted now, from the current span if message spans are wanted.
    #[inline]
    pub(crate) fn here(msg: M) -> Self {
        Envelope {
            msg,
            from: SentFrom::here(),
        }
    }
}

/// The span a message was posted from, if any was captured: one word.
pub(crate) struct SentFrom(Option<Box<Span>>);

impl SentFrom {
    #[inline]
    fn here() -> SentFrom {
        if message_spans() {
            SentFrom::capture()
        } else {
            SentFrom(None)
        }
    }

    #[cold]
    #[inline(never)]
    fn capture() -> SentFrom {
        let span = Span::current();
        SentFrom((!span.is_none()).then(|| Box::new(span)))
    }

    /// The span, to parent the receiver's; `None` if the post was made outside any span.
    pub(crate) fn into_span(self) -> Option<Span> {
        self.0.map(|span| *span)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_costs_one_word_beside_its_message() {
        assert_eq!(
            std::mem::size_of::<SentFrom>(),
            std::mem::size_of::<usize>()
        );
    }

    #[test]
    fn nothing_is_captured_without_a_subscriber() {
        let _outside = tracing::info_span!("outside").entered();
        assert!(Envelope::here(1u8).from.into_span().is_none());
    }
}
