//! The access log (`--access-log PATH`, `-` for stdout): one JSON object per answer, written
//! by a thread of its own.
//!
//! ```text
//! {"time":"2026-11-29T22:23:03.123456Z","remote":"127.0.0.1:53422","method":"GET",
//!  "path":"/files/index.html","query":null,"status":200,"bytes":1345,"duration_us":153,
//!  "principal":9223372036854775811,"user":null,"user_agent":"curl/8.5.0"}
//! ```
//!
//! (one line in the file). `time` is when the answer was written (RFC 3339, UTC, to the
//! microsecond), `bytes` what was written for it (head and body), `duration_us` from the
//! request received whole to its answer written, `principal` the id of the session's
//! principal that served it (none for `/healthz`, `/readyz` and `/metrics`, and for requests
//! refused before they were read whole, which have no method or path either), `user` the
//! logged-in user's name. Paths and agents are the client's bytes: JSON escaping keeps a line
//! one line whatever they hold.
//!
//! The request path never waits for the disk: a connection hands its [`Record`] to a
//! bounded channel with `try_send` ([`Sink::log`]), and the writer thread encodes and writes
//! it. When the channel is full (the disk, or the pipe behind stdout, is slower than the
//! requests) the record is dropped and counted: `iris_http_access_log_dropped_lines_total`,
//! and a line on stderr at most every [`REPORT_EVERY`]. Lines that cannot be written (a full
//! disk) are counted the same way.

use std::fs::OpenOptions;
use std::io::{self, BufWriter, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use prometheus_client::metrics::counter::Counter;
use serde::Serialize;

/// Lines waiting for the writer before new ones are dropped.
pub const CAPACITY: usize = 8192;
/// Drops are reported on stderr at most this often.
pub const REPORT_EVERY: Duration = Duration::from_secs(10);
/// How often the writer looks at its stop flag and at the drop count when no line comes.
const TICK: Duration = Duration::from_millis(200);

/// One answer, as the access log records it.
#[derive(Debug)]
pub struct Record {
    /// When the answer was written.
    pub time: SystemTime,
    pub remote: SocketAddr,
    /// The request's method, path and query; `None` for an answer to bytes that were no
    /// request (a head too long, a malformed line, one that never arrived whole).
    pub method: Option<String>,
    pub path: Option<String>,
    pub query: Option<String>,
    pub status: u16,
    pub bytes: u64,
    pub duration: Duration,
    /// The id of the principal the request was served on behalf of.
    pub principal: Option<u64>,
    /// The logged-in user's name.
    pub user: Option<String>,
    pub user_agent: Option<String>,
}

/// A record as one JSON line.
#[derive(Serialize)]
struct Line<'a> {
    time: String,
    remote: String,
    method: Option<&'a str>,
    path: Option<&'a str>,
    query: Option<&'a str>,
    status: u16,
    bytes: u64,
    duration_us: u64,
    principal: Option<u64>,
    user: Option<&'a str>,
    user_agent: Option<&'a str>,
}

impl Record {
    /// The record as one line of JSON, without the newline.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(&Line {
            time: humantime::format_rfc3339_micros(self.time).to_string(),
            remote: self.remote.to_string(),
            method: self.method.as_deref(),
            path: self.path.as_deref(),
            query: self.query.as_deref(),
            status: self.status,
            bytes: self.bytes,
            duration_us: u64::try_from(self.duration.as_micros()).unwrap_or(u64::MAX),
            principal: self.principal,
            user: self.user.as_deref(),
            user_agent: self.user_agent.as_deref(),
        })
    }
}

/// Where connections put their records: the sending end of the writer's channel. Cheap to
/// clone; never blocks.
#[derive(Clone, Debug)]
pub struct Sink {
    records: SyncSender<Record>,
    dropped: Counter,
}

impl Sink {
    /// Hands `record` to the writer, or drops and counts it if the writer is behind.
    pub fn log(&self, record: Record) {
        match self.records.try_send(record) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.inc();
            }
        }
    }

    /// The count of lines lost, shared with the writer (`/metrics` shows it).
    pub fn dropped(&self) -> &Counter {
        &self.dropped
    }
}

/// The writer thread. [`Writer::finish`] writes what is queued and stops it.
#[derive(Debug)]
pub struct Writer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Why the access log could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("--access-log {}: {source}", path.display())]
    File { path: PathBuf, source: io::Error },
    #[error("cannot start the access-log writer: {0}")]
    Thread(io::Error),
}

impl Writer {
    /// Opens `path` for appending (`-`: stdout) and starts the writer; lines go through a
    /// channel of `capacity`.
    pub fn open(path: &Path, capacity: usize) -> Result<(Writer, Sink), OpenError> {
        let out: Box<dyn Write + Send> = if path == Path::new("-") {
            Box::new(io::stdout())
        } else {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|source| OpenError::File {
                    path: path.to_path_buf(),
                    source,
                })?;
            Box::new(file)
        };
        Writer::start(out, capacity)
    }

    /// The writer over `out`.
    pub fn start(out: Box<dyn Write + Send>, capacity: usize) -> Result<(Writer, Sink), OpenError> {
        let (records, incoming) = mpsc::sync_channel(capacity);
        let dropped = Counter::default();
        let stop = Arc::new(AtomicBool::new(false));
        let mut state = State {
            out: BufWriter::with_capacity(64 * 1024, out),
            dropped: dropped.clone(),
            reported: 0,
            last_report: None,
        };
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("iris-access-log".into())
            .spawn(move || loop {
                let more = match incoming.recv_timeout(TICK) {
                    Ok(record) => {
                        state.write(&record);
                        while let Ok(record) = incoming.try_recv() {
                            state.write(&record);
                        }
                        state.flush();
                        true
                    }
                    Err(RecvTimeoutError::Timeout) => true,
                    Err(RecvTimeoutError::Disconnected) => false,
                };
                if !more || stopping.load(Ordering::Acquire) {
                    while let Ok(record) = incoming.try_recv() {
                        state.write(&record);
                    }
                    state.flush();
                    state.report_drops(true);
                    return;
                }
                state.report_drops(false);
            })
            .map_err(OpenError::Thread)?;
        let writer = Writer {
            stop,
            thread: Some(thread),
        };
        Ok((writer, Sink { records, dropped }))
    }

    /// Writes what is queued, then stops the thread and waits for it.
    pub fn finish(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The writer thread's state.
struct State {
    out: BufWriter<Box<dyn Write + Send>>,
    dropped: Counter,
    /// The drop count last reported on stderr.
    reported: u64,
    last_report: Option<Instant>,
}

impl State {
    fn write(&mut self, record: &Record) {
        let written = match record.to_json() {
            Ok(mut line) => {
                line.push('\n');
                self.out.write_all(line.as_bytes()).is_ok()
            }
            Err(_) => false,
        };
        if !written {
            self.dropped.inc();
        }
    }

    fn flush(&mut self) {
        if self.out.flush().is_err() {
            // What the buffer held is lost; the count cannot say how many lines it was.
            self.dropped.inc();
        }
    }

    /// Says on stderr how many lines were lost since the last report, if any were and the
    /// last report is old enough (or `now`, at the end).
    fn report_drops(&mut self, now: bool) {
        let dropped = self.dropped.get();
        if dropped == self.reported {
            return;
        }
        let due = self
            .last_report
            .is_none_or(|at| at.elapsed() >= REPORT_EVERY);
        if !due && !now {
            return;
        }
        eprintln!(
            "iris_http: access log: {} line(s) dropped ({dropped} in all): the writer cannot \
             keep up, or cannot write",
            dropped - self.reported
        );
        self.reported = dropped;
        self.last_report = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// An output the test reads back, and can hold (a slow disk).
    #[derive(Clone, Default)]
    struct Shared {
        bytes: Arc<Mutex<Vec<u8>>>,
        gate: Arc<Mutex<()>>,
        /// The writer has begun a write (and may be waiting at the gate).
        entered: Arc<AtomicBool>,
    }

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.entered.store(true, Ordering::Release);
            let _held = self.gate.lock().map_err(|_| io::Error::other("poisoned"))?;
            let mut bytes = self
                .bytes
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?;
            bytes.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn record(path: &str) -> Record {
        Record {
            time: SystemTime::UNIX_EPOCH + Duration::from_micros(1_764_455_000_123_456),
            remote: "127.0.0.1:4000".parse().expect("an address"),
            method: Some("GET".into()),
            path: Some(path.into()),
            query: None,
            status: 200,
            bytes: 10,
            duration: Duration::from_micros(42),
            principal: Some(7),
            user: None,
            user_agent: Some("agent \"quoted\"\n".into()),
        }
    }

    #[test]
    fn a_record_is_one_line_of_json_with_every_field() {
        let line = record("/a\nb").to_json().expect("encodes");
        assert!(!line.contains('\n'), "{line}");
        let value: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(value["time"], "2025-11-29T22:23:20.123456Z");
        assert_eq!(value["remote"], "127.0.0.1:4000");
        assert_eq!(value["method"], "GET");
        assert_eq!(value["path"], "/a\nb");
        assert_eq!(value["status"], 200);
        assert_eq!(value["bytes"], 10);
        assert_eq!(value["duration_us"], 42);
        assert_eq!(value["principal"], 7);
        assert_eq!(value["user"], serde_json::Value::Null);
        assert_eq!(value["user_agent"], "agent \"quoted\"\n");
    }

    #[test]
    fn lines_are_written_in_order_and_a_full_channel_drops_and_counts() {
        let out = Shared::default();
        let held = out.gate.lock().expect("the gate");
        let (writer, sink) = Writer::start(Box::new(out.clone()), 4).expect("starts");
        // The writer takes the first record and blocks writing it (the gate is held): the
        // channel then fills, and every record past its capacity is dropped, not waited for.
        sink.log(record("/0"));
        let deadline = Instant::now() + Duration::from_secs(20);
        while !out.entered.load(Ordering::Acquire) {
            assert!(Instant::now() < deadline, "the writer never wrote");
            std::thread::sleep(Duration::from_millis(1));
        }
        for i in 1..64 {
            sink.log(record(&format!("/{i}")));
        }
        let dropped = sink.dropped().get();
        assert_eq!(dropped, 63 - 4, "the channel holds 4");
        drop(held);
        writer.finish();
        let bytes = out.bytes.lock().expect("the output").clone();
        let text = String::from_utf8(bytes).expect("UTF-8");
        let paths: Vec<String> = text
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("JSON");
                v["path"].as_str().expect("a path").to_owned()
            })
            .collect();
        assert_eq!(paths.len() as u64 + dropped, 64, "{text}");
        let numbers: Vec<u32> = paths
            .iter()
            .map(|p| p[1..].parse().expect("a number"))
            .collect();
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
    }

    #[test]
    fn an_unopenable_file_is_an_error_naming_it() {
        let path = Path::new("/nonexistent-dir/access.log");
        let e = Writer::open(path, 8).expect_err("cannot open");
        assert!(e.to_string().contains("/nonexistent-dir/access.log"), "{e}");
    }
}
