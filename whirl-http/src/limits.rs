//! How much one request may hold ([`Limits`]) and the read size a server should use
//! ([`READ_CHUNK`]): the bounds every decoder of this crate enforces.

/// The read size the server should use: the decoder's buffer bound leaves room for one
/// such read on top of a maximal request.
pub const READ_CHUNK: usize = 16 * 1024;

/// Size limits for one request. Build it from the defaults, so that a limit added later
/// keeps its default: `Limits { max_body_bytes: 0, ..Limits::default() }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line plus headers, terminating empty line included (default 8 KiB).
    pub max_head_bytes: usize,
    /// Most headers in one request (default 64).
    pub max_headers: usize,
    /// Longest body (default 1 MiB).
    pub max_body_bytes: usize,
}

isolated!(struct Limits { max_head_bytes, max_headers, max_body_bytes });

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: 8 * 1024,
            max_headers: 64,
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
