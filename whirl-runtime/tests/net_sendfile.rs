//! `SocketMsg::SendFile`: file regions sent by the socket process, in order with the bytes
//! around them, byte-exact, through slow readers, with the slow-peer limit kept.
#![cfg(feature = "net")]

mod common;

use std::fs::File;
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;
use whirl_runtime::request::Sender as _;

use common::{assert_isolated, to_test, ToTest};

use whirl_runtime::net::{
    Accept, AcceptError, Acceptor, CloseReason, SocketConnection, SocketEvent, SocketLimits,
    SocketMsg,
};
use whirl_runtime::{Addr, Ctx, Failure, Handles, Isolated, Process, Runtime};

/// What a probe sends once attached, in order; then it asks the socket to close.
#[derive(Clone, Debug)]
enum Part {
    Bytes(Vec<u8>),
    /// A region of the test's file: offset, length.
    Region(u64, u64),
}

/// Owns a socket, sends `parts` of `file`, closes, and reports every event to the test.
struct FileProbe {
    socket: Addr<SocketConnection>,
    events: ToTest<SocketEvent>,
    file: PathBuf,
    parts: Vec<Part>,
}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<Addr<SocketConnection>>;
    let _ = assert_isolated::<ToTest<SocketEvent>>;
    let _ = assert_isolated::<PathBuf>;
    let _ = assert_isolated::<Vec<u8>>;
};

// SAFETY: every field is `Isolated` (asserted above) or plain owned data (`parts`: bytes and
// numbers); `events` is a channel to the test thread held as a `SharedClient`. The message,
// `SocketEvent`, is `Isolated`.
unsafe impl Process for FileProbe {
    type Message = SocketEvent;

    fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        let _ = self.socket.post(SocketMsg::Attach(ctx.myself().into()));
        for part in std::mem::take(&mut self.parts) {
            let msg = match part {
                Part::Bytes(bytes) => SocketMsg::Write(bytes),
                Part::Region(offset, len) => SocketMsg::SendFile {
                    file: File::open(&self.file).map_err(|e| Failure::new(e.to_string()))?,
                    offset,
                    len,
                },
            };
            let _ = self.socket.post(msg);
        }
        let _ = self.socket.post(SocketMsg::Close);
        Ok(())
    }

    fn handle(&mut self, event: SocketEvent, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        if let SocketEvent::Closed(_) = event {
            ctx.complete();
        }
        let _ = self.events.send(event);
        Ok(())
    }
}

impl Handles<SocketEvent> for FileProbe {
    fn into_message(event: SocketEvent) -> SocketEvent {
        event
    }
}

struct Serve {
    limits: SocketLimits,
    events: ToTest<SocketEvent>,
    file: PathBuf,
    parts: Vec<Part>,
}

// SAFETY: socket limits (plain numbers), a path, owned parts, and `events`, a channel to the
// test thread held as a `SharedClient`, handed on to each `FileProbe`.
unsafe impl Isolated for Serve {}

impl Accept for Serve {
    fn accept(
        &mut self,
        stream: TcpStream,
        _peer: SocketAddr,
        ctx: &mut Ctx<Acceptor>,
    ) -> Result<(), AcceptError> {
        let socket = ctx.spawn(SocketConnection::with_limits(
            stream,
            ctx.net()?,
            self.limits,
        )?);
        ctx.spawn(FileProbe {
            socket,
            events: self.events.clone(),
            file: self.file.clone(),
            parts: self.parts.clone(),
        });
        Ok(())
    }
}

/// A file of `len` patterned bytes (a period of 251, prime, so that a misplaced chunk shows).
struct TempFile {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl TempFile {
    fn new(name: &str, len: usize) -> TempFile {
        let path = std::env::temp_dir().join(format!(
            "whirl-sendfile-{}-{name}-{}",
            std::process::id(),
            len
        ));
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).expect("write the test file");
        TempFile { path, bytes }
    }

    fn region(&self, offset: u64, len: u64) -> &[u8] {
        &self.bytes[offset as usize..(offset + len) as usize]
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn serve(
    rt: &Runtime,
    limits: SocketLimits,
    file: &TempFile,
    parts: Vec<Part>,
) -> (SocketAddr, Receiver<SocketEvent>) {
    let (tx, rx) = channel();
    let net = rt.net().unwrap();
    let serve = Serve {
        limits,
        events: to_test(&tx),
        file: file.path.clone(),
        parts,
    };
    let (acceptor, local) = Acceptor::bind("127.0.0.1:0".parse().unwrap(), net, serve).unwrap();
    rt.spawn(acceptor);
    (local, rx)
}

fn next_event(rx: &Receiver<SocketEvent>) -> SocketEvent {
    rx.recv_timeout(Duration::from_secs(30))
        .expect("no socket event within 30 s")
}

/// Events until `Closed`; its reason.
fn until_closed(rx: &Receiver<SocketEvent>) -> CloseReason {
    loop {
        match next_event(rx) {
            SocketEvent::Closed(reason) => return reason,
            SocketEvent::Drained => {}
            SocketEvent::Eof | SocketEvent::Data(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// Reads everything until the server closes; the first `slow` bytes a small chunk at a time
/// with pauses, so that the server's writes wait for the socket.
fn read_all(addr: SocketAddr, slow: usize) -> Vec<u8> {
    let mut client = TcpStream::connect(addr).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    // Let the server fill the kernel's buffers before anything is read.
    std::thread::sleep(Duration::from_millis(100));
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    while got.len() < slow {
        let n = client.read(&mut chunk).expect("read");
        if n == 0 {
            return got;
        }
        got.extend_from_slice(&chunk[..n]);
        std::thread::sleep(Duration::from_micros(200));
    }
    client.read_to_end(&mut got).expect("read to the end");
    got
}

#[test]
fn regions_and_bytes_arrive_byte_exact_in_order_through_a_slow_reader() {
    let rt = Runtime::new();
    // Larger than the default `close_above` (4 MiB) and than the kernel's buffers, and of
    // an odd length: sent whole, one region being sent is never a slow peer.
    let file = TempFile::new("order", 9 * 1024 * 1024 + 7);
    let whole = file.bytes.len() as u64;
    let parts = vec![
        Part::Bytes(b"<".to_vec()),
        Part::Region(0, whole),
        Part::Bytes(b">".to_vec()),
        Part::Region(12_345, 100_001),
        Part::Region(whole - 3, 3),
        Part::Bytes(b"end".to_vec()),
    ];
    let (addr, rx) = serve(&rt, SocketLimits::default(), &file, parts);
    let got = read_all(addr, 512 * 1024);
    let mut expected = b"<".to_vec();
    expected.extend_from_slice(&file.bytes);
    expected.extend_from_slice(b">");
    expected.extend_from_slice(file.region(12_345, 100_001));
    expected.extend_from_slice(file.region(whole - 3, 3));
    expected.extend_from_slice(b"end");
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "the bytes differ from the regions sent");
    // 9 MiB do not fit in the kernel's buffers while the reader sleeps: the region was
    // continued on writable readiness.
    assert_eq!(until_closed(&rx), CloseReason::Requested);
    rt.shutdown_graceful();
}

#[test]
fn a_small_write_budget_yields_and_continues() {
    let rt = Runtime::new();
    let file = TempFile::new("budget", 3 * 1024 * 1024 + 1);
    let mut limits = SocketLimits::default();
    // Many turns per region: each continues by a message to itself.
    limits.write_per_turn = 16 * 1024;
    let whole = file.bytes.len() as u64;
    let parts = vec![Part::Region(0, whole), Part::Bytes(vec![b'x'; 100_000])];
    let (addr, rx) = serve(&rt, limits, &file, parts);
    let got = read_all(addr, 0);
    let mut expected = file.bytes.clone();
    expected.extend_from_slice(&[b'x'; 100_000]);
    assert!(got == expected, "the bytes differ from the region sent");
    assert_eq!(until_closed(&rx), CloseReason::Requested);
    rt.shutdown_graceful();
}

#[test]
fn a_region_past_the_end_of_the_file_closes_with_an_error() {
    let rt = Runtime::new();
    let file = TempFile::new("short", 1000);
    // The peer is promised 5,000 bytes; the file has 1,000: it gets them, then the close.
    let parts = vec![Part::Region(0, 5000), Part::Bytes(b"never".to_vec())];
    let (addr, rx) = serve(&rt, SocketLimits::default(), &file, parts);
    let got = read_all(addr, 0);
    assert_eq!(got, file.bytes);
    match until_closed(&rx) {
        CloseReason::Error(why) => assert!(why.contains("file ended"), "{why}"),
        other => panic!("closed for {other:?}, not the short file"),
    }
    rt.shutdown_graceful();
}

#[test]
fn a_peer_that_never_reads_is_closed_when_regions_pile_up() {
    let rt = Runtime::new();
    let file = TempFile::new("pile", 2 * 1024 * 1024);
    let mut limits = SocketLimits::default();
    limits.close_above = 3 * 1024 * 1024;
    let whole = file.bytes.len() as u64;
    // 16 MiB queued for a peer that reads nothing: more than the kernel's buffers and the
    // limit behind the region being sent.
    let parts = vec![Part::Region(0, whole); 8];
    let (addr, rx) = serve(&rt, limits, &file, parts);
    let _client = TcpStream::connect(addr).unwrap();
    assert_eq!(until_closed(&rx), CloseReason::SlowPeer);
    rt.shutdown_graceful();
}

#[test]
fn send_file_messages_are_isolated() {
    assert_isolated::<SocketMsg>();
}
