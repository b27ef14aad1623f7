//! Frames: what nodes send each other, and the strict decoder for what arrives.
//!
//! A frame is one Zenoh sample on the receiving node's mailbox key:
//!
//! ```text
//! [version: u8][sender node id: 16 bytes, little endian][header: postcard][payload]
//! ```
//!
//! * The **version** byte comes first and the sender's id after it, at fixed offsets in every
//!   version, so a node can always tell who spoke an unknown version. Version 0 is reserved
//!   for the **version notice** (`[0][id][version spoken]`), which a node sends back to a peer
//!   whose frames it cannot read; this layout is frozen.
//! * The **header** ([`Header`]) says what the frame is: a posted message, an asked one, an
//!   acknowledgement, a bounce or a reply.
//! * The **payload** is the rest of the frame: a message's postcard encoding, decoded only by
//!   the receiving process's entry for the header's tag, which requires every byte to be used.
//!
//! Frames come from the network, so decoding is total: any byte string gives a [`Frame`] or a
//! [`WireError`], never a panic, and nothing is allocated from a length the peer chose
//! (postcard reads borrowed data in place). Oversized frames are refused before decoding.

use serde::{Deserialize, Serialize};

use crate::trace::WireTrace;
use crate::NodeId;

/// The frame format this build speaks.
pub(crate) const VERSION: u8 = 4;

/// The version byte of a version notice (frozen).
const NOTICE: u8 = 0;

/// Bytes before the header: version and sender id.
const PREFIX: usize = 17;

/// Why a frame was bounced back to its sender, with its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum BounceReason {
    /// The receiving group's admission predicate refused it (overload).
    Rejected,
    /// The receiving process had terminated.
    Terminated,
    /// No process with that id is exported on the receiving node (it never was, or it ended
    /// and its export was removed).
    NoProcess,
    /// The receiving process does not accept this message tag, or the payload did not decode
    /// as the type its tag names (the two nodes disagree on the message's encoding).
    Incompatible,
    /// The receiving node has quarantined the sender (it saw it Down earlier): the sender
    /// must restart under a new identity to talk to it again.
    Quarantined,
    /// The receiving node's [`Policy`](crate::Policy) does not allow the sending node this
    /// (a message type peers may not send, a factory it may not call).
    Unauthorised,
}

impl std::fmt::Display for BounceReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BounceReason::Rejected => "the receiving group rejected the message (overload)",
            BounceReason::Terminated => "the receiving process has terminated",
            BounceReason::NoProcess => "no such process is exported on the receiving node",
            BounceReason::Incompatible => {
                "the receiving process does not accept this message type or encoding"
            }
            BounceReason::Quarantined => "the receiving node has quarantined this node",
            BounceReason::Unauthorised => "the receiving node's policy does not allow this",
        })
    }
}

/// The principal a message is sent on behalf of, as it travels: what remote admission
/// predicates read.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct WirePrincipal {
    pub(crate) id: u64,
    pub(crate) priority: u8,
    pub(crate) class: u16,
    /// A finite number, zero or more: a header carrying any other does not decode.
    #[serde(deserialize_with = "utility")]
    pub(crate) utility: f64,
}

/// Decodes a principal's utility, refusing what `Principal::builder` refuses (a peer's NaN or
/// negative utility makes the frame malformed, not a principal).
fn utility<'de, D: serde::Deserializer<'de>>(decoder: D) -> Result<f64, D::Error> {
    let utility = f64::deserialize(decoder)?;
    match utility.is_finite() && utility >= 0.0 {
        true => Ok(utility),
        false => Err(serde::de::Error::custom(
            "a principal's utility must be finite, zero or more",
        )),
    }
}

impl WirePrincipal {
    /// The principal a message carries, as this node's admission predicates see it.
    pub(crate) fn of(principal: &whirl::Principal) -> WirePrincipal {
        WirePrincipal {
            id: principal.id(),
            priority: principal.priority(),
            class: principal.class(),
            utility: principal.utility(),
        }
    }

    /// A principal with the travelling attributes (its estimator, if any, stays home), or
    /// `None` for attributes a principal cannot have (the decoder refuses them already).
    pub(crate) fn build(self) -> Option<whirl::Principal> {
        whirl::Principal::builder(self.id)
            .priority(self.priority)
            .class(self.class)
            .utility(self.utility)
            .build()
            .ok()
    }
}

/// How an ask ended on the receiving node.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum Outcome {
    /// The handler answered; the payload is the answer.
    Answered,
    /// The request never reached the handler; the payload is the request, given back.
    Bounced(BounceReason),
    /// The handler failed or dropped its reply handle without answering; no payload.
    NoReply,
    /// A spawn or a migration failed; the payload is the reason, as UTF-8 text.
    Failed,
    /// The asked process moved to (`node`, `local`); the payload is the request, given back
    /// with its tag and principal so that the asker sends it there.
    Redirected {
        old: u64,
        node: u128,
        local: u64,
        tag: u64,
        principal: Option<WirePrincipal>,
    },
}

/// What a frame is. The payload follows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) enum Header {
    /// A posted message for process `to`. `route` names, on the sender's node, where a bounce
    /// goes back to.
    Post {
        to: u64,
        tag: u64,
        route: Option<u64>,
        principal: Option<WirePrincipal>,
        /// The sender's trace context (`trace.rs`).
        trace: Option<WireTrace>,
    },
    /// An asked message for process `to`; the answer comes back as `Reply { req }`.
    Ask {
        to: u64,
        tag: u64,
        req: u64,
        principal: Option<WirePrincipal>,
        /// The sender's trace context (`trace.rs`).
        trace: Option<WireTrace>,
    },
    /// The receiver has taken `received` data frames (posts and asks) from this sender so
    /// far, in total: the sender's credit window refills by the difference.
    Ack { received: u64 },
    /// A posted message given back; the payload is the original message bytes. `seq`, here
    /// and in `Reply` and `Redirect`, is the position of the data frame answered among those
    /// the receiver took from this sender (from 1; 0 for none): the sender does not count in
    /// doubt a frame it got an answer for, acknowledged or not.
    Bounce {
        tag: u64,
        route: Option<u64>,
        reason: BounceReason,
        seq: u64,
    },
    /// The end of the ask (or spawn, or migration phase) `req`.
    Reply {
        req: u64,
        outcome: Outcome,
        seq: u64,
    },
    /// Watch process `target`; its end comes back as `Down { mref }`. With `link`, the target
    /// is also killed when the watching side sends `Exit { mref }` or its node goes Down.
    Monitor { target: u64, mref: u64, link: bool },
    /// Stop the watch `mref`.
    Demonitor { mref: u64 },
    /// The process watched under `mref` ended (or never existed, or its node was lost).
    Down { mref: u64, reason: RemoteExit },
    /// The linked process on the sending side failed: kill the target of link `mref`.
    Exit { mref: u64, reason: RemoteExit },
    /// Spawn a process from the factory named by `factory` (a tag of its name), with the
    /// payload as its arguments; the new pid comes back as `Reply { req }`.
    Spawn {
        req: u64,
        factory: u64,
        principal: Option<WirePrincipal>,
    },
    /// Would this node take a process of migration kind `kind`? Nothing is sent or kept yet;
    /// the end comes back as `Reply { req }` (answered: yes; failed: why not).
    Probe { req: u64, kind: u64 },
    /// A process moving here, decided by its sender: restore it from the payload (a
    /// [`MigratePayload`]) with the migration kind `kind`; the end comes back as
    /// `Reply { req }` (answered: its new local id; failed: it was not started here).
    Migrate { req: u64, kind: u64 },
    /// A post to a process that moved, given back with its message (the payload) and where
    /// the process went (`node`, `local`).
    Redirect {
        old: u64,
        tag: u64,
        route: Option<u64>,
        principal: Option<WirePrincipal>,
        node: u128,
        local: u64,
        seq: u64,
    },
    /// From a sender that got redirects for `old`: answer `FenceDone` once the first `sent`
    /// data frames of mine are answered.
    Fence { old: u64, sent: u64 },
    /// Every frame the sender sent to `old` before its fence has been answered.
    FenceDone { old: u64 },
    /// The process this node watches under `mref` moved to (`node`, `local`); the watch
    /// moved with it.
    Moved { mref: u64, node: u128, local: u64 },
    /// The sender's process `old` moved to (`node`, `local`); told to every peer, which starts
    /// following it (its messages to either pid wait for the fence) and answers with a
    /// `Fence { old }`.
    Relocated { old: u64, node: u128, local: u64 },
    /// Every peer of the sender follows the process it moved here as `local`: its names may
    /// be registered now (a sender that finds the new pid by name then sends there in order).
    NamesFree { local: u64 },
}

impl Header {
    /// For a data frame (a post or an ask), the `seq`-th taken from its sender: the header
    /// that gives it back with `reason` (a bounce, or a reply that says it bounced); `None`
    /// for any other frame.
    pub(crate) fn given_back(&self, reason: BounceReason, seq: u64) -> Option<Header> {
        match *self {
            Header::Post { tag, route, .. } => Some(Header::Bounce {
                tag,
                route,
                reason,
                seq,
            }),
            Header::Ask { req, .. } => Some(Header::Reply {
                req,
                outcome: Outcome::Bounced(reason),
                seq,
            }),
            _ => None,
        }
    }
}

/// What a migrating process carries: its encoded state, its queued messages (tag, encoding)
/// in order, its registered names and its remote watchers (node, mref, link).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct MigratePayload {
    pub(crate) state: Vec<u8>,
    pub(crate) queue: Vec<(u64, Vec<u8>)>,
    pub(crate) names: Vec<String>,
    pub(crate) watchers: Vec<(u128, u64, bool)>,
}

/// Why a process watched across nodes ended, or is considered gone: what a
/// [`RemoteDown`](crate::RemoteDown) carries.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, whirl::Isolated)]
#[non_exhaustive]
pub enum RemoteExit {
    /// It completed, or its runtime shut down.
    Normal,
    /// Its supervisor stopped it.
    Shutdown,
    /// It failed; the failure's text.
    Failed(String),
    /// No such process (it had already ended, or was never exported).
    NoProcess,
    /// Its node is Down: it cannot be known whether the process is alive.
    NoConnection,
}

impl RemoteExit {
    /// The reason of a local process's end, for the wire.
    pub(crate) fn of(reason: &whirl::ExitReason) -> RemoteExit {
        match reason {
            whirl::ExitReason::Normal => RemoteExit::Normal,
            whirl::ExitReason::Shutdown => RemoteExit::Shutdown,
            whirl::ExitReason::Failed(failure) => RemoteExit::Failed(failure.to_string()),
            other => RemoteExit::Failed(other.to_string()),
        }
    }

    /// Whether a process linked to one that ended this way fails with it (Erlang: every
    /// reason but a normal exit, including `noproc` and `noconnection`).
    pub fn is_failure(&self) -> bool {
        !matches!(self, RemoteExit::Normal | RemoteExit::Shutdown)
    }
}

impl std::fmt::Display for RemoteExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemoteExit::Normal => f.write_str("normal"),
            RemoteExit::Shutdown => f.write_str("shutdown"),
            RemoteExit::Failed(why) => write!(f, "failed: {why}"),
            RemoteExit::NoProcess => f.write_str("no such process"),
            RemoteExit::NoConnection => f.write_str("its node is down"),
        }
    }
}

/// A decoded frame: its sender, header and payload (borrowed from the bytes received).
#[derive(Debug, PartialEq)]
pub(crate) struct Frame<'a> {
    pub(crate) from: NodeId,
    pub(crate) header: Header,
    pub(crate) payload: &'a [u8],
}

/// Why an incoming frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WireError {
    /// Shorter than the fixed prefix.
    #[error("frame of {0} bytes is shorter than the 17-byte prefix")]
    Truncated(usize),
    /// Longer than the configured bound.
    #[error("frame of {len} bytes exceeds the limit of {limit}")]
    TooLarge { len: usize, limit: usize },
    /// A version this build does not speak; the sender is known.
    #[error("frame version {version} from {from} (this node speaks {VERSION})")]
    Version { from: NodeId, version: u8 },
    /// A version notice: `from` speaks `version` and cannot read ours.
    #[error("{from} speaks frame version {version} only")]
    Notice { from: NodeId, version: u8 },
    /// The header did not decode.
    #[error("malformed frame header from {from}")]
    Header { from: NodeId },
}

/// Encodes a frame whose payload is `payload`, serialized in place after the header.
/// `Err` if the payload cannot be encoded by serde.
pub(crate) fn encode<T: Serialize + ?Sized>(
    from: NodeId,
    header: &Header,
    payload: &T,
) -> Result<Vec<u8>, postcard::Error> {
    let mut bytes = Vec::with_capacity(64);
    bytes.push(VERSION);
    bytes.extend_from_slice(&from.as_u128().to_le_bytes());
    let bytes = postcard::to_extend(header, bytes)?;
    postcard::to_extend(payload, bytes)
}

/// Encodes a frame whose payload is already-encoded bytes (a bounce giving a message back).
pub(crate) fn encode_raw(from: NodeId, header: &Header, payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(PREFIX + 24 + payload.len());
    bytes.push(VERSION);
    bytes.extend_from_slice(&from.as_u128().to_le_bytes());
    // A header is plain integers and enums: serializing it into a Vec cannot fail.
    let mut bytes = postcard::to_extend(header, bytes).unwrap_or_else(|_| {
        unreachable!("postcard encodes integers and enums into a Vec without error")
    });
    bytes.extend_from_slice(payload);
    bytes
}

/// The version notice: "I am `from` and speak only `VERSION`".
pub(crate) fn notice(from: NodeId) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(PREFIX + 1);
    bytes.push(NOTICE);
    bytes.extend_from_slice(&from.as_u128().to_le_bytes());
    bytes.push(VERSION);
    bytes
}

/// The sender a frame names (bytes 1 to 16), whatever its version; `None` if it is shorter.
/// Only a claim until the frame's MAC verified.
pub(crate) fn sender(bytes: &[u8]) -> Option<NodeId> {
    let id: [u8; 16] = bytes.get(1..PREFIX)?.try_into().ok()?;
    Some(NodeId::from_u128(u128::from_le_bytes(id)))
}

impl Header {
    /// Whether this is a data frame: one that takes a unit of the sender's credit window (a
    /// post, an ask, a spawn, a migration).
    pub(crate) fn is_data(&self) -> bool {
        matches!(
            self,
            Header::Post { .. }
                | Header::Ask { .. }
                | Header::Spawn { .. }
                | Header::Migrate { .. }
                | Header::Probe { .. }
        )
    }
}

/// Decodes a frame received from the network. Total: never panics, whatever `bytes` holds.
pub(crate) fn decode(bytes: &[u8], limit: usize) -> Result<Frame<'_>, WireError> {
    if bytes.len() > limit {
        return Err(WireError::TooLarge {
            len: bytes.len(),
            limit,
        });
    }
    let (Some(&version), Some(id)) = (bytes.first(), bytes.get(1..PREFIX)) else {
        return Err(WireError::Truncated(bytes.len()));
    };
    let mut id_bytes = [0u8; 16];
    id_bytes.copy_from_slice(id);
    let from = NodeId::from_u128(u128::from_le_bytes(id_bytes));
    let rest = &bytes[PREFIX..];
    match version {
        VERSION => {}
        NOTICE => {
            return Err(WireError::Notice {
                from,
                version: rest.first().copied().unwrap_or(0),
            })
        }
        version => return Err(WireError::Version { from, version }),
    }
    let (header, payload) =
        postcard::take_from_bytes::<Header>(rest).map_err(|_| WireError::Header { from })?;
    Ok(Frame {
        from,
        header,
        payload,
    })
}

/// Decodes a payload as exactly one `T`: trailing bytes are an error, as is anything that does
/// not decode.
pub(crate) fn decode_payload<T: serde::de::DeserializeOwned>(
    payload: &[u8],
) -> Result<T, postcard::Error> {
    match postcard::take_from_bytes::<T>(payload)? {
        (value, []) => Ok(value),
        (_, _) => Err(postcard::Error::DeserializeBadEncoding),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const LIMIT: usize = 1 << 20;

    fn me() -> NodeId {
        NodeId::from_u128(0x0123_4567_89ab_cdef_0011_2233_4455_6677)
    }

    #[test]
    fn a_post_round_trips() {
        let header = Header::Post {
            to: 42,
            tag: 7,
            route: Some(3),
            principal: Some(WirePrincipal {
                id: 9,
                priority: 2,
                class: 1,
                utility: 0.5,
            }),
            trace: Some(WireTrace {
                trace_id: [7; 16],
                span_id: [9; 8],
                flags: 1,
            }),
        };
        let bytes = encode(me(), &header, &("hello", 5u32)).unwrap();
        let frame = decode(&bytes, LIMIT).unwrap();
        assert_eq!(frame.from, me());
        assert_eq!(frame.header, header);
        assert_eq!(
            decode_payload::<(String, u32)>(frame.payload).unwrap(),
            ("hello".to_owned(), 5)
        );
    }

    #[test]
    fn a_principal_no_builder_accepts_makes_the_header_malformed() {
        for utility in [f64::NAN, f64::INFINITY, -0.5] {
            let header = Header::Post {
                to: 42,
                tag: 7,
                route: None,
                principal: Some(WirePrincipal {
                    id: 9,
                    priority: 255,
                    class: 1,
                    utility,
                }),
                trace: None,
            };
            let bytes = encode(me(), &header, &()).unwrap();
            assert_eq!(
                decode(&bytes, LIMIT),
                Err(WireError::Header { from: me() }),
                "{utility}"
            );
        }
    }

    #[test]
    fn raw_payloads_come_back_byte_for_byte() {
        let payload = postcard::to_stdvec(&vec![1u64, 2, 3]).unwrap();
        let header = Header::Bounce {
            tag: 1,
            route: None,
            reason: BounceReason::Rejected,
            seq: 9,
        };
        let bytes = encode_raw(me(), &header, &payload);
        let frame = decode(&bytes, LIMIT).unwrap();
        assert_eq!(frame.payload, &payload[..]);
        assert_eq!(frame.header, header);
    }

    #[test]
    fn payloads_must_be_used_up() {
        let mut payload = postcard::to_stdvec(&5u32).unwrap();
        assert_eq!(decode_payload::<u32>(&payload), Ok(5));
        payload.push(0);
        assert!(decode_payload::<u32>(&payload).is_err());
        assert!(decode_payload::<String>(&[200]).is_err());
    }

    #[test]
    fn short_large_and_foreign_frames_are_refused() {
        assert_eq!(decode(&[], LIMIT), Err(WireError::Truncated(0)));
        assert_eq!(decode(&[VERSION; 16], LIMIT), Err(WireError::Truncated(16)));
        let bytes = encode(me(), &Header::Ack { received: 1 }, &()).unwrap();
        assert_eq!(
            decode(&bytes, 4),
            Err(WireError::TooLarge {
                len: bytes.len(),
                limit: 4
            })
        );
        let mut foreign = bytes.clone();
        foreign[0] = 9;
        assert_eq!(
            decode(&foreign, LIMIT),
            Err(WireError::Version {
                from: me(),
                version: 9
            })
        );
        assert_eq!(
            decode(&notice(me()), LIMIT),
            Err(WireError::Notice {
                from: me(),
                version: VERSION
            })
        );
        let mut bad_header = bytes[..PREFIX].to_vec();
        bad_header.push(200);
        assert_eq!(
            decode(&bad_header, LIMIT),
            Err(WireError::Header { from: me() })
        );
    }

    proptest! {
        /// Whatever arrives, decoding returns; and what decodes re-encodes to a prefix of it.
        #[test]
        fn decoding_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
            if let Ok(frame) = decode(&bytes, LIMIT) {
                let again = encode_raw(frame.from, &frame.header, frame.payload);
                prop_assert_eq!(decode(&again, LIMIT), Ok(frame));
            }
            let _ = decode_payload::<(String, Vec<u64>, Option<bool>)>(&bytes);
        }

        /// Frames built from valid headers with one byte changed still decode or fail cleanly.
        #[test]
        fn mutated_frames_never_panic(to in any::<u64>(), tag in any::<u64>(), req in any::<u64>(),
                                      at in any::<prop::sample::Index>(), byte in any::<u8>()) {
            let header = Header::Ask { to, tag, req, principal: None, trace: None };
            let mut bytes = encode(me(), &header, &"payload").unwrap();
            let i = at.index(bytes.len());
            bytes[i] = byte;
            let _ = decode(&bytes, LIMIT).map(|f| decode_payload::<String>(f.payload));
        }
    }
}
