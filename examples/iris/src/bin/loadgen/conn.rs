//! One session's keep-alive connection: connects lazily, reconnects after the server closes,
//! and retries once when a reused connection turns out to have been closed while idle.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::response::{io_error, is_reset, read_response, HttpError, Response};

/// A connection that may or may not currently be open.
pub struct Conn {
    addr: SocketAddr,
    timeout: Duration,
    stream: Option<TcpStream>,
    buf: Vec<u8>,
    /// Connections opened so far; the caller diffs it to see whether a request paid for one.
    pub connects: u64,
}

impl Conn {
    /// Not connected yet: the first exchange connects.
    pub fn new(addr: SocketAddr, timeout: Duration) -> Self {
        Conn {
            addr,
            timeout,
            stream: None,
            buf: Vec::new(),
            connects: 0,
        }
    }

    /// Sends `request` and reads the whole response, connecting first if needed.
    pub fn exchange(&mut self, request: &[u8]) -> Result<Response, HttpError> {
        for attempt in 0..2 {
            let reused = self.stream.is_some();
            if !reused {
                let stream = self.connect()?;
                self.stream = Some(stream);
            }
            let Some(stream) = self.stream.as_mut() else {
                return Err(HttpError::Closed);
            };
            let result = match stream.write_all(request) {
                Ok(()) => read_response(stream, &mut self.buf),
                Err(e) => Err(io_error(&e)),
            };
            match result {
                Ok(response) => {
                    if response.close {
                        self.disconnect();
                    }
                    return Ok(response);
                }
                Err(e) => {
                    self.disconnect();
                    // A server may close an idle keep-alive connection at any time; the first
                    // use afterwards fails without any response, and is not the server
                    // refusing this request. Retry that once on a fresh connection, as
                    // browsers do; anything else is reported.
                    let stale = match e {
                        HttpError::Closed => true,
                        HttpError::Io(kind) => is_reset(kind),
                        _ => false,
                    };
                    if !(reused && stale && attempt == 0) {
                        return Err(e);
                    }
                }
            }
        }
        Err(HttpError::Closed)
    }

    fn connect(&mut self) -> Result<TcpStream, HttpError> {
        self.connects += 1;
        let stream =
            TcpStream::connect_timeout(&self.addr, self.timeout).map_err(|e| io_error(&e))?;
        let setup = || -> std::io::Result<()> {
            stream.set_read_timeout(Some(self.timeout))?;
            stream.set_write_timeout(Some(self.timeout))?;
            // Requests are single small writes; Nagle would only add delay to the latency.
            stream.set_nodelay(true)
        };
        setup().map_err(|e| io_error(&e))?;
        Ok(stream)
    }

    /// Drops the connection together with any buffered bytes, which belonged to it.
    pub fn disconnect(&mut self) {
        self.stream = None;
        self.buf.clear();
    }
}
