//! How much one request may hold ([`Limits`]) and the read size a server should use
//! ([`READ_CHUNK`]): the bounds every decoder of this crate enforces.

/// The read size the server should use: the decoder's buffer bound leaves room for one
/// such read on top of a maximal request.
pub const READ_CHUNK: usize = 16 * 1024;

/// Size limits for one request. Build it from the defaults, so that a limit added later
/// keeps its default: `Limits { max_body_bytes: 0, ..Limits::default() }`.
///
/// The head's defaults are nginx's (`large_client_header_buffers 4 8k`): a line of 8 KiB,
/// 32 KiB in all. A request line longer than [`max_line_bytes`](Limits::max_line_bytes)
/// is answered 414 (its target is what makes it long); a longer header line, a longer head
/// or more headers, 431.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line plus headers, terminating empty line included (default 32 KiB).
    pub max_head_bytes: usize,
    /// Longest line of the head, the request line or one header field, without its line
    /// end (default 8 KiB).
    pub max_line_bytes: usize,
    /// Most headers in one request (default 100).
    pub max_headers: usize,
    /// Longest body (default 1 MiB).
    pub max_body_bytes: usize,
}

isolated!(struct Limits { max_head_bytes, max_line_bytes, max_headers, max_body_bytes });

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: 32 * 1024,
            max_line_bytes: 8 * 1024,
            max_headers: 100,
            max_body_bytes: 1024 * 1024,
        }
    }
}

impl Limits {
    /// The most bytes the decoder ever buffers: a maximal head and body plus one read.
    pub fn max_buffered(&self) -> usize {
        self.max_head_bytes
            .saturating_add(self.max_body_bytes)
            .saturating_add(READ_CHUNK)
    }
}
