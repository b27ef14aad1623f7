//! The messages between the server's processes (figure 2 of the paper, left to right).
//!
//! A leaf of the server's modules: it names no process. A message that must be answered
//! carries a type-erased [`Recipient`] of the answer, so that the processes answering a
//! connection (the session store, the dispatcher, the handlers) need not know its type.

use std::fs::File;
use std::path::PathBuf;

use whirl::prelude::*;
use whirl_http::{ByteRange, Conditions, Request, Response, Validators};

use crate::sessions::Resolved;

/// A response for the request numbered `seq` on a connection (answers may arrive out of
/// order; the connection writes them in order).
///
/// Answers, replies between a handler and the processes it created, and `Retire` bypass
/// admission control: they belong to requests a group already admitted, and refusing them
/// would strand those requests instead of shedding new ones.
#[derive(Message)]
#[message(bypass_admission)]
pub struct Respond {
    pub seq: u64,
    pub response: Response,
}

/// A response whose body is a region of an open file, for request `seq`: the connection
/// writes the head and has its socket send the region (`SocketMsg::SendFile`, `sendfile(2)`
/// on Linux) instead of a body read into memory.
#[derive(Message)]
#[message(bypass_admission)]
pub struct RespondFile {
    pub seq: u64,
    /// Status and headers; its `body` is ignored.
    pub response: Response,
    pub region: FileRegion,
}

/// `len` bytes of `file` from `offset`: a body sent from the file, not from memory.
#[derive(Debug, Isolated)]
pub struct FileRegion {
    pub file: File,
    pub offset: u64,
    pub len: u64,
}

/// A refusal's answer, sent by a connection to itself to be written after
/// [`ShedPolicy::delay`](super::site::ShedPolicy::delay).
#[derive(Message)]
#[message(bypass_admission)]
pub struct Shed {
    pub seq: u64,
    pub response: Response,
}

/// An HTTP/2 connection's codec has work (sent by the connection's waker to itself: see
/// `connection/h2.rs`).
#[derive(Message)]
#[message(bypass_admission)]
pub struct H2Wake;

/// A connection's periodic look at its own idleness (sent to itself with a delay).
#[derive(Message)]
#[message(bypass_admission)]
pub struct IdleCheck;

/// To the session store: which session does this cookie name? Answered with
/// [`SessionResolved`].
#[derive(Message)]
pub struct Resolve {
    pub token: Option<String>,
    /// Start an anonymous session if `token` names none (the request is under a session
    /// path); otherwise the answer is a connection's session.
    pub start: bool,
    pub conn: Recipient<SessionResolved>,
    /// The client's address: sessions are bounded per client.
    pub peer: std::net::IpAddr,
}

/// The session store's answer to [`Resolve`].
#[derive(Message)]
#[message(bypass_admission)]
pub struct SessionResolved {
    pub resolved: Resolved,
}

/// To the session store: log in and answer request `seq` of `conn`.
#[derive(Message)]
pub struct Login {
    pub body: Vec<u8>,
    pub seq: u64,
    pub conn: Recipient<Respond>,
    /// The client's address.
    pub peer: std::net::IpAddr,
}

/// To the session store: answer request `seq` of `conn` with the table's size
/// (`sessions N` and `clients M`, one per line).
#[derive(Message)]
#[message(bypass_admission)]
pub struct SessionStats {
    pub seq: u64,
    pub conn: Recipient<Respond>,
}

/// The session store's periodic expiry of idle sessions (sent to itself with a delay).
#[derive(Message)]
#[message(bypass_admission)]
pub struct Sweep;

/// To a dispatcher: route request `seq`.
#[derive(Message)]
pub struct Route {
    pub request: Request,
    pub seq: u64,
}

/// To a dispatcher: no more requests will come (its session changed or the connection
/// closed); terminate once the queued ones are routed.
#[derive(Message)]
#[message(bypass_admission)]
pub struct Retire;

/// Which variant of a file to serve: the paper's figure 3, where a handler group that refuses
/// the expensive variant may still accept the cheap one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Isolated)]
pub enum Quality {
    High,
    Low,
}

impl Quality {
    /// The cost a handler group's cost budget counts.
    pub fn cost(self) -> u64 {
        match self {
            Quality::High => 8,
            Quality::Low => 1,
        }
    }
}

/// To a file handler.
#[derive(Message)]
#[message(cost = self.quality.cost())]
pub struct FileRequest {
    pub path: String,
    pub quality: Quality,
    /// What part of the file the request asks for, and on what condition.
    pub conditions: Conditions,
    /// Where a client is sent if `path` is a directory: the target with a `/` added. `None`
    /// when the target named a directory already (and `path` is its index).
    pub directory_location: Option<String>,
    pub seq: u64,
    pub conn: Recipient<Respond>,
    /// Where an answer whose body is a file region goes (the same connection).
    pub conn_file: Recipient<RespondFile>,
}

/// To a file handler with `--file-io-process`: the same request, whose file an `AsyncFile`
/// process reads (the handler awaits it).
#[derive(Message)]
#[message(cost = self.0.quality.cost())]
pub struct FileRequestIo(pub FileRequest);

/// To an async-file process: read what `conditions` select of `path` (sent with `ask`).
#[derive(Message)]
pub struct ReadFile {
    pub path: PathBuf,
    pub conditions: Conditions,
}

/// The async-file process's answer.
#[derive(Message)]
pub struct FileRead {
    pub result: Result<FileBody, FileError>,
}

/// A file found: its validators and what of it is sent.
#[derive(Debug, Isolated)]
pub struct FileBody {
    pub validators: Validators,
    pub content: FileContent,
}

/// What of a file is sent, read only as far as needed.
#[derive(Debug, Isolated)]
pub enum FileContent {
    /// Nothing: a precondition (`If-Match`, `If-Unmodified-Since`) is false (412).
    PreconditionFailed,
    /// Nothing: the client's copy is current (304).
    NotModified,
    /// All of it (200).
    Full(Vec<u8>),
    /// `range` of a file of `total` bytes (206).
    Partial {
        range: ByteRange,
        total: u64,
        bytes: Vec<u8>,
    },
    /// Nothing: the range starts past the end of a file of `total` bytes (416).
    Unsatisfiable { total: u64 },
    /// A large body, not read: the open file's region, sent by the socket (200 when
    /// `partial` is `None`, else 206 for that range of a file of that many bytes).
    Region {
        region: FileRegion,
        partial: Option<(ByteRange, u64)>,
    },
}

/// Why a file could not be served.
#[derive(Debug, Clone, PartialEq, Eq, Isolated)]
pub enum FileError {
    NotFound,
    /// The path is a directory.
    Directory,
    /// What would be sent is larger than the server sends in one response.
    TooLarge,
    Io(String),
}

/// To a resource handler: list a page of resources.
#[derive(Message)]
pub struct ListRequest {
    pub offset: usize,
    pub limit: usize,
    pub seq: u64,
    pub conn: Recipient<Respond>,
}

/// To a resource handler: show one resource.
#[derive(Message)]
pub struct ShowRequest {
    pub id: u32,
    pub seq: u64,
    pub conn: Recipient<Respond>,
}

/// To a database connection, which answers with the rendered JSON (`None` for no such
/// resource): sent with `ask`.
#[derive(Message)]
pub struct Query {
    pub kind: QueryKind,
}

/// What a [`Query`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Isolated)]
pub enum QueryKind {
    List { offset: usize, limit: usize },
    Show { id: u32 },
}
