//! Traces that cross nodes. A post or an ask made inside a span carries, with feature
//! `opentelemetry`, that span's OpenTelemetry context (trace id, span id, flags: 25 bytes) in
//! its frame header; the receiving node delivers it inside a `remote` span whose parent is
//! that context, and the runtime's message spans (`whirl::message` at `DEBUG`; see
//! `whirl`'s tracing docs) take it from there, so one trace runs from the first process to
//! the last, whichever node each runs on.
//!
//! Both ends act only while the target `whirl::message` is enabled at `DEBUG`. Without the
//! feature, frames carry no context (the field is empty) and a remote message's spans start
//! a trace of their own on the receiving node, under a `remote` span that names the sender.
//! The context is the peer's word: it only parents spans (a peer can at worst attach its
//! messages to a trace id of its choosing), and it is bounded like the rest of the header.

use serde::{Deserialize, Serialize};

use crate::NodeId;

/// An OpenTelemetry span context as it travels in a frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WireTrace {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    pub(crate) flags: u8,
}

/// Whether message spans are wanted (the runtime's switch: `whirl::message` at `DEBUG`).
fn wanted() -> bool {
    tracing::enabled!(target: "whirl::message", tracing::Level::DEBUG)
}

/// The context of the current span, for a frame about to be sent.
pub(crate) fn current() -> Option<WireTrace> {
    if !wanted() {
        return None;
    }
    context_of_current()
}

#[cfg(feature = "opentelemetry")]
fn context_of_current() -> Option<WireTrace> {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    let cx = tracing::Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| WireTrace {
        trace_id: sc.trace_id().to_bytes(),
        span_id: sc.span_id().to_bytes(),
        flags: sc.trace_flags().to_u8(),
    })
}

#[cfg(not(feature = "opentelemetry"))]
fn context_of_current() -> Option<WireTrace> {
    None
}

/// The span a message from `from` is delivered in, parented on the sender's context when it
/// came with one; `None` when message spans are not wanted.
pub(crate) fn remote_span(from: NodeId, trace: Option<WireTrace>) -> Option<tracing::Span> {
    if !wanted() {
        return None;
    }
    let span = tracing::debug_span!(target: "whirl::message", parent: None, "remote", from = %from);
    parent_on(&span, trace);
    Some(span)
}

#[cfg(feature = "opentelemetry")]
fn parent_on(span: &tracing::Span, trace: Option<WireTrace>) {
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    let Some(t) = trace else {
        return;
    };
    let sc = SpanContext::new(
        TraceId::from_bytes(t.trace_id),
        SpanId::from_bytes(t.span_id),
        TraceFlags::new(t.flags),
        true,
        TraceState::default(),
    );
    if sc.is_valid() {
        // Refused only by a subscriber without the OpenTelemetry layer: nothing to parent.
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(sc));
    }
}

#[cfg(not(feature = "opentelemetry"))]
fn parent_on(_: &tracing::Span, _: Option<WireTrace>) {}
