//! Sockets as processes over real loopback connections.
#![cfg(feature = "net")]

mod common;

use common::echo::Echo;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, TcpStream as StdStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};
use whirl_runtime::request::Sender as _;

use common::{assert_isolated, to_test, ToTest};

use whirl_runtime::net::{
    Accept, AcceptError, Acceptor, SocketConnection, SocketEvent, SocketLimits, SocketMsg,
};
use whirl_runtime::{Addr, Ctx, Failure, Handles, Isolated, Message, Process, ReplyTo, Runtime};

/// Owns a socket and reports every event to the test.
struct Probe {
    socket: Addr<SocketConnection>,
    events: ToTest<SocketEvent>,
    /// Bytes to write as soon as the connection starts.
    greeting: Vec<u8>,
}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<Addr<SocketConnection>>;
    let _ = assert_isolated::<ToTest<SocketEvent>>;
    let _ = assert_isolated::<Vec<u8>>;
    let _ = assert_isolated::<SocketEvent>;
};

// SAFETY: every field is `Isolated` (asserted above): a process address, owned bytes, and
// `events`, a channel to the test thread held as a `SharedClient` (a test instrument, see
// `common::to_test`). The message, `SocketEvent`, is `Isolated`.
unsafe impl Process for Probe {
    type Message = SocketEvent;

    fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        let _ = self.socket.post(SocketMsg::Attach(ctx.myself().into()));
        for chunk in std::mem::take(&mut self.greeting).chunks(64 * 1024) {
            let _ = self.socket.post(SocketMsg::Write(chunk.to_vec()));
        }
        Ok(())
    }

    fn handle(&mut self, event: SocketEvent, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        if let SocketEvent::Eof = event {
            let _ = self.socket.post(SocketMsg::Close);
        }
        if matches!(&event, SocketEvent::Data(bytes) if bytes == DRAINED_QUESTION) {
            let _ = self.socket.post(SocketMsg::NotifyDrained);
        }
        if matches!(&event, SocketEvent::Data(bytes) if bytes == ABORT) {
            let _ = self.socket.post(SocketMsg::Close);
            let _ = self.socket.post(SocketMsg::Abort);
        }
        if matches!(&event, SocketEvent::Data(bytes) if bytes == GOODBYE) {
            let _ = self.socket.post(SocketMsg::Write(b"last words".to_vec()));
            let _ = self.socket.post(SocketMsg::CloseWrite);
            let _ = self.socket.post(SocketMsg::Write(b"dropped".to_vec()));
        }
        if let SocketEvent::Closed(_) = event {
            ctx.complete();
        }
        let _ = self.events.send(event);
        Ok(())
    }
}

impl Handles<SocketEvent> for Probe {
    fn into_message(event: SocketEvent) -> SocketEvent {
        event
    }
}

/// What a client sends to make its `Probe` ask for [`SocketEvent::Drained`].
const DRAINED_QUESTION: &[u8] = b"drained?";

/// What a client sends to make its `Probe` close (which waits for the queue to be written)
/// and then abort.
const ABORT: &[u8] = b"abort";

/// What a client sends to make its `Probe` write its last words and end its sending side.
const GOODBYE: &[u8] = b"goodbye";

/// Serves each connection with a `Probe` writing `greeting`.
struct ServeProbes {
    limits: SocketLimits,
    events: ToTest<SocketEvent>,
    greeting: Vec<u8>,
}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<SocketLimits>;
    let _ = assert_isolated::<ToTest<SocketEvent>>;
    let _ = assert_isolated::<Vec<u8>>;
};

// SAFETY: every field is `Isolated` (asserted above): socket limits (plain numbers), owned
// bytes, and `events`, a channel to the test thread held as a `SharedClient`, handed on to each
// `Probe`.
unsafe impl Isolated for ServeProbes {}

impl Accept for ServeProbes {
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
        ctx.spawn(Probe {
            socket,
            events: self.events.clone(),
            greeting: self.greeting.clone(),
        });
        Ok(())
    }
}

/// A server whose every connection is a `Probe` writing `greeting`; returns its address and
/// the events of all connections.
fn serve(
    rt: &Runtime,
    limits: SocketLimits,
    greeting: Vec<u8>,
) -> (SocketAddr, Receiver<SocketEvent>) {
    let (tx, rx) = channel();
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let net = rt.net().unwrap();
    let serve = ServeProbes {
        limits,
        events: to_test(&tx),
        greeting,
    };
    let (acceptor, local) = Acceptor::bind(addr, net, serve).unwrap();
    rt.spawn(acceptor);
    (local, rx)
}

fn next_event(rx: &Receiver<SocketEvent>) -> SocketEvent {
    rx.recv_timeout(Duration::from_secs(20))
        .expect("no socket event within 20 s")
}

#[test]
fn data_then_eof_then_closed_on_request() {
    let rt = Runtime::new();
    let (addr, rx) = serve(&rt, SocketLimits::default(), Vec::new());
    let mut client = StdStream::connect(addr).unwrap();
    client.write_all(b"hello").unwrap();
    client.shutdown(std::net::Shutdown::Write).unwrap();
    let mut data = Vec::new();
    loop {
        match next_event(&rx) {
            SocketEvent::Data(bytes) => data.extend(bytes),
            SocketEvent::Eof => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(data, b"hello");
    assert_eq!(
        next_event(&rx),
        SocketEvent::Closed(whirl_runtime::net::CloseReason::Requested)
    );
    // The server closed its side: the client reads end of stream.
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
    rt.shutdown_graceful();
}

/// Bytes that come after the socket was read empty, and the peer's end after them, are
/// delivered: each arrives with a readiness event of its own.
#[test]
fn bytes_and_end_that_come_after_a_short_read_are_delivered() {
    let rt = Runtime::new();
    let (addr, rx) = serve(&rt, SocketLimits::default(), Vec::new());
    let mut client = StdStream::connect(addr).unwrap();
    let mut data = Vec::new();
    for (i, piece) in [&b"first"[..], b"second", b"third"].into_iter().enumerate() {
        client.write_all(piece).unwrap();
        if i == 2 {
            client.shutdown(std::net::Shutdown::Write).unwrap();
        }
        let expected = data.len() + piece.len();
        while data.len() < expected {
            match next_event(&rx) {
                SocketEvent::Data(bytes) => data.extend(bytes),
                other => panic!("unexpected {other:?} after {data:?}"),
            }
        }
    }
    assert_eq!(data, b"firstsecondthird");
    assert_eq!(next_event(&rx), SocketEvent::Eof);
    rt.shutdown_graceful();
}

/// Two connections sending at once, each more than a turn reads: each owner gets its own
/// bytes, whole and in order, in pieces of at most `read_per_turn` bytes that hold only what
/// arrived (no spare capacity kept in the owner's inbox).
#[test]
fn large_sends_on_two_connections_arrive_whole_in_pieces_of_at_most_a_turn() {
    let rt = Runtime::new();
    let mut limits = SocketLimits::default();
    limits.read_chunk = 1000;
    limits.read_per_turn = 4096;
    let sent =
        |seed: u8| -> Vec<u8> { (0..512 * 1024u32).map(|i| (i % 251) as u8 ^ seed).collect() };
    let servers = [
        serve(&rt, limits, Vec::new()),
        serve(&rt, limits, Vec::new()),
    ];
    let clients: Vec<_> = servers
        .iter()
        .zip([0x55u8, 0xaa])
        .map(|((addr, _), seed)| {
            let addr = *addr;
            std::thread::spawn(move || {
                let mut client = StdStream::connect(addr).unwrap();
                client.write_all(&sent(seed)).unwrap();
                client.shutdown(std::net::Shutdown::Write).unwrap();
                client
            })
        })
        .collect();
    for ((_, rx), seed) in servers.iter().zip([0x55u8, 0xaa]) {
        let mut data = Vec::new();
        loop {
            match next_event(rx) {
                SocketEvent::Data(bytes) => {
                    assert!(!bytes.is_empty() && bytes.len() <= limits.read_per_turn);
                    assert_eq!(bytes.capacity(), bytes.len(), "a piece holds what arrived");
                    data.extend(bytes);
                }
                SocketEvent::Eof => break,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(
            data == sent(seed),
            "connection {seed:#x}: bytes lost or mixed"
        );
    }
    for client in clients {
        drop(client.join().unwrap());
    }
    rt.shutdown_graceful();
}

/// Owns a socket and takes its time over every piece of data, until the test says hurry.
struct SlowOwner {
    socket: Addr<SocketConnection>,
    received: ToTest<usize>,
    hurry: Arc<AtomicBool>,
}

// SAFETY: an address, a channel to the test thread held as a `SharedClient` (a test
// instrument, see `common::to_test`), and a flag the test thread sets, a test instrument too:
// no state is shared between processes. The message, `SocketEvent`, is `Isolated`.
unsafe impl Process for SlowOwner {
    type Message = SocketEvent;

    fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        let _ = self.socket.post(SocketMsg::Attach(ctx.myself().into()));
        Ok(())
    }

    fn handle(&mut self, event: SocketEvent, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match event {
            SocketEvent::Data(bytes) => {
                if !self.hurry.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(2));
                }
                let _ = self.received.send(bytes.len());
            }
            SocketEvent::Eof => {
                let _ = self.socket.post(SocketMsg::Close);
            }
            SocketEvent::Closed(_) => ctx.complete(),
            _ => {}
        }
        Ok(())
    }
}

impl Handles<SocketEvent> for SlowOwner {
    fn into_message(event: SocketEvent) -> SocketEvent {
        event
    }
}

/// A peer that sends as fast as it can to an owner that takes 2 ms per piece: the connection
/// stops reading once the owner has `owner_queue_max` messages waiting, so the peer's writes
/// block once the kernel's buffers are full, instead of the owner's inbox taking everything.
/// Every byte still arrives once the owner keeps up.
#[test]
fn a_slow_owner_holds_at_most_a_few_reads_and_the_peer_is_held_back() {
    let rt = Runtime::new();
    let mut limits = SocketLimits::default();
    limits.read_chunk = 4096;
    limits.read_per_turn = 4096;
    limits.owner_queue_max = 4;
    let (tx, rx) = channel();
    let received = to_test(&tx);
    let hurry = Arc::new(AtomicBool::new(false));
    let owner_hurry = hurry.clone();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = StdStream::connect(addr).unwrap();
    let (stream, _) = listener.accept().unwrap();
    stream.set_nonblocking(true).unwrap();
    let net = rt.net().unwrap();
    let socket = rt.spawn(SocketConnection::with_limits(stream, net, limits).unwrap());
    rt.spawn(SlowOwner {
        socket,
        received,
        hurry: owner_hurry,
    });
    // Write until the writes have not moved for 300 ms (or 3 s have passed).
    client.set_nonblocking(true).unwrap();
    let block = vec![7u8; 64 * 1024];
    let (mut written, mut moved) = (0usize, Instant::now());
    let deadline = Instant::now() + Duration::from_secs(3);
    while moved.elapsed() < Duration::from_millis(300) && Instant::now() < deadline {
        match client.write(&block) {
            Ok(n) => {
                written += n;
                moved = Instant::now();
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("write: {e}"),
        }
    }
    // Loopback's buffers hold a few MiB; without the bound the connection reads on while
    // the owner sleeps, and the peer is never held back.
    assert!(
        written < 24 << 20,
        "the peer wrote {} MiB: nothing held it back",
        written >> 20
    );
    hurry.store(true, Ordering::Relaxed);
    client.set_nonblocking(false).unwrap();
    client.shutdown(std::net::Shutdown::Write).unwrap();
    let mut delivered = 0;
    while delivered < written {
        delivered += rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the rest within 20 s");
    }
    assert_eq!(delivered, written);
    rt.shutdown_graceful();
}

#[test]
fn close_write_ends_the_sending_side_and_reading_goes_on_until_the_peer_closes() {
    let rt = Runtime::new();
    let (addr, rx) = serve(&rt, SocketLimits::default(), Vec::new());
    let mut client = StdStream::connect(addr).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    client.write_all(GOODBYE).unwrap();
    // The last words, then the end of the stream (a FIN, not a reset): nothing after them.
    let mut got = Vec::new();
    client.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"last words");
    assert_eq!(next_event(&rx), SocketEvent::Data(GOODBYE.to_vec()));
    // The server still reads what the client sends after that.
    client.write_all(b"more").unwrap();
    assert_eq!(next_event(&rx), SocketEvent::Data(b"more".to_vec()));
    client.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(next_event(&rx), SocketEvent::Eof);
    assert_eq!(
        next_event(&rx),
        SocketEvent::Closed(whirl_runtime::net::CloseReason::Requested)
    );
    rt.shutdown_graceful();
}

#[test]
fn abort_closes_at_once_what_close_would_keep_open_for_a_peer_that_reads_nothing() {
    let rt = Runtime::new();
    // More than loopback holds while the client reads nothing.
    let greeting = vec![7; 24 * 1024 * 1024];
    let mut limits = SocketLimits::default();
    limits.close_above = 64 * 1024 * 1024;
    let (addr, rx) = serve(&rt, limits, greeting);
    let mut client = StdStream::connect(addr).unwrap();
    client.write_all(ABORT).unwrap();
    assert_eq!(next_event(&rx), SocketEvent::Data(ABORT.to_vec()));
    assert_eq!(
        next_event(&rx),
        SocketEvent::Closed(whirl_runtime::net::CloseReason::Requested)
    );
    rt.shutdown_graceful();
}

#[test]
fn notify_drained_is_answered_at_once_when_nothing_is_queued() {
    let rt = Runtime::new();
    let (addr, rx) = serve(&rt, SocketLimits::default(), Vec::new());
    let mut client = StdStream::connect(addr).unwrap();
    client.write_all(DRAINED_QUESTION).unwrap();
    assert_eq!(
        next_event(&rx),
        SocketEvent::Data(DRAINED_QUESTION.to_vec())
    );
    assert_eq!(next_event(&rx), SocketEvent::Drained);
    rt.shutdown_graceful();
}

#[test]
fn notify_drained_is_answered_once_what_was_queued_before_it_is_written() {
    let rt = Runtime::new();
    // More than loopback's buffers hold (several MiB with autotuning) while the client reads
    // nothing, and less than the connection keeps queued.
    let greeting: Vec<u8> = (0..32 * 1024 * 1024u32).map(|i| (i % 253) as u8).collect();
    let mut limits = SocketLimits::default();
    limits.close_above = 64 * 1024 * 1024;
    let (addr, rx) = serve(&rt, limits, greeting.clone());
    let mut client = StdStream::connect(addr).unwrap();
    client.write_all(DRAINED_QUESTION).unwrap();
    assert_eq!(
        next_event(&rx),
        SocketEvent::Data(DRAINED_QUESTION.to_vec())
    );
    std::thread::sleep(Duration::from_millis(200));
    if let Ok(early) = rx.try_recv() {
        panic!("{early:?} before the queue was written");
    }
    let mut read = vec![0; greeting.len()];
    client.read_exact(&mut read).unwrap();
    assert!(read == greeting, "the greeting arrives whole");
    assert_eq!(next_event(&rx), SocketEvent::Drained);
    rt.shutdown_graceful();
}

#[test]
fn a_peer_that_never_reads_is_dropped_with_memory_bounded() {
    let rt = Runtime::new();
    let mut limits = SocketLimits::default();
    limits.close_above = 1024 * 1024;
    // Far more than the kernel buffers and the limit together can hold.
    let (addr, rx) = serve(&rt, limits, vec![b'x'; 64 * 1024 * 1024]);
    let _client = StdStream::connect(addr).unwrap();
    loop {
        match next_event(&rx) {
            SocketEvent::Closed(reason) => {
                assert_eq!(reason, whirl_runtime::net::CloseReason::SlowPeer);
                break;
            }
            SocketEvent::Drained => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    rt.shutdown_graceful();
}

#[test]
fn a_disconnecting_client_leaves_no_process_behind() {
    let rt = Runtime::new();
    let (addr, rx) = serve(&rt, SocketLimits::default(), Vec::new());
    rt.block_until_idle();
    let baseline = rt.live_processes();
    for _ in 0..20 {
        let mut client = StdStream::connect(addr).unwrap();
        client.write_all(b"partial request").unwrap();
        drop(client);
    }
    let mut closed = 0;
    while closed < 20 {
        if let SocketEvent::Closed(_) = next_event(&rx) {
            closed += 1;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while rt.live_processes() > baseline && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(rt.live_processes(), baseline, "socket processes leaked");
    assert_eq!(
        rt.net().unwrap().registrations(),
        1,
        "only the listener stays polled"
    );
    rt.shutdown_graceful();
}

/// Counts the connections accepted; answers how many so far.
struct AcceptCounter {
    accepted: usize,
}

enum CounterMsg {
    Accepted,
    Count(ReplyTo<usize>),
}

// SAFETY: nothing, or a reply handle for a number.
unsafe impl Isolated for CounterMsg {}
impl Message for CounterMsg {}

// SAFETY: the state is a number; the messages are isolated (above).
unsafe impl Process for AcceptCounter {
    type Message = CounterMsg;

    fn handle(&mut self, msg: CounterMsg, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            CounterMsg::Accepted => self.accepted += 1,
            CounterMsg::Count(reply) => {
                let _ = reply.send(self.accepted);
            }
        }
        Ok(())
    }
}

impl Handles<CounterMsg> for AcceptCounter {
    fn into_message(msg: CounterMsg) -> CounterMsg {
        msg
    }
}

/// Drops every connection, telling the counter. The count lives in a process of its own, not
/// in an atomic shared with the acceptor: the acceptor's state is isolated like any other.
struct CountAndDrop {
    counter: Addr<AcceptCounter>,
}

// SAFETY: a process address. (With the `whirl` crate: `#[derive(Isolated)]`.)
unsafe impl Isolated for CountAndDrop {}

impl Accept for CountAndDrop {
    fn accept(
        &mut self,
        _stream: TcpStream,
        _peer: SocketAddr,
        _ctx: &mut Ctx<Acceptor>,
    ) -> Result<(), AcceptError> {
        self.counter
            .post(CounterMsg::Accepted)
            .map_err(|_| "the counter has terminated")?;
        Ok(())
    }
}

#[test]
fn every_connection_is_accepted_even_when_clients_leave_at_once() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let counter = rt.spawn(AcceptCounter { accepted: 0 });
    let count_and_drop = CountAndDrop {
        counter: counter.clone(),
    };
    let (acceptor, addr) = Acceptor::bind(
        "127.0.0.1:0".parse().unwrap(),
        rt.net().unwrap(),
        count_and_drop,
    )
    .unwrap();
    rt.spawn(acceptor);
    let accepted = || {
        counter
            .request_with(CounterMsg::Count)
            .call()
            .expect("the counter answers")
    };
    for round in 1..=200 {
        let client = StdStream::connect(addr).unwrap();
        drop(client);
        let deadline = Instant::now() + Duration::from_secs(5);
        while accepted() < round {
            assert!(
                Instant::now() < deadline,
                "connection {round} never accepted"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    rt.shutdown_graceful();
}

/// A plain function is an `Accept` too: the short form for acceptors that need no data.
#[test]
fn a_plain_function_accepts_connections() {
    fn echo(stream: TcpStream, _: SocketAddr, ctx: &mut Ctx<Acceptor>) -> Result<(), AcceptError> {
        let socket = ctx.spawn(SocketConnection::new(stream, ctx.net()?)?);
        ctx.spawn(Echo { socket });
        Ok(())
    }
    let rt = Runtime::new();
    let (acceptor, addr) =
        Acceptor::bind_fn("127.0.0.1:0".parse().unwrap(), rt.net().unwrap(), echo).unwrap();
    rt.spawn(acceptor);
    let mut client = StdStream::connect(addr).unwrap();
    client.write_all(b"ping").unwrap();
    let mut reply = [0; 4];
    client.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"ping");
    rt.shutdown_graceful();
}
