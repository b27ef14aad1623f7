//! Framing: the bytes of a socket as a sequence of messages, and messages as bytes.
//!
//! TCP carries a stream of bytes, not messages: one [`SocketEvent::Data`] may hold half a
//! line, or ten lines and the start of an eleventh. A [`Decoder`] finds where each frame of a
//! protocol ends, an [`Encoder`] writes a frame so that the peer's decoder finds its end, and
//! [`Framed`] is what the process owning a socket keeps: it accumulates the bytes received and
//! hands out complete items, so that no protocol code splits bytes by hand.
//!
//! Two codecs come with it: [`LinesCodec`], UTF-8 lines ending in `\n` (chat, text
//! protocols), and [`LengthDelimited`], a length prefix then that many bytes (binary and RPC
//! protocols). Other protocols implement the two traits.
//!
//! ```
//! use whirl::net::{Framed, LinesCodec};
//!
//! let mut framed = Framed::new(LinesCodec::new(1024));
//! framed.push(b"hello, wo");
//! assert_eq!(framed.next_item()?, None); // half a line: nothing yet
//! framed.push(b"rld\r\nsecond\nthi");
//! assert_eq!(framed.next_item()?.as_deref(), Some("hello, world"));
//! assert_eq!(framed.next_item()?.as_deref(), Some("second"));
//! assert_eq!(framed.next_item()?, None); // "thi" waits for the rest of its line
//! framed.push_eof(); // the peer sends nothing more: a last line needs no `\n`
//! assert_eq!(framed.next_item()?.as_deref(), Some("thi"));
//!
//! // And the other way: a line to write, as the message for its `SocketConnection`.
//! let msg = framed.encode("hi")?;
//! assert!(matches!(msg, whirl::net::SocketMsg::Write(bytes) if bytes == b"hi\n"));
//! # Ok::<(), whirl::net::LinesCodecError>(())
//! ```
//!
//! [`Framed`]'s documentation shows a process serving a connection with it.
//!
//! # Bounds
//!
//! Every codec here has a maximum frame length and reports an error as soon as a frame is
//! known to exceed it: a line still without its `\n` after the maximum, a length prefix above
//! the maximum before anything is allocated for the frame. So once
//! [`next_item`](Framed::next_item) has returned `Ok(None)`, a [`Framed`] holds at most one
//! incomplete frame no longer than that maximum: a peer cannot make it buffer without bound.
//!
//! # Errors
//!
//! An error is about one frame, which is dropped; the codec stays in step with the stream. The
//! owner may answer the error and go on (the next `next_item` continues with the frame after
//! the bad one) or close the connection, which is what most servers should do with a peer
//! that breaks the protocol.
//!
//! # Design
//!
//! The received bytes wait in a [`DecodeBuf`]: a `Vec<u8>` and a read offset. Taking a frame
//! off the front advances the offset instead of moving the bytes behind it; those are moved
//! to the front only when new bytes arrive and they are no more than the bytes consumed
//! before them. Each move is paid for by the consumption before it, so a read holding
//! thousands of frames is decoded in time linear in its length, not quadratic.
//!
//! The traits have the shape of tokio-util's (`decode` and `decode_eof` on a buffer,
//! `Encoder<Item>`), so a codec ports between the two by changing the buffer type, but they
//! are not tokio-util's: that crate depends on tokio, which whirl's core does not, and its
//! decoder errors must be `From<io::Error>`, an error no decoder here can meet. `bytes`'
//! `BytesMut` would be an acceptable dependency, and it splits a frame off without a copy; but
//! the socket API is `Vec<u8>` both ways ([`SocketEvent::Data`], [`SocketMsg::Write`]) and an
//! item sent to another process is an owned value, so copying a frame out of the buffer is the
//! one copy there is anyway. A `Vec` with an offset gives the same linear cost without a
//! second byte type in whirl's API.
//!
//! Part of `net`: uses the socket's messages and `isolation`.
//!
//! [`SocketEvent::Data`]: super::SocketEvent::Data

use std::fmt;
use std::ops::Deref;

use thiserror::Error;

use super::socket::SocketMsg;
use crate::isolation::Isolated;

// ---------------------------------------------------------------------------------------------
// The traits.
// ---------------------------------------------------------------------------------------------

/// Finds the frames of a protocol in the bytes received: the reading half of a codec.
///
/// [`Framed`] calls [`decode`](Decoder::decode) with the same [`DecodeBuf`] every time, after
/// appending the bytes of each read to it, until it returns `Ok(None)`. A decoder may keep
/// state between calls (how far it has already looked, a frame's length read from its
/// prefix), as long as it consumes bytes only from the front of the buffer.
///
/// ```
/// use whirl::net::{DecodeBuf, Decoder, Framed};
///
/// /// Frames of a protocol whose messages are single bytes, 0 excepted.
/// struct Bytes;
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("the byte 0 is not a message")]
/// struct Zero;
///
/// impl Decoder for Bytes {
///     type Item = u8;
///     type Error = Zero;
///
///     fn decode(&mut self, buf: &mut DecodeBuf) -> Result<Option<u8>, Zero> {
///         let Some(&byte) = buf.first() else { return Ok(None) };
///         buf.consume(1); // consumed even when refused, so the stream stays in step
///         if byte == 0 { Err(Zero) } else { Ok(Some(byte)) }
///     }
/// }
///
/// let mut framed = Framed::new(Bytes);
/// framed.push(&[7, 0, 9]);
/// assert_eq!(framed.next_item()?, Some(7));
/// assert!(framed.next_item().is_err());
/// assert_eq!(framed.next_item()?, Some(9));
/// # Ok::<(), Zero>(())
/// ```
pub trait Decoder {
    /// What a frame decodes to.
    type Item;
    /// Why a frame could not be decoded.
    type Error: std::error::Error;

    /// Takes the next complete frame off the front of `buf`: `Ok(Some(item))`, consuming its
    /// bytes, or `Ok(None)` if `buf` does not hold a complete frame yet (consuming nothing, or
    /// only bytes the decoder is discarding).
    ///
    /// An error must consume the bytes at fault (or note, in the decoder, that it is
    /// discarding them), so that the next call makes progress; the decoder should also fail
    /// rather than wait as soon as the incomplete frame at the front is known to be too long,
    /// so that `buf` stays bounded.
    fn decode(&mut self, buf: &mut DecodeBuf) -> Result<Option<Self::Item>, Self::Error>;

    /// The same once the peer will send nothing more: the bytes left after the last complete
    /// frame are all there will be. The default decodes as usual, leaving an incomplete frame
    /// in the buffer ([`Framed::buffered`] tells); a decoder overrides it to take such a last
    /// frame as it is or to report it truncated.
    fn decode_eof(&mut self, buf: &mut DecodeBuf) -> Result<Option<Self::Item>, Self::Error> {
        self.decode(buf)
    }
}

/// Writes items as frames a peer's [`Decoder`] finds the end of: the writing half of a codec.
pub trait Encoder<Item> {
    /// Why an item cannot be encoded.
    type Error: std::error::Error;

    /// Appends `item`, framed, to `dst`. On error `dst` is left as it was.
    fn encode(&mut self, item: Item, dst: &mut Vec<u8>) -> Result<(), Self::Error>;
}

// ---------------------------------------------------------------------------------------------
// The buffer.
// ---------------------------------------------------------------------------------------------

/// The bytes received and not yet decoded: a [`Decoder`] reads them through `Deref<Target =
/// [u8]>` and takes frames off the front with [`consume`](DecodeBuf::consume) and
/// [`split_to`](DecodeBuf::split_to).
///
/// Consuming only advances a read offset; the bytes left are moved to the front when more
/// arrive and they are no more than those consumed, so decoding costs time linear in the bytes
/// received however many frames a read holds. When it empties, the buffer keeps an allocation
/// of at most 16 KiB, so an idle connection holds little.
#[derive(Clone, Default)]
pub struct DecodeBuf {
    bytes: Vec<u8>,
    /// Bytes at the front of `bytes` already consumed.
    start: usize,
}

/// The allocation an emptied [`DecodeBuf`] keeps (about one socket read).
const RETAINED_CAPACITY: usize = 16 * 1024;

impl DecodeBuf {
    /// An empty buffer.
    pub fn new() -> Self {
        DecodeBuf::default()
    }

    /// Appends `more`.
    pub fn extend_from_slice(&mut self, more: &[u8]) {
        let left = self.bytes.len() - self.start;
        if self.start > 0 && left <= self.start {
            // Moving `left` bytes is paid for by the `start` bytes consumed before them.
            self.bytes.drain(..self.start);
            self.start = 0;
        }
        self.bytes.extend_from_slice(more);
    }

    /// Makes room for at least `additional` more bytes (a decoder that knows how long the
    /// frame it waits for is, and has checked that length against its maximum).
    pub fn reserve(&mut self, additional: usize) {
        self.bytes.reserve(additional);
    }

    /// Drops the first `n` bytes.
    ///
    /// # Panics
    ///
    /// If the buffer holds fewer than `n` bytes: a bug in the decoder, which should check
    /// [`len`](slice::len) first.
    pub fn consume(&mut self, n: usize) {
        assert!(
            n <= self.len(),
            "a decoder consumed {n} bytes of a buffer holding {}",
            self.len()
        );
        self.start += n;
        if self.start == self.bytes.len() {
            self.clear();
        }
    }

    /// Takes the first `n` bytes off the front.
    ///
    /// # Panics
    ///
    /// If the buffer holds fewer than `n` bytes, as [`consume`](DecodeBuf::consume).
    pub fn split_to(&mut self, n: usize) -> Vec<u8> {
        assert!(
            n <= self.len(),
            "a decoder took {n} bytes of a buffer holding {}",
            self.len()
        );
        let front = self[..n].to_vec();
        self.consume(n);
        front
    }

    /// Drops everything.
    pub fn clear(&mut self) {
        self.start = 0;
        if self.bytes.capacity() > RETAINED_CAPACITY {
            self.bytes = Vec::new();
        } else {
            self.bytes.clear();
        }
    }

    /// The bytes, as a slice (also reachable through `Deref`).
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

impl Deref for DecodeBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl From<Vec<u8>> for DecodeBuf {
    fn from(bytes: Vec<u8>) -> Self {
        DecodeBuf { bytes, start: 0 }
    }
}

impl fmt::Debug for DecodeBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DecodeBuf")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

// ---------------------------------------------------------------------------------------------
// Framed.
// ---------------------------------------------------------------------------------------------

/// A codec and the bytes received from one peer: what the process owning a
/// [`SocketConnection`](super::SocketConnection) keeps to turn its [`SocketEvent`]s into
/// items, and items into [`SocketMsg::Write`]s.
///
/// [`push`](Framed::push) the bytes of each [`SocketEvent::Data`], then take the items that
/// became complete with [`next_item`](Framed::next_item) until it returns `Ok(None)`; on
/// [`SocketEvent::Eof`], [`push_eof`](Framed::push_eof) and take the last ones. The codecs
/// here report a frame too long as soon as it is known to be, so draining after every push
/// keeps the buffer within the codec's maximum frame length: a peer cannot make it grow
/// without bound. After an error the codec has dropped the bad frame and stays in step with
/// the stream: answer and go on, or close the connection.
///
/// ```
/// use std::io::{BufRead, BufReader, Write};
/// use std::net::{SocketAddr, TcpStream};
/// use whirl::net::{
///     AcceptError, Acceptor, Framed, LinesCodec, LinesCodecError, SocketConnection, SocketEvent,
///     SocketMsg,
/// };
/// use whirl::prelude::*;
///
/// /// Answers each line with its length.
/// #[process]
/// struct Measure {
///     socket: Addr<SocketConnection>,
///     framed: Framed<LinesCodec>,
/// }
///
/// #[process]
/// impl Measure {
///     #[started]
///     fn attach(&mut self, ctx: &mut Ctx<Self>) {
///         let _ = self.socket.post(SocketMsg::Attach(ctx.myself().into()));
///     }
///
///     #[handle]
///     fn event(&mut self, event: SocketEvent, ctx: &mut Ctx<Self>) {
///         let eof = matches!(event, SocketEvent::Eof);
///         match event {
///             SocketEvent::Data(bytes) => self.framed.push(&bytes),
///             SocketEvent::Eof => self.framed.push_eof(),
///             SocketEvent::Closed(_) => return ctx.complete(),
///             _ => return,
///         }
///         let answered = self.answer();
///         if let Err(e) = &answered {
///             // A line too long, or not UTF-8: say so and hang up.
///             let _ = self.socket.post(SocketMsg::Write(format!("error: {e}\n").into()));
///         }
///         if eof || answered.is_err() {
///             let _ = self.socket.post(SocketMsg::Close);
///         }
///     }
/// }
///
/// impl Measure {
///     fn answer(&mut self) -> Result<(), LinesCodecError> {
///         while let Some(line) = self.framed.next_item()? {
///             let reply = self.framed.encode(format!("{} bytes", line.len()))?;
///             let _ = self.socket.post(reply);
///         }
///         Ok(())
///     }
/// }
///
/// fn serve(stream: TcpStream, _: SocketAddr, ctx: &mut Ctx<Acceptor>) -> Result<(), AcceptError> {
///     let socket = ctx.spawn(SocketConnection::new(stream, ctx.net()?)?);
///     ctx.spawn(Measure { socket, framed: Framed::new(LinesCodec::new(4096)) });
///     Ok(())
/// }
///
/// let rt = Runtime::new();
/// let (acceptor, addr) = Acceptor::bind_fn("127.0.0.1:0".parse()?, rt.net()?, serve)?;
/// rt.spawn(acceptor);
///
/// let mut client = TcpStream::connect(addr)?;
/// client.write_all(b"hello\r\nwor")?; // a line and a half
/// client.flush()?;
/// client.write_all(b"ld!\n")?;
/// let mut answers = BufReader::new(client).lines();
/// assert_eq!(answers.next().transpose()?.as_deref(), Some("5 bytes"));
/// assert_eq!(answers.next().transpose()?.as_deref(), Some("6 bytes"));
/// rt.shutdown_graceful();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`SocketEvent`]: super::SocketEvent
/// [`SocketEvent::Data`]: super::SocketEvent::Data
/// [`SocketEvent::Eof`]: super::SocketEvent::Eof
#[derive(Clone, Debug)]
pub struct Framed<C> {
    codec: C,
    buf: DecodeBuf,
    /// The peer sends nothing more: decode with `decode_eof`.
    eof: bool,
}

impl<C> Framed<C> {
    /// Frames the bytes of one peer with `codec`.
    pub fn new(codec: C) -> Self {
        Framed {
            codec,
            buf: DecodeBuf::new(),
            eof: false,
        }
    }

    /// Appends bytes received (those of a [`SocketEvent::Data`](super::SocketEvent::Data)).
    /// Take the items they complete with [`next_item`](Framed::next_item) before pushing more.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Notes that the peer sends nothing more ([`SocketEvent::Eof`](super::SocketEvent::Eof)):
    /// from now on [`next_item`](Framed::next_item) lets the codec judge the bytes after the
    /// last complete frame ([`Decoder::decode_eof`]): a last line without its `\n` is still
    /// a line, a frame cut short is an error.
    pub fn push_eof(&mut self) {
        self.eof = true;
    }

    /// Bytes received and not yet part of an item.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The codec.
    pub fn codec(&self) -> &C {
        &self.codec
    }

    /// The codec, to change its settings between frames.
    pub fn codec_mut(&mut self) -> &mut C {
        &mut self.codec
    }

    /// The message that writes `item`, encoded by the codec, to the socket:
    /// `socket.post(framed.encode(item)?)`.
    pub fn encode<T>(&mut self, item: T) -> Result<SocketMsg, <C as Encoder<T>>::Error>
    where
        C: Encoder<T>,
    {
        let mut bytes = Vec::new();
        self.codec.encode(item, &mut bytes)?;
        Ok(SocketMsg::Write(bytes))
    }
}

impl<C: Decoder> Framed<C> {
    /// The next complete item, `Ok(None)` if the bytes pushed so far hold none, or the error of
    /// a frame that could not be decoded. After an error the codec has dropped the bad frame:
    /// calling again continues with the next one (or close the connection).
    pub fn next_item(&mut self) -> Result<Option<C::Item>, C::Error> {
        if self.eof {
            self.codec.decode_eof(&mut self.buf)
        } else {
            self.codec.decode(&mut self.buf)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Lines.
// ---------------------------------------------------------------------------------------------

/// UTF-8 lines ending in `\n`, with one `\r` before it stripped (so `\r\n` works too), each at
/// most a maximum number of bytes long (not counting the `\r\n` or `\n`).
///
/// Decoding a line longer than the maximum is an error as soon as the line has that many
/// bytes without a `\n`: the codec drops what it has and the rest of the line as it arrives,
/// and the next line decodes normally. A line that is not UTF-8 is an error too, and is
/// dropped. Encoding appends the `\n`, and refuses a line that the other side would not read
/// back as it was: longer than the maximum, holding a `\n`, or ending in `\r`.
#[derive(Clone, Debug)]
pub struct LinesCodec {
    max_line_len: usize,
    /// Bytes at the front of the buffer known to hold no `\n`.
    scanned: usize,
    /// Dropping the rest of a line that was too long.
    discarding: bool,
}

impl LinesCodec {
    /// Lines of at most `max_line_len` bytes.
    pub fn new(max_line_len: usize) -> Self {
        LinesCodec {
            max_line_len,
            scanned: 0,
            discarding: false,
        }
    }

    /// The longest line, in bytes, not counting its `\r\n` or `\n`.
    pub fn max_line_len(&self) -> usize {
        self.max_line_len
    }

    /// `bytes`, a line without its `\n`, as a string.
    fn line(&self, bytes: &[u8]) -> Result<String, LinesCodecError> {
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if bytes.len() > self.max_line_len {
            return Err(LinesCodecError::LineTooLong {
                max: self.max_line_len,
            });
        }
        match std::str::from_utf8(bytes) {
            Ok(line) => Ok(line.to_owned()),
            Err(e) => Err(LinesCodecError::InvalidUtf8(e)),
        }
    }
}

/// Why a line could not be decoded or encoded by a [`LinesCodec`].
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LinesCodecError {
    /// The line is longer than the codec's maximum.
    #[error("line longer than the limit of {max} bytes")]
    LineTooLong {
        /// The codec's maximum line length.
        max: usize,
    },
    /// A line received is not valid UTF-8.
    #[error("line is not valid UTF-8")]
    InvalidUtf8(#[source] std::str::Utf8Error),
    /// A line to send holds a `\n`, or ends in `\r`: the peer would not read it back whole.
    #[error("line to send holds a line break (`\\n`, or `\\r` at its end)")]
    LineBreak,
}

impl Decoder for LinesCodec {
    type Item = String;
    type Error = LinesCodecError;

    fn decode(&mut self, buf: &mut DecodeBuf) -> Result<Option<String>, LinesCodecError> {
        loop {
            // Only the bytes not looked at yet: a long line arriving in small reads is
            // scanned once, not once per read.
            let from = self.scanned.min(buf.len());
            let newline = buf[from..].iter().position(|&b| b == b'\n');
            self.scanned = 0;
            match newline.map(|i| from + i) {
                Some(end) if self.discarding => {
                    // The end of a line already reported too long.
                    buf.consume(end + 1);
                    self.discarding = false;
                }
                Some(end) => {
                    let line = self.line(&buf[..end]);
                    buf.consume(end + 1);
                    return line.map(Some);
                }
                None if self.discarding => {
                    buf.clear();
                    return Ok(None);
                }
                // One byte more than the maximum may be the `\r` of a `\r\n`.
                None if buf.len() > self.max_line_len.saturating_add(1) => {
                    buf.clear();
                    self.discarding = true;
                    return Err(LinesCodecError::LineTooLong {
                        max: self.max_line_len,
                    });
                }
                None => {
                    self.scanned = buf.len();
                    return Ok(None);
                }
            }
        }
    }

    /// Decodes the lines left; then the bytes after the last `\n`, if any, are a last line.
    fn decode_eof(&mut self, buf: &mut DecodeBuf) -> Result<Option<String>, LinesCodecError> {
        if let Some(line) = self.decode(buf)? {
            return Ok(Some(line));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        let line = self.line(buf);
        self.scanned = 0;
        buf.clear();
        line.map(Some)
    }
}

impl<T: AsRef<str>> Encoder<T> for LinesCodec {
    type Error = LinesCodecError;

    fn encode(&mut self, line: T, dst: &mut Vec<u8>) -> Result<(), LinesCodecError> {
        let line = line.as_ref().as_bytes();
        if line.len() > self.max_line_len {
            return Err(LinesCodecError::LineTooLong {
                max: self.max_line_len,
            });
        }
        if line.contains(&b'\n') || line.ends_with(b"\r") {
            return Err(LinesCodecError::LineBreak);
        }
        dst.reserve(line.len() + 1);
        dst.extend_from_slice(line);
        dst.push(b'\n');
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Length-delimited frames.
// ---------------------------------------------------------------------------------------------

/// The length prefix of a [`LengthDelimited`] frame: its width and byte order. The default,
/// and the usual choice, is [`U32Be`](LengthPrefix::U32Be).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LengthPrefix {
    /// One byte (frames of at most 255 bytes).
    U8,
    /// Two bytes, big-endian.
    U16Be,
    /// Two bytes, little-endian.
    U16Le,
    /// Four bytes, big-endian (network byte order).
    #[default]
    U32Be,
    /// Four bytes, little-endian.
    U32Le,
    /// Eight bytes, big-endian.
    U64Be,
    /// Eight bytes, little-endian.
    U64Le,
}

impl LengthPrefix {
    /// The prefix's width in bytes.
    pub fn width(self) -> usize {
        match self {
            LengthPrefix::U8 => 1,
            LengthPrefix::U16Be | LengthPrefix::U16Le => 2,
            LengthPrefix::U32Be | LengthPrefix::U32Le => 4,
            LengthPrefix::U64Be | LengthPrefix::U64Le => 8,
        }
    }

    /// The longest length it can say.
    fn max_len(self) -> u64 {
        match self.width() {
            8 => u64::MAX,
            width => (1u64 << (8 * width)) - 1,
        }
    }

    fn big_endian(self) -> bool {
        matches!(
            self,
            LengthPrefix::U8 | LengthPrefix::U16Be | LengthPrefix::U32Be | LengthPrefix::U64Be
        )
    }

    /// The length in `prefix`, exactly [`width`](LengthPrefix::width) bytes.
    fn read(self, prefix: &[u8]) -> u64 {
        let fold = |n: u64, &b: &u8| n << 8 | u64::from(b);
        if self.big_endian() {
            prefix.iter().fold(0, fold)
        } else {
            prefix.iter().rev().fold(0, fold)
        }
    }

    /// Appends `len`, at most [`max_len`](LengthPrefix::max_len).
    fn write(self, len: u64, dst: &mut Vec<u8>) {
        let width = self.width();
        if self.big_endian() {
            dst.extend_from_slice(&len.to_be_bytes()[8 - width..]);
        } else {
            dst.extend_from_slice(&len.to_le_bytes()[..width]);
        }
    }
}

/// Frames made of a length prefix, by default a big-endian `u32`, then that many bytes; a
/// frame decodes to its bytes (`Vec<u8>`, empty for a zero length).
///
/// Frames are at most a maximum length (which the prefix's width may lower: 255 bytes for
/// [`LengthPrefix::U8`]). A prefix above it is an error as soon as the prefix is read, before
/// any memory is set aside for the frame; the codec then skips the frame's bytes as they
/// arrive without keeping them, and the next frame decodes normally. A stream that ends in the
/// middle of a frame is an error too ([`Framed::push_eof`]).
///
/// ```
/// use whirl::net::{Encoder, Framed, LengthDelimited, LengthPrefix};
///
/// let mut codec = LengthDelimited::new(1024).with_prefix(LengthPrefix::U16Be);
/// let mut wire = Vec::new();
/// codec.encode(b"ping", &mut wire)?;
/// assert_eq!(wire, [0, 4, b'p', b'i', b'n', b'g']);
///
/// let mut framed = Framed::new(codec);
/// framed.push(&wire);
/// assert_eq!(framed.next_item()?, Some(b"ping".to_vec()));
/// # Ok::<(), whirl::net::LengthDelimitedError>(())
/// ```
#[derive(Clone, Debug)]
pub struct LengthDelimited {
    prefix: LengthPrefix,
    /// As configured; [`LengthDelimited::max_frame_len`] also applies the prefix's limit.
    max_frame_len: usize,
    state: LengthState,
}

/// Where a [`LengthDelimited`] decoder is in the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LengthState {
    /// At a prefix.
    Prefix,
    /// Prefix read: waiting for a frame of this many bytes.
    Body(usize),
    /// Dropping the rest of a frame reported too long: this many bytes.
    Skip(u64),
}

impl LengthDelimited {
    /// Frames of at most `max_frame_len` bytes, with a big-endian `u32` prefix.
    pub fn new(max_frame_len: usize) -> Self {
        LengthDelimited {
            prefix: LengthPrefix::default(),
            max_frame_len,
            state: LengthState::Prefix,
        }
    }

    /// The same with another length prefix.
    #[must_use]
    pub fn with_prefix(mut self, prefix: LengthPrefix) -> Self {
        self.prefix = prefix;
        self
    }

    /// The length prefix.
    pub fn prefix(&self) -> LengthPrefix {
        self.prefix
    }

    /// The longest frame, in bytes, not counting its prefix: the maximum given to
    /// [`new`](LengthDelimited::new), or less if the prefix cannot say that much.
    pub fn max_frame_len(&self) -> usize {
        usize::try_from(self.prefix.max_len()).map_or(self.max_frame_len, |prefix_max| {
            prefix_max.min(self.max_frame_len)
        })
    }

    fn too_long(&self, len: u64) -> LengthDelimitedError {
        LengthDelimitedError::FrameTooLong {
            len,
            max: self.max_frame_len(),
        }
    }
}

/// Why a frame could not be decoded or encoded by a [`LengthDelimited`] codec.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LengthDelimitedError {
    /// The frame is longer than the codec's maximum.
    #[error("frame of {len} bytes is longer than the limit of {max} bytes")]
    FrameTooLong {
        /// The frame's length, as its prefix says (decoding) or as given (encoding).
        len: u64,
        /// The codec's maximum frame length.
        max: usize,
    },
    /// The peer closed the stream in the middle of a frame.
    #[error("the stream ended in the middle of a frame, {received} bytes into it")]
    Truncated {
        /// The bytes of the frame that arrived, prefix included.
        received: usize,
    },
}

impl Decoder for LengthDelimited {
    type Item = Vec<u8>;
    type Error = LengthDelimitedError;

    fn decode(&mut self, buf: &mut DecodeBuf) -> Result<Option<Vec<u8>>, LengthDelimitedError> {
        loop {
            match self.state {
                LengthState::Skip(left) => {
                    let available = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    buf.consume(available);
                    // `available` is at most `left`, so this does not wrap.
                    let left = left - available as u64;
                    if left > 0 {
                        self.state = LengthState::Skip(left);
                        return Ok(None);
                    }
                    self.state = LengthState::Prefix;
                }
                LengthState::Prefix => {
                    let width = self.prefix.width();
                    if buf.len() < width {
                        return Ok(None);
                    }
                    let len = self.prefix.read(&buf[..width]);
                    buf.consume(width);
                    match usize::try_from(len) {
                        Ok(len) if len <= self.max_frame_len() => {
                            self.state = LengthState::Body(len);
                        }
                        _ => {
                            self.state = LengthState::Skip(len);
                            return Err(self.too_long(len));
                        }
                    }
                }
                LengthState::Body(len) => {
                    if buf.len() < len {
                        // `len` is within the maximum: room for the whole frame at once.
                        buf.reserve(len - buf.len());
                        return Ok(None);
                    }
                    self.state = LengthState::Prefix;
                    return Ok(Some(buf.split_to(len)));
                }
            }
        }
    }

    /// Decodes the frames left; then bytes after the last complete frame are a frame cut
    /// short, [`LengthDelimitedError::Truncated`].
    fn decode_eof(&mut self, buf: &mut DecodeBuf) -> Result<Option<Vec<u8>>, LengthDelimitedError> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        let received = match self.state {
            LengthState::Prefix if buf.is_empty() => return Ok(None),
            LengthState::Prefix => buf.len(),
            LengthState::Body(_) => self.prefix.width() + buf.len(),
            // The rest of a frame already reported.
            LengthState::Skip(_) => 0,
        };
        buf.clear();
        self.state = LengthState::Prefix;
        if received == 0 {
            return Ok(None);
        }
        Err(LengthDelimitedError::Truncated { received })
    }
}

impl<T: AsRef<[u8]>> Encoder<T> for LengthDelimited {
    type Error = LengthDelimitedError;

    fn encode(&mut self, frame: T, dst: &mut Vec<u8>) -> Result<(), LengthDelimitedError> {
        let frame = frame.as_ref();
        if frame.len() > self.max_frame_len() {
            return Err(self.too_long(frame.len() as u64));
        }
        dst.reserve(self.prefix.width() + frame.len());
        // Within `max_frame_len`, hence within what the prefix can say.
        self.prefix.write(frame.len() as u64, dst);
        dst.extend_from_slice(frame);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Isolation: a process keeps its `Framed` in its state.
// ---------------------------------------------------------------------------------------------

// SAFETY: owned bytes and an offset. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for DecodeBuf {}
// SAFETY: the codec, owned bytes and a flag: isolated exactly when the codec is. (I8)
unsafe impl<C: Isolated> Isolated for Framed<C> {}
// SAFETY: numbers and flags. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for LinesCodec {}
// SAFETY: a number, or a `Utf8Error` (two numbers). (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for LinesCodecError {}
// SAFETY: a variant. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for LengthPrefix {}
// SAFETY: a prefix, a number and the decoding state (numbers). (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for LengthDelimited {}
// SAFETY: numbers. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for LengthDelimitedError {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pushes each chunk and drains after it, as an owner does, then ends the stream; every
    /// outcome in order, errors by their text.
    fn outcomes<C>(codec: C, chunks: &[&[u8]]) -> Vec<Result<C::Item, String>>
    where
        C: Decoder,
    {
        let mut framed = Framed::new(codec);
        let mut out = Vec::new();
        let drain = |framed: &mut Framed<C>, out: &mut Vec<_>| {
            for _ in 0..100_000 {
                match framed.next_item() {
                    Ok(Some(item)) => out.push(Ok(item)),
                    Ok(None) => return,
                    Err(e) => out.push(Err(e.to_string())),
                }
            }
            panic!("the decoder keeps yielding without consuming");
        };
        for chunk in chunks {
            framed.push(chunk);
            drain(&mut framed, &mut out);
        }
        framed.push_eof();
        drain(&mut framed, &mut out);
        assert_eq!(
            framed.buffered(),
            0,
            "bytes left after the end of the stream"
        );
        out
    }

    fn lines(max: usize, chunks: &[&[u8]]) -> Vec<Result<String, String>> {
        outcomes(LinesCodec::new(max), chunks)
    }

    fn ok(items: &[&str]) -> Vec<Result<String, String>> {
        items.iter().map(|s| Ok(s.to_string())).collect()
    }

    fn too_long(max: usize) -> Result<String, String> {
        Err(LinesCodecError::LineTooLong { max }.to_string())
    }

    // --- the buffer ---------------------------------------------------------------------------

    #[test]
    fn the_buffer_compacts_only_when_the_move_is_paid_for() {
        let mut buf = DecodeBuf::new();
        buf.extend_from_slice(b"0123456789");
        buf.consume(3);
        buf.extend_from_slice(b"ab"); // 7 left > 3 consumed: appended behind the offset
        assert_eq!((buf.start, buf.as_slice()), (3, &b"3456789ab"[..]));
        assert_eq!(buf.split_to(6), b"345678");
        buf.extend_from_slice(b"c"); // 3 left <= 9 consumed: moved to the front
        assert_eq!((buf.start, &buf[..]), (0, &b"9abc"[..]));
        buf.consume(4);
        assert!(buf.is_empty());
        assert_eq!(buf.start, 0, "an emptied buffer starts over");
    }

    #[test]
    fn an_emptied_buffer_keeps_at_most_a_reads_worth_of_memory() {
        let mut buf = DecodeBuf::from(vec![0; 1 << 20]);
        buf.consume(1 << 20);
        assert!(buf.bytes.capacity() <= RETAINED_CAPACITY);
        let mut small = DecodeBuf::from(Vec::with_capacity(100));
        small.extend_from_slice(b"x");
        small.consume(1);
        assert_eq!(small.bytes.capacity(), 100, "a small allocation is reused");
    }

    #[test]
    #[should_panic(expected = "consumed 2 bytes of a buffer holding 1")]
    fn consuming_more_than_the_buffer_holds_is_a_decoder_bug() {
        DecodeBuf::from(vec![1]).consume(2);
    }

    #[test]
    fn many_frames_in_one_read_are_decoded_without_moving_the_rest() {
        let mut wire = Vec::new();
        let mut codec = LengthDelimited::new(16);
        for i in 0..10_000u32 {
            codec.encode(i.to_be_bytes(), &mut wire).unwrap();
        }
        let mut framed = Framed::new(codec);
        framed.push(&wire);
        let mut n = 0u32;
        while let Some(frame) = framed.next_item().unwrap() {
            assert_eq!(frame, n.to_be_bytes());
            n += 1;
            if framed.buf.is_empty() {
                break;
            }
            // Never compacted in between: only `push` moves bytes.
            assert_eq!(framed.buf.start + framed.buf.len(), wire.len());
        }
        assert_eq!(n, 10_000);
    }

    // --- lines --------------------------------------------------------------------------------

    #[test]
    fn a_line_arriving_in_pieces_comes_out_whole() {
        assert_eq!(
            lines(64, &[b"hel", b"lo, ", b"world", b"\n"]),
            ok(&["hello, world"])
        );
        assert_eq!(lines(64, &[b"a\r", b"\nb"]), ok(&["a", "b"]));
    }

    #[test]
    fn several_lines_in_one_read_come_out_one_by_one() {
        assert_eq!(
            lines(64, &[b"one\ntwo\r\nthree\nfo", b"ur\n"]),
            ok(&["one", "two", "three", "four"])
        );
    }

    #[test]
    fn empty_lines_are_lines() {
        assert_eq!(lines(64, &[b"\n\r\n\nx\n"]), ok(&["", "", "", "x"]));
    }

    #[test]
    fn only_one_carriage_return_before_the_newline_is_stripped() {
        assert_eq!(lines(64, &[b"a\r\r\nb\rc\n"]), ok(&["a\r", "b\rc"]));
    }

    #[test]
    fn a_line_of_the_maximum_length_is_accepted_with_either_ending() {
        assert_eq!(lines(3, &[b"abc\nabc\r\n"]), ok(&["abc", "abc"]));
        // The `\r` of a maximal line arrives alone: not yet too long.
        assert_eq!(lines(3, &[b"abc\r", b"\n"]), ok(&["abc"]));
    }

    #[test]
    fn a_line_too_long_is_an_error_and_the_next_line_decodes() {
        // Whole, in one read.
        assert_eq!(
            lines(3, &[b"abcd\nok\n"]),
            vec![too_long(3), Ok("ok".into())]
        );
        // In pieces: reported once, as soon as it is known, then dropped to its end.
        let pieces: &[&[u8]] = &[b"abcde", b"fgh", b"ij\nok", b"\n"];
        assert_eq!(lines(3, pieces), vec![too_long(3), Ok("ok".into())]);
    }

    #[test]
    fn an_endless_line_is_reported_early_and_never_buffered() {
        let mut framed = Framed::new(LinesCodec::new(1024));
        let chunk = [b'x'; 4096];
        framed.push(&chunk);
        assert_eq!(
            framed.next_item(),
            Err(LinesCodecError::LineTooLong { max: 1024 })
        );
        for _ in 0..1000 {
            framed.push(&chunk);
            assert_eq!(framed.next_item(), Ok(None));
            assert_eq!(framed.buffered(), 0);
        }
        framed.push(b"\nafter\n");
        assert_eq!(framed.next_item(), Ok(Some("after".into())));
    }

    #[test]
    fn a_line_without_its_newline_stays_within_the_maximum_plus_one() {
        let mut framed = Framed::new(LinesCodec::new(8));
        for byte in b"123456789" {
            framed.push(&[*byte]);
            assert_eq!(framed.next_item(), Ok(None));
        }
        assert_eq!(
            framed.buffered(),
            9,
            "one byte over the maximum may be a `\\r`"
        );
        framed.push(b"0");
        assert!(framed.next_item().is_err());
        assert_eq!(framed.buffered(), 0);
    }

    #[test]
    fn invalid_utf8_is_an_error_for_that_line_only() {
        let outcome = lines(64, &[b"ok\n\xff\xfe\nfine\n"]);
        assert_eq!(outcome[0], Ok("ok".into()));
        assert!(
            matches!(&outcome[1], Err(e) if e.contains("UTF-8")),
            "{outcome:?}"
        );
        assert_eq!(outcome[2], Ok("fine".into()));
        let mut codec = LinesCodec::new(64);
        let mut buf = DecodeBuf::from(b"caf\xc3\n".to_vec());
        let err = codec.decode(&mut buf).unwrap_err();
        assert!(matches!(err, LinesCodecError::InvalidUtf8(_)));
        assert!(
            std::error::Error::source(&err).is_some(),
            "the cause is chained"
        );
    }

    #[test]
    fn at_the_end_of_the_stream_a_last_line_needs_no_newline() {
        assert_eq!(lines(64, &[b"a\nlast"]), ok(&["a", "last"]));
        assert_eq!(lines(64, &[b"a\nlast\r"]), ok(&["a", "last"]));
        assert_eq!(lines(3, &[b"a\nlong"]), vec![Ok("a".into()), too_long(3)]);
        assert_eq!(lines(64, &[b"a\n"]), ok(&["a"]));
        assert_eq!(lines(64, &[]), ok(&[]));
    }

    #[test]
    fn encoding_a_line_appends_its_newline_and_refuses_what_would_not_read_back() {
        let mut codec = LinesCodec::new(5);
        let mut dst = b"x\n".to_vec();
        codec.encode("hello", &mut dst).unwrap();
        codec.encode(String::new(), &mut dst).unwrap();
        assert_eq!(dst, b"x\nhello\n\n");
        for (line, err) in [
            ("hello!", LinesCodecError::LineTooLong { max: 5 }),
            ("a\nb", LinesCodecError::LineBreak),
            ("ab\r", LinesCodecError::LineBreak),
        ] {
            assert_eq!(codec.encode(line, &mut dst), Err(err));
        }
        assert_eq!(dst, b"x\nhello\n\n", "a refused line writes nothing");
        let msg = Framed::new(LinesCodec::new(5)).encode("a\rb").unwrap();
        assert!(matches!(msg, SocketMsg::Write(bytes) if bytes == b"a\rb\n"));
    }

    // --- length-delimited -----------------------------------------------------------------

    fn frames(codec: LengthDelimited, chunks: &[&[u8]]) -> Vec<Result<Vec<u8>, String>> {
        outcomes(codec, chunks)
    }

    fn ok_frames(items: &[&[u8]]) -> Vec<Result<Vec<u8>, String>> {
        items.iter().map(|f| Ok(f.to_vec())).collect()
    }

    #[test]
    fn a_frame_arriving_in_pieces_comes_out_whole() {
        let pieces: &[&[u8]] = &[&[0, 0], &[0], &[5, b'h', b'e'], b"ll", b"o"];
        assert_eq!(
            frames(LengthDelimited::new(64), pieces),
            ok_frames(&[b"hello"])
        );
    }

    #[test]
    fn several_frames_and_zero_length_ones_in_one_read() {
        let wire: &[u8] = &[0, 0, 0, 2, b'h', b'i', 0, 0, 0, 0, 0, 0, 0, 1, b'!', 0, 0];
        let outcome = frames(LengthDelimited::new(64), &[wire, &[0, 0]]);
        assert_eq!(outcome, ok_frames(&[b"hi", b"", b"!", b""]));
    }

    #[test]
    fn a_prefix_above_the_maximum_is_an_error_before_the_frame_is_buffered() {
        let mut framed = Framed::new(LengthDelimited::new(1024));
        framed.push(&u32::MAX.to_be_bytes());
        let err = framed.next_item().unwrap_err();
        assert_eq!(
            err,
            LengthDelimitedError::FrameTooLong {
                len: u64::from(u32::MAX),
                max: 1024
            }
        );
        assert_eq!(
            err.to_string(),
            "frame of 4294967295 bytes is longer than the limit of 1024 bytes"
        );
        assert!(
            framed.buf.bytes.capacity() < 1 << 20,
            "nothing set aside for the frame"
        );
        // Its bytes are skipped as they come, without being kept.
        for _ in 0..16 {
            framed.push(&[7; 64 * 1024]);
            assert_eq!(framed.next_item(), Ok(None));
            assert_eq!(framed.buffered(), 0);
        }
    }

    #[test]
    fn after_a_frame_too_long_the_next_frame_decodes() {
        let mut wire = vec![0, 0, 0, 5, 1, 2, 3, 4, 5];
        wire.extend([0, 0, 0, 2, b'o', b'k']);
        let outcome = frames(LengthDelimited::new(4), &[&wire[..6], &wire[6..]]);
        let too_long = LengthDelimitedError::FrameTooLong { len: 5, max: 4 }.to_string();
        assert_eq!(outcome, vec![Err(too_long), Ok(b"ok".to_vec())]);
    }

    #[test]
    fn a_frame_of_the_maximum_length_is_accepted() {
        let outcome = frames(LengthDelimited::new(3), &[&[0, 0, 0, 3, 1, 2, 3]]);
        assert_eq!(outcome, ok_frames(&[&[1, 2, 3]]));
    }

    #[test]
    fn a_stream_ending_inside_a_frame_is_truncated() {
        let truncated = |received| Err(LengthDelimitedError::Truncated { received }.to_string());
        let codec = || LengthDelimited::new(64);
        assert_eq!(frames(codec(), &[&[0, 0]]), vec![truncated(2)]);
        assert_eq!(frames(codec(), &[&[0, 0, 0, 3, 1]]), vec![truncated(5)]);
        assert_eq!(frames(codec(), &[&[0, 0, 0, 1, 9]]), ok_frames(&[&[9]]));
        // The rest of a frame already reported is not reported again.
        let outcome = frames(LengthDelimited::new(1), &[&[0, 0, 0, 9, 1]]);
        assert_eq!(outcome.len(), 1);
    }

    #[test]
    fn every_prefix_reads_what_it_writes() {
        for prefix in [
            LengthPrefix::U8,
            LengthPrefix::U16Be,
            LengthPrefix::U16Le,
            LengthPrefix::U32Be,
            LengthPrefix::U32Le,
            LengthPrefix::U64Be,
            LengthPrefix::U64Le,
        ] {
            let mut codec = LengthDelimited::new(300).with_prefix(prefix);
            let mut wire = Vec::new();
            codec.encode([1u8; 200], &mut wire).unwrap();
            codec.encode(b"", &mut wire).unwrap();
            assert_eq!(wire.len(), 2 * prefix.width() + 200, "{prefix:?}");
            let outcome = frames(codec, &[&wire]);
            assert_eq!(outcome, ok_frames(&[&[1; 200], b""]), "{prefix:?}");
        }
        let mut wire = Vec::new();
        let mut le = LengthDelimited::new(300).with_prefix(LengthPrefix::U16Le);
        le.encode([0u8; 258], &mut wire).unwrap();
        assert_eq!(wire[..2], [2, 1]);
        let mut be = LengthDelimited::new(300);
        wire.clear();
        be.encode([0u8; 258], &mut wire).unwrap();
        assert_eq!(wire[..4], [0, 0, 1, 2]);
    }

    #[test]
    fn a_narrow_prefix_lowers_the_maximum() {
        let mut codec = LengthDelimited::new(1000).with_prefix(LengthPrefix::U8);
        assert_eq!(codec.max_frame_len(), 255);
        let mut dst = Vec::new();
        let err = codec.encode([0u8; 256], &mut dst).unwrap_err();
        assert_eq!(
            err,
            LengthDelimitedError::FrameTooLong { len: 256, max: 255 }
        );
        assert!(dst.is_empty(), "a refused frame writes nothing");
        assert_eq!(
            LengthDelimited::new(10)
                .with_prefix(LengthPrefix::U64Le)
                .max_frame_len(),
            10
        );
    }

    // --- properties -----------------------------------------------------------------------

    /// `bytes` cut at `cuts` (positions, any order, clamped).
    fn split<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
        let mut cuts: Vec<usize> = cuts.iter().map(|&c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut pieces = Vec::new();
        let mut from = 0;
        for cut in cuts {
            pieces.push(&bytes[from..cut]);
            from = cut;
        }
        pieces.push(&bytes[from..]);
        pieces
    }

    /// Bytes rich in the ones a line decoder cares about.
    fn line_bytes() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![
            4 => b'a'..=b'z',
            2 => Just(b'\n'),
            1 => Just(b'\r'),
            1 => any::<u8>(),
            1 => Just(0xc3), // the start of a two-byte UTF-8 character...
            1 => Just(0xa9), // ... and its continuation
        ];
        proptest::collection::vec(byte, 0..200)
    }

    proptest! {
        #[test]
        fn lines_do_not_depend_on_where_the_stream_is_cut(
            bytes in line_bytes(),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
            max in 0usize..12,
        ) {
            let whole = lines(max, &[&bytes]);
            prop_assert_eq!(lines(max, &split(&bytes, &cuts)), whole);
        }

        #[test]
        fn lines_read_back_what_was_written(
            sent in proptest::collection::vec("[^\n\r]{0,12}", 0..20),
            crlf in any::<bool>(),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let mut codec = LinesCodec::new(64);
            let mut wire = Vec::new();
            for line in &sent {
                codec.encode(line, &mut wire).unwrap();
                if crlf {
                    wire.pop();
                    wire.extend(b"\r\n");
                }
            }
            let expected: Vec<Result<String, String>> = sent.into_iter().map(Ok).collect();
            prop_assert_eq!(lines(64, &split(&wire, &cuts)), expected);
        }

        #[test]
        fn frames_do_not_depend_on_where_the_stream_is_cut(
            bytes in proptest::collection::vec(prop_oneof![3 => 0u8..4, 1 => any::<u8>()], 0..200),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
            max in 0usize..8,
            narrow in any::<bool>(),
        ) {
            let prefix = if narrow { LengthPrefix::U8 } else { LengthPrefix::U16Le };
            let codec = || LengthDelimited::new(max).with_prefix(prefix);
            let whole = frames(codec(), &[&bytes]);
            prop_assert_eq!(frames(codec(), &split(&bytes, &cuts)), whole);
        }

        #[test]
        fn frames_read_back_what_was_written(
            sent in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..20),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let mut codec = LengthDelimited::new(64);
            let mut wire = Vec::new();
            for frame in &sent {
                codec.encode(frame, &mut wire).unwrap();
            }
            let expected: Vec<Result<Vec<u8>, String>> = sent.into_iter().map(Ok).collect();
            prop_assert_eq!(frames(codec, &split(&wire, &cuts)), expected);
        }

        #[test]
        fn a_drained_framed_holds_at_most_one_frame_below_the_maximum(
            bytes in proptest::collection::vec(any::<u8>(), 0..400),
            cuts in proptest::collection::vec(any::<usize>(), 0..20),
            max in 0usize..16,
        ) {
            let mut lines = Framed::new(LinesCodec::new(max));
            let mut frames = Framed::new(LengthDelimited::new(max).with_prefix(LengthPrefix::U16Be));
            for piece in split(&bytes, &cuts) {
                lines.push(piece);
                while !matches!(lines.next_item(), Ok(None)) {}
                prop_assert!(lines.buffered() <= max + 1);
                frames.push(piece);
                while !matches!(frames.next_item(), Ok(None)) {}
                prop_assert!(frames.buffered() <= max.max(1));
            }
        }
    }
}
