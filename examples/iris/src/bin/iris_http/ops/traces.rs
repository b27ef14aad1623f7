//! `--trace-file`: every request's trace, through OpenTelemetry, into a file.
//!
//! iris_http installs a `tracing` subscriber with the `tracing-opentelemetry` layer when asked
//! for traces. Each request the connection parses opens an `http_request` span (`method`,
//! `path`), a new trace; what it posts carries it (whirl's message spans, target
//! `whirl::message` at `DEBUG`), so the trace holds a span for every process that touched the
//! request: the connection, the session's dispatcher, the handler, the socket writing the
//! answer. The SDK's batch processor hands finished spans to [`JsonLines`] on a thread of its
//! own, which appends one JSON object per span to the file: `trace_id`, `span_id`,
//! `parent_span_id` (hex, as OTLP's JSON encoding writes them), `name`, `start_unix_nano`,
//! `end_unix_nano`, `attributes` and `events`. A collector's file receiver, `jq` or a test reads
//! them; for a live collector, swap this exporter for `opentelemetry-otlp`'s.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanId, TracerProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::{json, Map, Value};
use tracing_subscriber::layer::SubscriberExt;

/// What `--trace-file` records unless `--trace-filter` says otherwise: iris_http's request
/// spans and whirl's message spans, and every `INFO` event inside them.
pub const DEFAULT_FILTER: &str = "info,whirl::message=debug,iris_http=debug";

/// The installed pipeline; [`Tracing::finish`] exports what is still buffered.
pub struct Tracing {
    provider: SdkTracerProvider,
}

impl Tracing {
    /// Installs the global subscriber, exporting to `path` (appended to) what `filter` lets
    /// through.
    pub fn install(path: &Path, filter: &str) -> Result<Tracing, String> {
        let filter = tracing_subscriber::EnvFilter::try_new(filter)
            .map_err(|e| format!("--trace-filter `{filter}`: {e}"))?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("--trace-file {}: {e}", path.display()))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(JsonLines::new(file))
            .build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("iris_http"));
        let subscriber = tracing_subscriber::registry().with(filter).with(layer);
        tracing::subscriber::set_global_default(subscriber)
            .map_err(|e| format!("--trace-file: {e}"))?;
        Ok(Tracing { provider })
    }

    /// Exports the spans still buffered and stops the exporter's thread.
    pub fn finish(self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("iris_http: the last traces were not all written: {e}");
        }
    }
}

/// A span exporter appending JSON lines to a file.
pub struct JsonLines {
    out: Mutex<BufWriter<File>>,
}

impl fmt::Debug for JsonLines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JsonLines")
    }
}

impl JsonLines {
    fn new(file: File) -> Self {
        JsonLines {
            out: Mutex::new(BufWriter::new(file)),
        }
    }

    fn write(&self, batch: &[SpanData]) -> OTelSdkResult {
        let mut out = self
            .out
            .lock()
            .map_err(|_| OTelSdkError::InternalFailure("the trace file's lock".into()))?;
        for span in batch {
            let line = span_json(span).to_string();
            writeln!(out, "{line}").map_err(|e| OTelSdkError::InternalFailure(e.to_string()))?;
        }
        out.flush()
            .map_err(|e| OTelSdkError::InternalFailure(e.to_string()))
    }
}

impl SpanExporter for JsonLines {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.write(&batch)
    }
}

fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn attributes(kvs: &[KeyValue]) -> Value {
    let map: Map<String, Value> = kvs
        .iter()
        .map(|kv| (kv.key.to_string(), Value::String(kv.value.to_string())))
        .collect();
    Value::Object(map)
}

/// One span as a JSON object (see the module docs).
pub fn span_json(span: &SpanData) -> Value {
    let parent = (span.parent_span_id != SpanId::INVALID).then(|| span.parent_span_id.to_string());
    let events: Vec<Value> = span
        .events
        .iter()
        .map(|e| {
            json!({
                "name": e.name,
                "time_unix_nano": unix_nanos(e.timestamp),
                "attributes": attributes(&e.attributes),
            })
        })
        .collect();
    json!({
        "trace_id": span.span_context.trace_id().to_string(),
        "span_id": span.span_context.span_id().to_string(),
        "parent_span_id": parent,
        "name": span.name,
        "start_unix_nano": unix_nanos(span.start_time),
        "end_unix_nano": unix_nanos(span.end_time),
        "attributes": attributes(&span.attributes),
        "events": events,
    })
}
