//! Traces across processes, exported through OpenTelemetry (`tracing-opentelemetry` into the
//! SDK's in-memory exporter), as a service would export them to an OTLP collector:
//!
//! * a request posted from inside a span is handled, three processes down, in spans of one
//!   trace, each the child of the span its message was posted from;
//! * each span names its process (one spelling: `<id>`), the process type, the group and the
//!   message type;
//! * a handler's failure is one event, with structured fields, inside the span of the message
//!   whose handler failed.
//!
//! The subscriber is global (handlers run on worker threads), so the scenarios share one
//! test.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use opentelemetry::trace::{SpanId, TraceId, TracerProvider as _};
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tracing_subscriber::layer::SubscriberExt;
use whirl::prelude::*;

#[derive(Message)]
struct Job(u32);

#[derive(Message)]
struct Fail;

#[process]
struct Back {
    seen: u32,
}

#[process]
impl Back {
    #[handle]
    fn job(&mut self, Job(n): Job) {
        self.seen += n;
        tracing::info!(n, "back end did the job");
    }

    #[handle]
    fn fail(&mut self, _: Fail) -> Result<(), Failure> {
        Err(Failure::new("the disk is full"))
    }
}

#[process]
struct Relay<P: Process + Handles<Job> + Handles<Fail>> {
    next: Addr<P>,
}

#[process]
impl<P: Process + Handles<Job> + Handles<Fail>> Relay<P> {
    #[handle]
    fn job(&mut self, job: Job) {
        let _ = self.next.post(job);
    }

    #[handle]
    fn fail(&mut self, fail: Fail) {
        let _ = self.next.post(fail);
    }
}

fn exporter() -> &'static (InMemorySpanExporter, SdkTracerProvider) {
    static OTEL: OnceLock<(InMemorySpanExporter, SdkTracerProvider)> = OnceLock::new();
    OTEL.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new(
                "info,whirl::message=debug",
            ))
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("whirl-tests")));
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        (exporter, provider)
    })
}

/// The finished spans named `name`, waiting until there are `count` of them.
fn finished(name: &str, count: usize) -> Vec<SpanData> {
    let (exporter, provider) = exporter();
    let start = Instant::now();
    loop {
        let _ = provider.force_flush();
        let spans: Vec<SpanData> = exporter
            .get_finished_spans()
            .expect("the exporter answers")
            .into_iter()
            .filter(|s| s.name == name)
            .collect();
        if spans.len() >= count || start.elapsed() > Duration::from_secs(10) {
            return spans;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| match &kv.value {
            Value::String(s) => s.as_str().to_owned(),
            other => other.to_string(),
        })
}

#[test]
fn a_request_is_traced_through_every_process_it_touches() {
    let (exporter, _) = exporter();
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let back = rt.spawn(Back { seen: 0 });
    let middle = rt.spawn(Relay { next: back.clone() });
    let front = rt.spawn(Relay {
        next: middle.clone(),
    });

    // One request, posted from inside its own span.
    let (trace_id, request_id): (TraceId, SpanId) = {
        let request = tracing::info_span!("request", path = "/orders");
        let _inside = request.enter();
        front.post(Job(3)).expect("accepted");
        // A post outside the request's span starts nothing of the request's.
        drop(_inside);
        drop(request);
        rt.block_until_idle();
        let requests = finished("request", 1);
        assert_eq!(requests.len(), 1);
        (
            requests[0].span_context.trace_id(),
            requests[0].span_context.span_id(),
        )
    };
    let messages = finished("message", 3);
    assert_eq!(messages.len(), 3, "one span per message: {messages:#?}");
    let of = |addr: whirl::ProcessId| {
        messages
            .iter()
            .find(|s| attribute(s, "process") == Some(addr.to_string()))
            .unwrap_or_else(|| panic!("no span of {addr} in {messages:#?}"))
    };
    let (f, m, b) = (of(front.id()), of(middle.id()), of(back.id()));
    for span in [f, m, b] {
        assert_eq!(
            span.span_context.trace_id(),
            trace_id,
            "one trace: {span:#?}"
        );
        assert_eq!(
            attribute(span, "message").as_deref(),
            Some(std::any::type_name::<Job>())
        );
        assert_eq!(attribute(span, "group").as_deref(), Some("default"));
    }
    assert_eq!(
        f.parent_span_id, request_id,
        "front handles the request's post"
    );
    assert_eq!(
        m.parent_span_id,
        f.span_context.span_id(),
        "middle, front's"
    );
    assert_eq!(b.parent_span_id, m.span_context.span_id(), "back, middle's");
    assert!(attribute(b, "process_type").is_some_and(|t| t.ends_with("Back")));
    assert!(
        b.events.iter().any(|e| e.name == "back end did the job"),
        "the handler's own events are in its span: {b:#?}"
    );

    // A failure: one structured event, inside the failing message's span.
    exporter.reset();
    {
        let request = tracing::info_span!("failing request");
        let _inside = request.enter();
        front.post(Fail).expect("accepted");
    }
    rt.block_until_idle();
    let messages = finished("message", 3);
    let failed = messages
        .iter()
        .find(|s| attribute(s, "process") == Some(back.id().to_string()))
        .unwrap_or_else(|| panic!("no span of the back end in {messages:#?}"));
    let failures: Vec<_> = messages
        .iter()
        .flat_map(|s| s.events.iter())
        .filter(|e| e.name == "process failed")
        .collect();
    assert_eq!(failures.len(), 1, "one event per failure: {messages:#?}");
    let event = failed
        .events
        .iter()
        .find(|e| e.name == "process failed")
        .unwrap_or_else(|| panic!("the failure is reported inside its span: {failed:#?}"));
    let field = |key: &str| {
        event
            .attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.to_string())
    };
    assert_eq!(field("process"), Some(back.id().to_string()));
    assert_eq!(field("failure").as_deref(), Some("the disk is full"));
    assert_eq!(field("group").as_deref(), Some("default"));
    rt.shutdown_timeout(Duration::from_secs(1));
}
