//! Traces that cross nodes (feature `opentelemetry`): a request posted on node A inside a span
//! goes to a process there, which posts to a process exported by node B; every message span
//! on both nodes is in the request's trace, each the child of the span its message was sent
//! from (B's through the `remote` span the frame's trace context parents).
//!
//! Both nodes run in this test process, so one OpenTelemetry pipeline (the SDK's in-memory
//! exporter) sees every span, as a collector would see both nodes' exports.
#![cfg(feature = "opentelemetry")]

mod common;

use std::time::{Duration, Instant};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde::{Deserialize, Serialize};
use tracing_subscriber::layer::SubscriberExt;
use whirl::prelude::*;
use whirl_dist::{Remote, RemoteAddr};

use common::cluster;

#[derive(Message, Serialize, Deserialize, Debug)]
struct Order(u32);
impl Remote for Order {
    const TAG: &'static str = "test.traces.Order/1";
}

#[process]
struct Store {
    orders: u32,
}

#[process]
impl Store {
    #[handle]
    fn order(&mut self, Order(n): Order) {
        self.orders += n;
    }
}

#[process]
struct Front {
    store: RemoteAddr<Order>,
}

#[process]
impl Front {
    #[handle]
    fn order(&mut self, order: Order) {
        let _ = self.store.post(order);
    }
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

#[test]
fn one_trace_runs_across_nodes() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new(
            "info,whirl::message=debug",
        ))
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("whirl-dist-tests")));
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");

    let (nodes, _) = cluster(2, |c| c);
    let (a, b) = (&nodes[0], &nodes[1]);
    let runtime = Runtime::new();
    let store = runtime.spawn(Store { orders: 0 });
    let pid = b.export(&store).accept::<Order>().build().expect("export");
    let front = runtime.spawn(Front {
        store: a.remote::<Order>(pid),
    });

    let request = tracing::info_span!("request");
    let (trace_id, request_id) = {
        let _inside = request.enter();
        front.post(Order(1)).expect("accepted");
        (
            opentelemetry::trace::TraceContextExt::span(
                &tracing_opentelemetry::OpenTelemetrySpanExt::context(&request),
            )
            .span_context()
            .trace_id(),
            opentelemetry::trace::TraceContextExt::span(
                &tracing_opentelemetry::OpenTelemetrySpanExt::context(&request),
            )
            .span_context()
            .span_id(),
        )
    };
    drop(request);

    // Wait for the store's message span: the order crossed to node B and was handled.
    let start = Instant::now();
    let spans = loop {
        let _ = provider.force_flush();
        let spans = exporter.get_finished_spans().expect("the exporter answers");
        let stored = spans.iter().any(|s| {
            s.name == "message" && attribute(s, "process") == Some(store.id().to_string())
        });
        if stored || start.elapsed() > Duration::from_secs(20) {
            break spans;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let find = |name: &str, process: Option<String>| {
        spans
            .iter()
            .find(|s| s.name == name && (process.is_none() || attribute(s, "process") == process))
            .unwrap_or_else(|| panic!("no {name} span of {process:?} in {spans:#?}"))
    };
    let front_span = find("message", Some(front.id().to_string()));
    let remote = find("remote", None);
    let store_span = find("message", Some(store.id().to_string()));
    for span in [front_span, remote, store_span] {
        assert_eq!(
            span.span_context.trace_id(),
            trace_id,
            "one trace: {span:#?}"
        );
    }
    assert_eq!(front_span.parent_span_id, request_id);
    assert_eq!(
        remote.parent_span_id,
        front_span.span_context.span_id(),
        "B's remote span is the child of A's sender"
    );
    assert_eq!(store_span.parent_span_id, remote.span_context.span_id());
    assert_eq!(attribute(remote, "from"), Some(a.id().to_string()));
    runtime.shutdown_graceful();
}
