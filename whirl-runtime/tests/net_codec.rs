//! A chat server made of whirl processes, over real loopback connections, speaking lines.
//!
//! Each connection is a `SocketConnection` and a `Member` owning it; the members talk through
//! a `Room`. A member takes whole lines from a `Framed<LinesCodec>` and writes lines with it:
//! no process looks for a `\n` or keeps half a line, however the client's bytes are cut.
#![cfg(all(feature = "net", not(loom)))]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;
use whirl::request::Sender as _;

use whirl::net::{
    Accept, AcceptError, Acceptor, Framed, LinesCodec, LinesCodecError, SocketConnection,
    SocketEvent, SocketMsg,
};
use whirl::prelude::*;

/// The longest line a client may send, and the server relay.
const MAX_LINE: usize = 256;

// ---------------------------------------------------------------------------------------------
// The server.
// ---------------------------------------------------------------------------------------------

/// A member with this nick has joined.
#[derive(Message)]
struct Join {
    nick: String,
    member: Addr<Member>,
}

/// A member said something.
#[derive(Message)]
struct Say {
    nick: String,
    text: String,
}

/// A member has left.
#[derive(Message)]
struct Leave {
    nick: String,
}

/// A line for a member's client.
#[derive(Message)]
struct Deliver(String);

/// Relays every line said to every member.
#[process]
struct Room {
    members: Vec<(String, Addr<Member>)>,
}

#[process]
impl Room {
    #[handle]
    fn join(&mut self, Join { nick, member }: Join) {
        let _ = member.post(Deliver(format!("welcome, {nick}")));
        self.broadcast(&format!("* {nick} joined"));
        self.members.push((nick, member));
    }

    #[handle]
    fn say(&mut self, Say { nick, text }: Say) {
        self.broadcast(&format!("{nick}: {text}"));
    }

    #[handle]
    fn leave(&mut self, Leave { nick }: Leave) {
        self.members.retain(|(n, _)| *n != nick);
        self.broadcast(&format!("* {nick} left"));
    }
}

impl Room {
    fn broadcast(&self, line: &str) {
        for (_, member) in &self.members {
            let _ = member.post(Deliver(line.to_owned()));
        }
    }
}

/// Speaks the chat protocol over one connection: the first line is the nick, every later
/// line is said to the room.
#[process]
struct Member {
    socket: Addr<SocketConnection>,
    lines: Framed<LinesCodec>,
    room: Addr<Room>,
    nick: Option<String>,
}

#[process]
impl Member {
    #[started]
    fn attach(&mut self, ctx: &mut Ctx<Self>) {
        let _ = self.socket.post(SocketMsg::Attach(ctx.myself().into()));
    }

    #[handle]
    fn socket_event(&mut self, event: SocketEvent, ctx: &mut Ctx<Self>) {
        let eof = matches!(event, SocketEvent::Eof);
        match event {
            SocketEvent::Data(bytes) => self.lines.push(&bytes),
            SocketEvent::Eof => self.lines.push_eof(),
            SocketEvent::Closed(_) => {
                if let Some(nick) = self.nick.take() {
                    let _ = self.room.post(Leave { nick });
                }
                return ctx.complete();
            }
            _ => return,
        }
        let read = self.read_lines(ctx);
        if let Err(e) = &read {
            // Too long, or not UTF-8: the client breaks the protocol. Say why and hang up.
            self.send(&format!("error: {e}"));
        }
        if eof || read.is_err() {
            let _ = self.socket.post(SocketMsg::Close);
        }
    }

    #[handle]
    fn deliver(&mut self, Deliver(line): Deliver) {
        self.send(&line);
    }
}

impl Member {
    /// Every line completed by the bytes received so far.
    fn read_lines(&mut self, ctx: &mut Ctx<Self>) -> Result<(), LinesCodecError> {
        while let Some(line) = self.lines.next_item()? {
            match &self.nick {
                None => {
                    self.nick = Some(line.clone());
                    let member = ctx.myself();
                    let _ = self.room.post(Join { nick: line, member });
                }
                Some(nick) => {
                    let nick = nick.clone();
                    let _ = self.room.post(Say { nick, text: line });
                }
            }
        }
        Ok(())
    }

    fn send(&mut self, line: &str) {
        // A line the codec refuses (a nick and a text too long together) is not relayed.
        if let Ok(write) = self.lines.encode(line) {
            let _ = self.socket.post(write);
        }
    }
}

/// Makes every connection a member of the room.
#[derive(Isolated)]
struct Lobby {
    room: Addr<Room>,
}

impl Accept for Lobby {
    fn accept(
        &mut self,
        stream: TcpStream,
        _peer: SocketAddr,
        ctx: &mut Ctx<Acceptor>,
    ) -> Result<(), AcceptError> {
        let socket = ctx.spawn(SocketConnection::new(stream, ctx.net()?)?);
        ctx.spawn(Member {
            socket,
            lines: Framed::new(LinesCodec::new(MAX_LINE)),
            room: self.room.clone(),
            nick: None,
        });
        Ok(())
    }
}

fn chat_server(rt: &Runtime) -> SocketAddr {
    let room = rt.spawn(Room {
        members: Vec::new(),
    });
    let any_port = "127.0.0.1:0".parse().expect("an address");
    let net = rt.net().expect("the poller starts");
    let (acceptor, addr) = Acceptor::bind(any_port, net, Lobby { room }).expect("bound");
    rt.spawn(acceptor);
    addr
}

// ---------------------------------------------------------------------------------------------
// The clients: plain blocking sockets.
// ---------------------------------------------------------------------------------------------

struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let writer = TcpStream::connect(addr).expect("connected");
        // Each write its own segment, so the server sees the cuts made here.
        writer.set_nodelay(true).expect("nodelay");
        // A guard against a hang, never part of what is checked.
        let guard = Some(Duration::from_secs(20));
        writer.set_read_timeout(guard).expect("timeout");
        let reader = BufReader::new(writer.try_clone().expect("cloned"));
        Client { reader, writer }
    }

    /// Writes `bytes` as they are, then gives the server a moment to read them on their own.
    fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("written");
        std::thread::sleep(Duration::from_millis(10));
    }

    /// The next line from the server, without its `\n`.
    #[track_caller]
    fn line(&mut self) -> String {
        let mut line = String::new();
        self.reader
            .read_line(&mut line)
            .expect("a line within 20 s");
        assert!(line.ends_with('\n'), "the server closed mid-line: {line:?}");
        line.pop();
        line
    }

    /// Waits for the server to close the connection, with nothing more to read.
    #[track_caller]
    fn closed(&mut self) {
        let mut rest = Vec::new();
        match self.reader.read_to_end(&mut rest) {
            Ok(_) => assert!(rest.is_empty(), "more after the end: {rest:?}"),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_line_codec_chat_server_relays_whole_lines_however_the_bytes_are_cut() {
    let rt = Runtime::new();
    let addr = chat_server(&rt);

    let mut alice = Client::connect(addr);
    alice.send(b"ali");
    alice.send(b"ce\n");
    assert_eq!(alice.line(), "welcome, alice");
    let mut bob = Client::connect(addr);
    bob.send(b"bob\r\n");
    assert_eq!(bob.line(), "welcome, bob");
    assert_eq!(alice.line(), "* bob joined");

    // Lines cut anywhere, and two and a half of them in one write.
    alice.send(b"hel");
    alice.send(b"lo, b");
    alice.send(b"ob\nhow are you?\r\nbye for n");
    alice.send(b"ow\n");
    for client in [&mut alice, &mut bob] {
        assert_eq!(client.line(), "alice: hello, bob");
        assert_eq!(client.line(), "alice: how are you?");
        assert_eq!(client.line(), "alice: bye for now");
    }

    // A character cut in the middle of its UTF-8 bytes.
    let cafe = "caf\u{e9}!\n".as_bytes();
    bob.send(&cafe[..4]);
    bob.send(&cafe[4..]);
    assert_eq!(alice.line(), "bob: caf\u{e9}!");
    assert_eq!(bob.line(), "bob: caf\u{e9}!");

    // Bob leaves with a last line and no `\n`: still a line, said before his member closes
    // the connection.
    bob.send(b"see you");
    bob.writer
        .shutdown(std::net::Shutdown::Write)
        .expect("shut down");
    bob.closed();
    assert_eq!(alice.line(), "bob: see you");
    assert_eq!(alice.line(), "* bob left");
    rt.shutdown_graceful();
}

#[test]
fn a_line_codec_chat_server_hangs_up_on_a_line_too_long_before_it_ends() {
    let rt = Runtime::new();
    let addr = chat_server(&rt);
    let mut dave = Client::connect(addr);
    dave.send(b"dave\n");
    assert_eq!(dave.line(), "welcome, dave");

    // No `\n` yet, and already more than a line may hold: the server does not wait for one.
    dave.send(&[b'x'; MAX_LINE + 2]);
    let too_long = LinesCodecError::LineTooLong { max: MAX_LINE };
    assert_eq!(dave.line(), format!("error: {too_long}"));
    dave.closed();
    rt.shutdown_graceful();
}

#[test]
fn a_line_codec_chat_server_refuses_a_line_that_is_not_utf8() {
    let rt = Runtime::new();
    let addr = chat_server(&rt);
    let mut erin = Client::connect(addr);
    erin.send(b"erin\n");
    assert_eq!(erin.line(), "welcome, erin");
    erin.send(b"\xff\xfe\n");
    assert_eq!(erin.line(), "error: line is not valid UTF-8");
    erin.closed();
    rt.shutdown_graceful();
}
