//! The chunked transfer coding of request bodies (RFC 9112 §7.1), decoded incrementally:
//! chunk data is moved into the request's body as it arrives, so the decoder's buffer holds
//! at most one chunk-size line or the trailer section, never the body's wire form.
//!
//! Strict where leniency has been used for request smuggling: a chunk-size line must start
//! with a hex digit and end in CRLF (no bare LF, no control characters in extensions), data
//! must be followed by CRLF, sizes that overflow are refused (by httparse), and the sum of
//! the chunks is held to the body limit before any of a chunk is taken. Trailer fields are
//! parsed (by httparse) and dropped: a request keeps none.

use crate::{HttpError, Limits};

/// The longest chunk-size line, extensions and CRLF included. Extensions carry nothing the
/// request keeps; the bound keeps a peer from making the decoder buffer one endless line.
pub(crate) const MAX_CHUNK_LINE: usize = 1024;

/// Where the decoder is in the chunked body.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a chunk-size line.
    #[default]
    Size,
    /// In a chunk's data, this many bytes still to come.
    Data(u64),
    /// After a chunk's data, waiting for its CRLF.
    DataEnd,
    /// After the last chunk, waiting for the end of the trailer section; this many bytes of
    /// it were already searched for its end.
    Trailers(usize),
}

isolated!(
    enum Phase {
        Size,
        Data(remaining),
        DataEnd,
        Trailers(scanned),
    }
);

/// How far one call got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Progress {
    /// Input bytes used (the caller drops them).
    pub consumed: usize,
    /// Whether the body is complete (the last chunk and the trailer section were read).
    pub done: bool,
}

/// The state of one chunked body; the default is a body whose first chunk-size line comes
/// next.
#[derive(Debug, Default)]
pub(crate) struct ChunkedBody {
    phase: Phase,
}

isolated!(struct ChunkedBody { phase });

impl ChunkedBody {
    /// Decodes as much of `input` as is complete, appending chunk data to `body`, which
    /// never grows past `limits.max_body_bytes`.
    pub(crate) fn decode(
        &mut self,
        input: &[u8],
        body: &mut Vec<u8>,
        limits: &Limits,
    ) -> Result<Progress, HttpError> {
        let mut used = 0;
        loop {
            let rest = &input[used..];
            let step = match self.phase {
                Phase::Size => self.size_line(rest, body.len(), limits)?,
                Phase::Data(remaining) => {
                    let available = u64::try_from(rest.len()).unwrap_or(u64::MAX);
                    let take = remaining.min(available);
                    // `take <= rest.len()`, so it fits in a usize.
                    let n = usize::try_from(take).unwrap_or(rest.len());
                    if n == 0 {
                        None
                    } else {
                        body.extend_from_slice(&rest[..n]);
                        self.phase = match remaining - take {
                            0 => Phase::DataEnd,
                            left => Phase::Data(left),
                        };
                        Some(n)
                    }
                }
                Phase::DataEnd => match rest {
                    [b'\r', b'\n', ..] => {
                        self.phase = Phase::Size;
                        Some(2)
                    }
                    [] | [b'\r'] => None,
                    _ => return Err(bad("chunk data not followed by CRLF")),
                },
                Phase::Trailers(scanned) => match self.trailers(rest, scanned, limits)? {
                    Some(n) => {
                        return Ok(Progress {
                            consumed: used + n,
                            done: true,
                        })
                    }
                    None => None,
                },
            };
            match step {
                Some(n) => used += n,
                None => {
                    return Ok(Progress {
                        consumed: used,
                        done: false,
                    })
                }
            }
        }
    }

    /// Parses a chunk-size line if it is complete: its length, or `None` for more input.
    fn size_line(
        &mut self,
        rest: &[u8],
        body_len: usize,
        limits: &Limits,
    ) -> Result<Option<usize>, HttpError> {
        let window = &rest[..rest.len().min(MAX_CHUNK_LINE)];
        let Some(lf) = window.iter().position(|&b| b == b'\n') else {
            return if rest.len() >= MAX_CHUNK_LINE {
                Err(bad("chunk-size line too long"))
            } else {
                Ok(None)
            };
        };
        let line = &rest[..=lf];
        let Some(content) = line.strip_suffix(b"\r\n") else {
            return Err(bad("chunk-size line not ended by CRLF"));
        };
        // httparse reads an empty size as 0 and lets anything through in extensions.
        if !content.first().is_some_and(u8::is_ascii_hexdigit) {
            return Err(bad("chunk size is not a hex number"));
        }
        if content
            .iter()
            .any(|&b| (b < b' ' && b != b'\t') || b == 0x7f)
        {
            return Err(bad("control character in a chunk-size line"));
        }
        let size = match httparse::parse_chunk_size(line) {
            Ok(httparse::Status::Complete((n, size))) if n == line.len() => size,
            // Overflow, or a character where the size or `;` should be.
            _ => return Err(bad("invalid chunk size")),
        };
        let room = limits.max_body_bytes.saturating_sub(body_len);
        if usize::try_from(size).ok().is_none_or(|size| size > room) {
            return Err(HttpError::PayloadTooLarge);
        }
        self.phase = match size {
            0 => Phase::Trailers(0),
            size => Phase::Data(size),
        };
        Ok(Some(line.len()))
    }

    /// Reads the trailer section if it is complete: its length (final CRLF included), or
    /// `None` for more input. Bounded like a head: `max_head_bytes`, `max_headers`.
    fn trailers(
        &mut self,
        rest: &[u8],
        scanned: usize,
        limits: &Limits,
    ) -> Result<Option<usize>, HttpError> {
        match rest {
            [b'\r', b'\n', ..] => return Ok(Some(2)),
            [] | [b'\r'] => return Ok(None),
            _ => {}
        }
        let from = scanned.min(rest.len());
        let end = rest[from..]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|i| from + i + 4);
        let Some(end) = end else {
            if rest.len() > limits.max_head_bytes {
                return Err(HttpError::HeaderTooLarge);
            }
            // The last three bytes may begin the end marker.
            self.phase = Phase::Trailers(rest.len().saturating_sub(3));
            return Ok(None);
        };
        if end > limits.max_head_bytes {
            return Err(HttpError::HeaderTooLarge);
        }
        let mut fields = vec![httparse::EMPTY_HEADER; limits.max_headers];
        match httparse::parse_headers(&rest[..end], &mut fields) {
            Ok(httparse::Status::Complete((n, _))) if n == end => Ok(Some(end)),
            Err(httparse::Error::TooManyHeaders) => Err(HttpError::HeaderTooLarge),
            _ => Err(bad("malformed trailer section")),
        }
    }
}

fn bad(why: &str) -> HttpError {
    HttpError::BadRequest(why.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` fed in pieces of `step` bytes, as the request decoder would (keeping
    /// what was not consumed).
    fn decode(input: &[u8], step: usize, limits: &Limits) -> Result<(Vec<u8>, usize), HttpError> {
        let mut chunked = ChunkedBody::default();
        let mut body = Vec::new();
        let mut pending: Vec<u8> = Vec::new();
        let mut total = 0;
        for piece in input.chunks(step.max(1)) {
            pending.extend_from_slice(piece);
            let progress = chunked.decode(&pending, &mut body, limits)?;
            pending.drain(..progress.consumed);
            total += progress.consumed;
            if progress.done {
                return Ok((body, total));
            }
        }
        Err(bad("incomplete"))
    }

    const BODY: &[u8] = b"5\r\nhello\r\n1;name=value\r\n \r\n6\r\nworld!\r\n0\r\n\r\n";

    #[test]
    fn chunks_decode_whatever_the_split() {
        for step in 1..=BODY.len() {
            let (body, used) = decode(BODY, step, &Limits::default()).unwrap();
            assert_eq!(body, b"hello world!", "step {step}");
            assert_eq!(used, BODY.len(), "step {step}");
        }
    }

    #[test]
    fn trailers_are_read_and_dropped() {
        let input = b"3\r\nabc\r\n0\r\nX-Sum: 1\r\nX-Other: 2\r\n\r\nGET";
        for step in 1..=input.len() {
            let (body, used) = decode(input, step, &Limits::default()).unwrap();
            assert_eq!(body, b"abc");
            assert_eq!(used, input.len() - 3, "the next request is left alone");
        }
    }

    #[test]
    fn the_body_limit_holds_across_chunks() {
        let limits = Limits {
            max_body_bytes: 8,
            ..Limits::default()
        };
        let fits = b"4\r\nabcd\r\n4\r\nefgh\r\n0\r\n\r\n";
        assert_eq!(decode(fits, 3, &limits).unwrap().0, b"abcdefgh");
        let over = b"4\r\nabcd\r\n5\r\nefghi\r\n0\r\n\r\n";
        assert_eq!(decode(over, 3, &limits), Err(HttpError::PayloadTooLarge));
        let huge = b"7fffffffffffffff\r\n";
        assert_eq!(decode(huge, 64, &limits), Err(HttpError::PayloadTooLarge));
    }

    #[test]
    fn malformed_chunks_are_bad_requests() {
        let cases: &[&[u8]] = &[
            b"zz\r\n",
            b"\r\nabc",
            b";ext\r\n",
            b"-1\r\n",
            b"+5\r\nhello\r\n",
            b"0x5\r\nhello\r\n",
            b"5\nhello\r\n",
            b"5\r\nhelloXY",
            b"5\r\nhello\n0\r\n\r\n",
            b"5;a\nb\r\nhello\r\n0\r\n\r\n",
            b"5;a\x00\r\nhello\r\n",
            b"5 6\r\nhello\r\n",
            b"fffffffffffffffff\r\n",
            b"10000000000000000\r\n",
            b"0\r\nno colon\r\n\r\n",
        ];
        for case in cases {
            let e = decode(case, case.len(), &Limits::default()).unwrap_err();
            assert!(
                matches!(e, HttpError::BadRequest(_)),
                "{:?}: {e:?}",
                String::from_utf8_lossy(case)
            );
        }
    }

    #[test]
    fn lines_and_trailers_are_bounded() {
        let mut long = b"5;".to_vec();
        long.resize(MAX_CHUNK_LINE + 10, b'x');
        assert!(matches!(
            decode(&long, 7, &Limits::default()),
            Err(HttpError::BadRequest(_))
        ));
        let limits = Limits {
            max_head_bytes: 64,
            ..Limits::default()
        };
        let mut trailers = b"0\r\n".to_vec();
        for i in 0..10 {
            trailers.extend_from_slice(format!("X-{i}: vvvvvvvv\r\n").as_bytes());
        }
        assert_eq!(
            decode(&trailers, 5, &limits),
            Err(HttpError::HeaderTooLarge)
        );
        let few = Limits {
            max_headers: 1,
            ..Limits::default()
        };
        let two = b"0\r\nA: 1\r\nB: 2\r\n\r\n";
        assert_eq!(decode(two, two.len(), &few), Err(HttpError::HeaderTooLarge));
    }
}
