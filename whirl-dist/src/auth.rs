//! Node authentication: who a node is, proved by its certificate, and which frames it sent.
//!
//! Transport TLS proves only that a peer holds *some* certificate of the cluster CA; every
//! member can then declare any liveliness token and write any sender id into a frame. This
//! module closes that gap with three pieces.
//!
//! * **Bound identities.** A node id is no longer free: it is
//!   `SHA-256("whirl-dist/node-id/1" ‖ leaf certificate DER ‖ nonce)[..16]` read little
//!   endian, with a fresh random 16-byte nonce per start ([`fresh_nonce`]). An id therefore
//!   names one incarnation *and* one certificate, and nobody without that certificate's key
//!   can prove to hold it.
//! * **A signed hello per pair.** Before two nodes talk, each sends the other a hello
//!   ([`Credentials::hello`]): cluster, sender and receiver ids, nonce, certificate chain, a
//!   fresh X25519 public key for this peer only, all signed with the certificate's key. The
//!   receiver ([`Credentials::verify_hello`]) checks the chain against the cluster CA (for
//!   client authentication, as mutual TLS does), the signature, that the sender id is the hash
//!   of that certificate and nonce, and that the hello is addressed to it in its cluster.
//! * **A MAC on every frame.** Each side combines its ephemeral key with the peer's
//!   ([`Handshake::finish`]): X25519, then HKDF-SHA256 into two AES-128 keys, one per
//!   direction. [`PairKeys::seal`] appends `[lane][counter][tag]` (25 bytes) to a frame and
//!   [`PairKeys::open`] checks and strips it, refusing forgeries and replays: within a lane
//!   (frames of one lane arrive in order) each counter must exceed the last one accepted. The
//!   tag is a GMAC (NIST SP 800-38D): AES-128-GCM over no plaintext, with the frame, lane and
//!   counter as associated data and the lane and counter as the nonce, which never repeats
//!   under one key because the counter of a lane only grows. With AES and carry-less multiply
//!   in hardware it costs a tenth of an HMAC-SHA256 (about 0.1 µs per small frame).
//!
//! A third member cannot forge frames between two others: it lacks both ephemeral private
//! keys, so it cannot derive their keys, and it cannot pass off its own hello as another's,
//! because the id it would claim is the hash of a certificate whose key it lacks. A stranger
//! without a certificate of the CA fails the chain check. The handshake is one signed message
//! each way with no challenge, so a hello can be replayed to the node it was addressed to: it
//! yields keys only its original sender can use (a denial of service, not a forgery), which is
//! why a caller finishes at most one handshake per peer incarnation. Frames are authenticated,
//! not encrypted: confidentiality on the links is TLS's job.
//!
//! Everything read from the network is decoded totally (errors, never panics), with bounded
//! allocation: a hello is at most [`MAX_HELLO`] bytes and [`MAX_CERTS`] certificates.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use ring::agreement::{self, EphemeralPrivateKey, UnparsedPublicKey, X25519};
use ring::rand::{SecureRandom, SystemRandom};
use ring::{digest, hkdf};
use rustls::sign::Signer;
use rustls::SignatureScheme;
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{
    CertificateDer, PrivateKeyDer, SignatureVerificationAlgorithm, TrustAnchor, UnixTime,
};
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use webpki::{EndEntityCert, KeyUsage};

/// The largest hello accepted or produced, in bytes.
pub(crate) const MAX_HELLO: usize = 16 * 1024;

/// The most certificates a chain may hold (leaf included).
pub(crate) const MAX_CERTS: usize = 4;

/// The bytes [`PairKeys::seal`] appends: lane (1), counter (8), GMAC tag (16).
pub(crate) const TRAILER: usize = 1 + 8 + TAG;

/// The length of a GMAC (AES-128-GCM) tag.
const TAG: usize = 16;
/// The hello format this build speaks.
const HELLO_VERSION: u8 = 1;
/// Domain separation of the node id hash.
const NODE_ID_CONTEXT: &[u8] = b"whirl-dist/node-id/1";
/// Domain separation of hello signatures (it cannot begin a TLS signed message).
const HELLO_CONTEXT: &[u8] = b"whirl-dist/hello/1";
/// What a key signs at load to prove it is the leaf's.
const KEY_CHECK: &[u8] = b"whirl-dist/key-check/1";
/// The HKDF salt of pair keys.
const PAIR_SALT: &[u8] = b"whirl-dist/pair/1";
/// The first part of the HKDF info of a direction's MAC key.
const MAC_LABEL: &[u8] = b"whirl-dist/pair/1/mac";

/// The signature schemes a node signs hellos with, in order of preference; the key's type
/// picks one.
const SCHEMES: &[SignatureScheme] = &[
    SignatureScheme::ED25519,
    SignatureScheme::ECDSA_NISTP256_SHA256,
    SignatureScheme::ECDSA_NISTP384_SHA384,
    SignatureScheme::RSA_PSS_SHA256,
    SignatureScheme::RSA_PKCS1_SHA256,
];

/// The algorithms accepted on certificates of a chain.
static CHAIN_ALGS: &[&dyn SignatureVerificationAlgorithm] = &[
    webpki::ring::ECDSA_P256_SHA256,
    webpki::ring::ECDSA_P256_SHA384,
    webpki::ring::ECDSA_P384_SHA256,
    webpki::ring::ECDSA_P384_SHA384,
    webpki::ring::ED25519,
    webpki::ring::RSA_PKCS1_2048_8192_SHA256,
    webpki::ring::RSA_PKCS1_2048_8192_SHA384,
    webpki::ring::RSA_PKCS1_2048_8192_SHA512,
    webpki::ring::RSA_PSS_2048_8192_SHA256_LEGACY_KEY,
    webpki::ring::RSA_PSS_2048_8192_SHA384_LEGACY_KEY,
    webpki::ring::RSA_PSS_2048_8192_SHA512_LEGACY_KEY,
];

/// The verification algorithm of a hello signature scheme.
fn scheme_algorithm(
    scheme: SignatureScheme,
) -> Option<&'static dyn SignatureVerificationAlgorithm> {
    Some(match scheme {
        SignatureScheme::ED25519 => webpki::ring::ED25519,
        SignatureScheme::ECDSA_NISTP256_SHA256 => webpki::ring::ECDSA_P256_SHA256,
        SignatureScheme::ECDSA_NISTP384_SHA384 => webpki::ring::ECDSA_P384_SHA384,
        SignatureScheme::RSA_PSS_SHA256 => webpki::ring::RSA_PSS_2048_8192_SHA256_LEGACY_KEY,
        SignatureScheme::RSA_PKCS1_SHA256 => webpki::ring::RSA_PKCS1_2048_8192_SHA256,
        _ => return None,
    })
}

/// Why credentials do not load, a hello is refused, or a frame does not authenticate.
///
/// `pub` rather than `pub(crate)`: the public `DistError::Credentials` carries it as its
/// source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A PEM text does not parse.
    #[error("the {what} is not valid PEM")]
    Pem {
        /// Which text: certificate chain, private key or CA certificate.
        what: &'static str,
        /// The parser's reason.
        #[source]
        source: pem::Error,
    },
    /// A PEM text or a hello holds no certificate.
    #[error("no certificate in the {what}")]
    NoCertificate {
        /// Which text.
        what: &'static str,
    },
    /// A chain holds more than 4 certificates.
    #[error("a chain of {count} certificates; at most {MAX_CERTS} are allowed")]
    TooManyCertificates {
        /// How many it holds.
        count: usize,
    },
    /// The certificate chain leaves too little room in a hello (its DER size is at most
    /// 16 KiB less 2 KiB).
    #[error("a certificate chain of {len} bytes is too large for a hello")]
    ChainTooLarge {
        /// Its DER size.
        len: usize,
    },
    /// The private key does not load or cannot sign.
    #[error("the private key is unusable")]
    Key(#[source] rustls::Error),
    /// The key is of a type hellos cannot be signed with (ECDSA P-256 or P-384, Ed25519 and
    /// RSA can).
    #[error("unsupported private key type (use ECDSA P-256/P-384, Ed25519 or RSA)")]
    UnsupportedKey,
    /// A CA certificate cannot serve as a trust anchor.
    #[error("a CA certificate is not usable as a trust anchor")]
    Ca(#[source] webpki::Error),
    /// The certificate chain does not verify against the cluster CA now (another CA,
    /// self-signed, expired, malformed...).
    #[error("the certificate does not verify against the cluster CA")]
    Certificate(#[source] webpki::Error),
    /// The certificate verifies for server authentication only; members need client
    /// authentication too (mutual TLS uses one certificate both ways).
    #[error("the certificate lacks the clientAuth extended key usage (it allows serverAuth only)")]
    ServerAuthOnly,
    /// The private key is not the key of the leaf certificate.
    #[error("the private key does not match the certificate")]
    KeyMismatch,
    /// The leaf certificate has neither a subject common name nor a DNS alternative name.
    #[error("the certificate names no one: no subject CN and no DNS subject alternative name")]
    NoName,
    /// A hello does not decode.
    #[error("malformed hello")]
    Malformed(#[source] postcard::Error),
    /// A hello has bytes after its end.
    #[error("malformed hello: trailing bytes")]
    TrailingBytes,
    /// A hello is larger than 16 KiB.
    #[error("a hello of {len} bytes; at most {MAX_HELLO} are allowed")]
    TooLarge {
        /// Its size.
        len: usize,
    },
    /// A hello of a version this build does not speak.
    #[error("hello version {0}; this build speaks version {HELLO_VERSION}")]
    Version(u8),
    /// A hello of another cluster.
    #[error("the hello is for another cluster")]
    WrongCluster,
    /// A hello addressed to another node (or to its own sender).
    #[error("the hello is addressed to another node")]
    WrongRecipient,
    /// The sender id is not the hash of the certificate and nonce: someone claims an id that
    /// is not theirs.
    #[error("the sender id is not derived from its certificate and nonce")]
    IdMismatch,
    /// A hello signed with a scheme this build does not verify.
    #[error("unsupported signature scheme {0:#06x}")]
    UnsupportedScheme(u16),
    /// A hello's signature does not verify with its leaf certificate.
    #[error("the hello's signature does not verify")]
    Signature(#[source] webpki::Error),
    /// The operating system's random source failed.
    #[error("no randomness from the operating system")]
    Random,
    /// The key agreement failed (a peer's ephemeral key of low order, for example).
    #[error("the key agreement failed")]
    Agreement,
    /// A handshake was finished with the hello of another peer.
    #[error("the hello is not from the peer this handshake is with")]
    WrongPeer,
    /// A frame too short to hold a trailer.
    #[error("a frame of {0} bytes cannot hold a {TRAILER}-byte trailer")]
    Short(usize),
    /// A frame naming a lane that does not exist.
    #[error("unknown lane {0}")]
    UnknownLane(u8),
    /// A frame whose MAC does not verify: forged, corrupted or from another pair.
    #[error("the frame's MAC does not verify")]
    BadTag,
    /// A frame whose counter is not above the highest accepted on its lane.
    #[error("replayed frame on lane {lane}: counter {counter}, highest accepted {highest}")]
    Replay {
        /// The lane (0 data, 1 control, 2 direct).
        lane: u8,
        /// The frame's counter.
        counter: u64,
        /// The highest counter accepted on the lane.
        highest: u64,
    },
}

/// A fresh random nonce for a node start, from the operating system.
pub(crate) fn fresh_nonce() -> Result<[u8; 16], AuthError> {
    let mut nonce = [0; 16];
    SystemRandom::new()
        .fill(&mut nonce)
        .map_err(|_| AuthError::Random)?;
    Ok(nonce)
}

/// The id of the node incarnation with this leaf certificate (DER) and nonce.
pub(crate) fn derive_node_id(leaf_der: &[u8], nonce: &[u8; 16]) -> u128 {
    let mut hash = digest::Context::new(&digest::SHA256);
    hash.update(NODE_ID_CONTEXT);
    hash.update(leaf_der);
    hash.update(nonce);
    let mut id = [0; 16];
    for (byte, hashed) in id.iter_mut().zip(hash.finish().as_ref()) {
        *byte = *hashed;
    }
    u128::from_le_bytes(id)
}

/// The name a certificate (DER) gives its holder: its subject common name, else its first
/// DNS subject alternative name. `None` if it has neither or does not parse.
pub(crate) fn peer_name_cn(cert_der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert_der).ok()?;
    if let Some(cn) = cert
        .subject()
        .iter_common_name()
        .find_map(|cn| cn.as_str().ok())
    {
        return Some(cn.to_owned());
    }
    let san = cert.subject_alternative_name().ok()??;
    san.value.general_names.iter().find_map(|name| match name {
        x509_parser::extensions::GeneralName::DNSName(dns) => Some((*dns).to_owned()),
        _ => None,
    })
}

/// A node's certificate chain, its signing key and the cluster CA: what it proves its
/// identity with and checks its peers' against.
pub(crate) struct Credentials {
    /// Leaf first.
    chain: Vec<CertificateDer<'static>>,
    /// The leaf key's signer, its scheme chosen at load.
    signer: Box<dyn Signer>,
    /// The cluster CA(s).
    anchors: Vec<TrustAnchor<'static>>,
    /// The leaf's name.
    name: String,
    /// For ephemeral keys.
    rng: SystemRandom,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("name", &self.name)
            .field("chain", &self.chain.len())
            .field("anchors", &self.anchors.len())
            .field("scheme", &self.signer.scheme())
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Loads PEM texts: the certificate chain (leaf first), the private key (PKCS#8, SEC1 or
    /// PKCS#1) and the trusted CA certificate(s).
    ///
    /// Refuses at load what peers would refuse later: a leaf that does not verify against
    /// the CA now (issued by another CA, expired, or lacking client authentication), a key
    /// that is not the leaf's (it signs a test message and verifies it with the leaf), and a
    /// leaf without a name.
    pub(crate) fn from_pem(chain: &[u8], key: &[u8], ca: &[u8]) -> Result<Credentials, AuthError> {
        Credentials::from_pem_at(chain, key, ca, UnixTime::now())
    }

    /// [`from_pem`](Credentials::from_pem), the chain checked at `now`.
    fn from_pem_at(
        chain: &[u8],
        key: &[u8],
        ca: &[u8],
        now: UnixTime,
    ) -> Result<Credentials, AuthError> {
        let chain = read_certs(chain, "certificate chain")?;
        if chain.len() > MAX_CERTS {
            return Err(AuthError::TooManyCertificates { count: chain.len() });
        }
        let len = chain.iter().map(|cert| cert.len()).sum();
        if len > MAX_HELLO - 2048 {
            return Err(AuthError::ChainTooLarge { len });
        }
        let anchors = read_certs(ca, "CA certificate")?
            .iter()
            .map(|ca| webpki::anchor_from_trusted_cert(ca).map(|anchor| anchor.to_owned()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(AuthError::Ca)?;
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|source| AuthError::Pem {
            what: "private key",
            source,
        })?;
        let key = rustls::crypto::ring::default_provider()
            .key_provider
            .load_private_key(key)
            .map_err(AuthError::Key)?;
        let signer = key
            .choose_scheme(SCHEMES)
            .ok_or(AuthError::UnsupportedKey)?;
        let (leaf, intermediates) = chain.split_first().ok_or(AuthError::NoCertificate {
            what: "certificate chain",
        })?;
        verify_chain(&anchors, leaf, intermediates, now)?;
        let proof = signer.sign(KEY_CHECK).map_err(AuthError::Key)?;
        verify_signature(leaf, signer.scheme(), KEY_CHECK, &proof)
            .map_err(|_| AuthError::KeyMismatch)?;
        let name = peer_name_cn(leaf).ok_or(AuthError::NoName)?;
        Ok(Credentials {
            chain,
            signer,
            anchors,
            name,
            rng: SystemRandom::new(),
        })
    }

    /// The leaf certificate's name: its subject CN, else its first DNS alternative name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The id of this node's incarnation with `nonce` (see [`derive_node_id`]).
    pub(crate) fn node_id(&self, nonce: &[u8; 16]) -> u128 {
        derive_node_id(self.chain.first().map_or(&[], |leaf| leaf), nonce)
    }

    /// A signed hello from node `from` (whose id must be [`node_id`](Credentials::node_id)
    /// of `nonce`) to node `to` in `cluster`, with a fresh ephemeral key for this peer only
    /// and `window`, the credit window the sender grants: how many data frames it takes from
    /// the peer unacknowledged (the peer sends at most the smaller of its window and this).
    /// Returns the bytes to send and the half of the handshake to
    /// [`finish`](Handshake::finish) with the peer's hello.
    pub(crate) fn hello(
        &self,
        cluster: &str,
        from: u128,
        nonce: [u8; 16],
        to: u128,
        window: u32,
    ) -> Result<(Vec<u8>, Handshake), AuthError> {
        if from != self.node_id(&nonce) {
            return Err(AuthError::IdMismatch);
        }
        if to == from {
            return Err(AuthError::WrongRecipient);
        }
        let private =
            EphemeralPrivateKey::generate(&X25519, &self.rng).map_err(|_| AuthError::Random)?;
        let public = private
            .compute_public_key()
            .map_err(|_| AuthError::Agreement)?;
        let public: [u8; 32] = public
            .as_ref()
            .try_into()
            .map_err(|_| AuthError::Agreement)?;
        let body = Body {
            cluster,
            from,
            to,
            nonce,
            chain: Chain::of(&self.chain),
            ephemeral: public,
            scheme: u16::from(self.signer.scheme()),
            window,
        };
        let bytes = encode_hello(&body, &*self.signer)?;
        let half = Handshake {
            private,
            public,
            from,
            to,
        };
        Ok((bytes, half))
    }

    /// Verifies a peer's hello addressed to node `me` in `cluster`: size and shape, the
    /// chain against the CA now (for client authentication), the signature by the leaf's
    /// key, the sender id derived from the leaf and nonce, the recipient and the cluster.
    pub(crate) fn verify_hello(
        &self,
        cluster: &str,
        me: u128,
        bytes: &[u8],
    ) -> Result<PeerHello, AuthError> {
        self.verify_hello_at(cluster, me, bytes, UnixTime::now())
    }

    /// [`verify_hello`](Credentials::verify_hello), the chain checked at `now`.
    fn verify_hello_at(
        &self,
        cluster: &str,
        me: u128,
        bytes: &[u8],
        now: UnixTime,
    ) -> Result<PeerHello, AuthError> {
        if bytes.len() > MAX_HELLO {
            return Err(AuthError::TooLarge { len: bytes.len() });
        }
        let envelope: Envelope<'_> = decode(bytes)?;
        if envelope.version != HELLO_VERSION {
            return Err(AuthError::Version(envelope.version));
        }
        let body: Body<'_> = decode(envelope.body.0)?;
        if body.chain.count > MAX_CERTS {
            return Err(AuthError::TooManyCertificates {
                count: body.chain.count,
            });
        }
        let (leaf, intermediates) = body
            .chain
            .certs
            .split_first()
            .ok_or(AuthError::NoCertificate { what: "hello" })?;
        if body.cluster != cluster {
            return Err(AuthError::WrongCluster);
        }
        if body.to != me || body.from == me {
            return Err(AuthError::WrongRecipient);
        }
        if derive_node_id(leaf, &body.nonce) != body.from {
            return Err(AuthError::IdMismatch);
        }
        let leaf = CertificateDer::from(*leaf);
        let intermediates: Vec<CertificateDer<'_>> = intermediates
            .iter()
            .map(|cert| CertificateDer::from(*cert))
            .collect();
        verify_chain(&self.anchors, &leaf, &intermediates, now)?;
        let message = signed_message(envelope.version, envelope.body.0);
        verify_signature(
            &leaf,
            SignatureScheme::from(body.scheme),
            &message,
            envelope.signature.0,
        )?;
        Ok(PeerHello {
            from: body.from,
            name: peer_name_cn(&leaf).ok_or(AuthError::NoName)?,
            to: body.to,
            ephemeral: body.ephemeral,
            window: body.window.max(1),
            leaf: leaf.as_ref().to_vec(),
        })
    }
}

/// A verified hello: who sent it and its half of the key agreement.
#[derive(Clone, Debug)]
pub(crate) struct PeerHello {
    /// The sender's node id, proved to derive from its certificate.
    pub(crate) from: u128,
    /// The sender's certificate name (subject CN, else first DNS alternative name).
    pub(crate) name: String,
    /// The recipient, checked to be us.
    to: u128,
    /// The sender's X25519 public key for this handshake.
    ephemeral: [u8; 32],
    /// The credit window the sender grants (at least 1).
    pub(crate) window: u32,
    /// The sender's certificate (DER), which verifies what it signs later (its registrations).
    pub(crate) leaf: Vec<u8>,
}

/// Our half of a handshake with one peer: the ephemeral private key sent in our hello.
pub(crate) struct Handshake {
    /// Our X25519 private key for this peer, used once.
    private: EphemeralPrivateKey,
    /// Its public half, as sent.
    public: [u8; 32],
    /// Our id.
    from: u128,
    /// The peer's id.
    to: u128,
}

impl fmt::Debug for Handshake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handshake")
            .field("from", &format_args!("{:032x}", self.from))
            .field("to", &format_args!("{:032x}", self.to))
            .finish_non_exhaustive()
    }
}

impl Handshake {
    /// Completes the handshake with the peer's verified hello: X25519 of our ephemeral key
    /// and the peer's, then HKDF-SHA256 (salt `whirl-dist/pair/1`, info naming sender,
    /// receiver and both ephemeral keys) into one AES-128 (GMAC) key per direction. Both sides derive
    /// the same pair, mirrored.
    pub(crate) fn finish(self, peer: &PeerHello) -> Result<PairKeys, AuthError> {
        if peer.from != self.to || peer.to != self.from {
            return Err(AuthError::WrongPeer);
        }
        let Handshake {
            private,
            public,
            from,
            to,
        } = self;
        let peer_key = UnparsedPublicKey::new(&X25519, peer.ephemeral);
        agreement::agree_ephemeral(private, &peer_key, |secret| {
            let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, PAIR_SALT).extract(secret);
            let send = mac_key(&prk, from, to, &public, &peer.ephemeral)?;
            let recv = mac_key(&prk, to, from, &peer.ephemeral, &public)?;
            Ok(PairKeys {
                send,
                recv,
                sent: Default::default(),
                accepted: Default::default(),
            })
        })
        .map_err(|_| AuthError::Agreement)?
        .map_err(|_: ring::error::Unspecified| AuthError::Agreement)
    }
}

/// The MAC key of frames from `sender` to `receiver`.
fn mac_key(
    prk: &hkdf::Prk,
    sender: u128,
    receiver: u128,
    sender_key: &[u8],
    receiver_key: &[u8],
) -> Result<LessSafeKey, ring::error::Unspecified> {
    let (sender, receiver) = (sender.to_le_bytes(), receiver.to_le_bytes());
    let info: [&[u8]; 5] = [MAC_LABEL, &sender, &receiver, sender_key, receiver_key];
    let mut key = [0u8; 16];
    prk.expand(&info, &AES_128_GCM)?.fill(&mut key)?;
    Ok(LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &key)?))
}

/// The nonce of frame `counter` on `lane`: unique per key, since a lane's counter only grows.
fn nonce(lane: Lane, counter: u64) -> Nonce {
    let mut bytes = [0u8; aead::NONCE_LEN];
    bytes[0] = lane as u8;
    bytes[4..].copy_from_slice(&counter.to_le_bytes());
    Nonce::assume_unique_for_key(bytes)
}

/// A stream of frames between two nodes, each with its own counters: frames of one lane are
/// delivered in order, so a counter not above the last accepted one is a replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub(crate) enum Lane {
    /// Messages.
    Data = 0,
    /// Acknowledgements, bounces and other control frames.
    Control = 1,
    /// Frames sent outside the credit window.
    Direct = 2,
}

impl Lane {
    /// Every lane.
    pub(crate) const ALL: [Lane; 3] = [Lane::Data, Lane::Control, Lane::Direct];

    /// The lane a trailer names.
    fn from_byte(byte: u8) -> Option<Lane> {
        Lane::ALL.into_iter().find(|lane| *lane as u8 == byte)
    }
}

/// The keys two nodes share after a handshake, and the per-lane counters of each direction.
pub(crate) struct PairKeys {
    /// Tags frames from us to the peer.
    send: LessSafeKey,
    /// Checks frames from the peer to us.
    recv: LessSafeKey,
    /// The last counter sealed, per lane.
    sent: [AtomicU64; 3],
    /// The highest counter accepted, per lane.
    accepted: [AtomicU64; 3],
}

impl fmt::Debug for PairKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PairKeys").finish_non_exhaustive()
    }
}

impl PairKeys {
    /// Appends the trailer `[lane: u8][counter: u64 LE][GMAC tag: 16 bytes]` to
    /// `frame`; the tag covers the frame and the lane and counter. Counters start at 1 on
    /// each lane and grow by one per seal, so the frames of a lane must be sent in the order
    /// they were sealed (seal and send under one lock, or from one thread).
    pub(crate) fn seal(&self, lane: Lane, frame: &mut Vec<u8>) {
        let counter = self.sent[lane as usize]
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        frame.reserve(TRAILER);
        frame.push(lane as u8);
        frame.extend_from_slice(&counter.to_le_bytes());
        // Sealing no plaintext under a fresh nonce cannot fail: the only error is a message
        // too long for GCM (64 GiB), far beyond any frame.
        match self.send.seal_in_place_separate_tag(
            nonce(lane, counter),
            Aad::from(&frame[..]),
            &mut [],
        ) {
            Ok(tag) => frame.extend_from_slice(tag.as_ref()),
            Err(_) => frame.extend_from_slice(&[0; TAG]),
        }
    }

    /// Checks and strips the trailer [`seal`](PairKeys::seal) appended, returning the frame.
    /// Refuses a frame too short, of an unknown lane, whose tag does not verify (compared in
    /// constant time), or whose counter is not above the highest accepted on its lane; the
    /// highest moves only once the tag verified.
    pub(crate) fn open<'a>(&self, frame: &'a [u8]) -> Result<&'a [u8], AuthError> {
        let short = || AuthError::Short(frame.len());
        let body_len = frame.len().checked_sub(TRAILER).ok_or_else(short)?;
        let (signed, tag) = frame.split_at_checked(body_len + 9).ok_or_else(short)?;
        let (body, meta) = signed.split_at_checked(body_len).ok_or_else(short)?;
        let [lane, counter @ ..]: [u8; 9] = meta.try_into().map_err(|_| short())?;
        let lane = Lane::from_byte(lane).ok_or(AuthError::UnknownLane(lane))?;
        let counter = u64::from_le_bytes(counter);
        let mut tag: [u8; TAG] = tag.try_into().map_err(|_| short())?;
        self.recv
            .open_in_place(nonce(lane, counter), Aad::from(signed), &mut tag)
            .map_err(|_| AuthError::BadTag)?;
        self.accepted[lane as usize]
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |highest| {
                (counter > highest).then_some(counter)
            })
            .map_err(|highest| AuthError::Replay {
                lane: lane as u8,
                counter,
                highest,
            })?;
        Ok(body)
    }
}

/// What a registration's signature covers: a domain label, the cluster, the name, and the
/// process (node and local id).
fn registration_message(cluster: &str, name: &str, node: u128, local: u64) -> Vec<u8> {
    let mut message = b"whirl-dist/registration/1".to_vec();
    for part in [cluster.as_bytes(), name.as_bytes()] {
        message.extend_from_slice(&(part.len() as u64).to_le_bytes());
        message.extend_from_slice(part);
    }
    message.extend_from_slice(&node.to_le_bytes());
    message.extend_from_slice(&local.to_le_bytes());
    message
}

impl Credentials {
    /// Signs this node's registration of process `local` under `name`: the signature scheme
    /// (2 bytes, little endian), then the signature.
    pub(crate) fn sign_registration(
        &self,
        cluster: &str,
        name: &str,
        node: u128,
        local: u64,
    ) -> Result<Vec<u8>, AuthError> {
        let mut signed = u16::from(self.signer.scheme()).to_le_bytes().to_vec();
        let message = registration_message(cluster, name, node, local);
        signed.extend(self.signer.sign(&message).map_err(AuthError::Key)?);
        Ok(signed)
    }
}

/// Whether `signed` (from [`Credentials::sign_registration`]) is the signature, by the holder
/// of the certificate `leaf` (DER), of the registration of `node`'s process `local` under
/// `name` in `cluster`.
pub(crate) fn verify_registration(
    leaf: &[u8],
    cluster: &str,
    name: &str,
    node: u128,
    local: u64,
    signed: &[u8],
) -> bool {
    let Some((scheme, signature)) = signed.split_first_chunk::<2>() else {
        return false;
    };
    let scheme = SignatureScheme::from(u16::from_le_bytes(*scheme));
    let message = registration_message(cluster, name, node, local);
    verify_signature(&CertificateDer::from(leaf), scheme, &message, signature).is_ok()
}

/// Every certificate of a PEM text; at least one.
fn read_certs(pem: &[u8], what: &'static str) -> Result<Vec<CertificateDer<'static>>, AuthError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| AuthError::Pem { what, source })?;
    if certs.is_empty() {
        return Err(AuthError::NoCertificate { what });
    }
    Ok(certs)
}

/// Checks that `leaf` chains to one of `anchors` at `now` and allows client authentication.
fn verify_chain(
    anchors: &[TrustAnchor<'_>],
    leaf: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
    now: UnixTime,
) -> Result<(), AuthError> {
    let leaf = EndEntityCert::try_from(leaf).map_err(AuthError::Certificate)?;
    let verify = |usage| {
        leaf.verify_for_usage(CHAIN_ALGS, anchors, intermediates, now, usage, None, None)
            .map(|_| ())
    };
    match verify(KeyUsage::client_auth()) {
        Ok(()) => Ok(()),
        Err(error @ webpki::Error::RequiredEkuNotFoundContext(_)) => {
            match verify(KeyUsage::server_auth()) {
                Ok(()) => Err(AuthError::ServerAuthOnly),
                Err(_) => Err(AuthError::Certificate(error)),
            }
        }
        Err(error) => Err(AuthError::Certificate(error)),
    }
}

/// Checks `signature` of `message` under `scheme` with the key of certificate `leaf`.
fn verify_signature(
    leaf: &CertificateDer<'_>,
    scheme: SignatureScheme,
    message: &[u8],
    signature: &[u8],
) -> Result<(), AuthError> {
    let algorithm =
        scheme_algorithm(scheme).ok_or(AuthError::UnsupportedScheme(u16::from(scheme)))?;
    EndEntityCert::try_from(leaf)
        .map_err(AuthError::Certificate)?
        .verify_signature(algorithm, message, signature)
        .map_err(AuthError::Signature)
}

/// What a hello's signature covers: a context naming the protocol, the version, the body.
fn signed_message(version: u8, body: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(HELLO_CONTEXT.len() + 1 + body.len());
    message.extend_from_slice(HELLO_CONTEXT);
    message.push(version);
    message.extend_from_slice(body);
    message
}

/// Encodes and signs a hello.
fn encode_hello(body: &Body<'_>, signer: &dyn Signer) -> Result<Vec<u8>, AuthError> {
    let body = postcard::to_stdvec(body).map_err(AuthError::Malformed)?;
    let signature = signer
        .sign(&signed_message(HELLO_VERSION, &body))
        .map_err(AuthError::Key)?;
    let envelope = Envelope {
        version: HELLO_VERSION,
        body: Bytes(&body),
        signature: Bytes(&signature),
    };
    let bytes = postcard::to_stdvec(&envelope).map_err(AuthError::Malformed)?;
    if bytes.len() > MAX_HELLO {
        return Err(AuthError::TooLarge { len: bytes.len() });
    }
    Ok(bytes)
}

/// Decodes a whole postcard value, refusing trailing bytes.
fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, AuthError> {
    let (value, rest) = postcard::take_from_bytes(bytes).map_err(AuthError::Malformed)?;
    if rest.is_empty() {
        Ok(value)
    } else {
        Err(AuthError::TrailingBytes)
    }
}

/// A hello on the wire: the version, the encoded [`Body`], its signature.
#[derive(Serialize, Deserialize)]
struct Envelope<'a> {
    version: u8,
    #[serde(borrow)]
    body: Bytes<'a>,
    #[serde(borrow)]
    signature: Bytes<'a>,
}

/// What a hello says, all of it signed.
#[derive(Serialize, Deserialize)]
struct Body<'a> {
    cluster: &'a str,
    from: u128,
    to: u128,
    nonce: [u8; 16],
    #[serde(borrow)]
    chain: Chain<'a>,
    ephemeral: [u8; 32],
    scheme: u16,
    window: u32,
}

/// Borrowed bytes, encoded as one length-prefixed byte string.
struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Bytes<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a [u8]>::deserialize(deserializer).map(Bytes)
    }
}

/// A certificate chain, leaf first. Decoding keeps at most [`MAX_CERTS`] certificates (so a
/// peer's length prefix allocates nothing) and counts the rest.
struct Chain<'a> {
    /// The certificates, DER.
    certs: Vec<&'a [u8]>,
    /// How many the sequence held (more than `certs` if over the limit).
    count: usize,
}

impl<'a> Chain<'a> {
    /// The chain of these certificates.
    fn of(certs: &'a [CertificateDer<'static>]) -> Chain<'a> {
        Chain {
            certs: certs.iter().map(|cert| cert.as_ref()).collect(),
            count: certs.len(),
        }
    }
}

impl Serialize for Chain<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.certs.iter().map(|cert| Bytes(cert)))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Chain<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ChainVisitor;
        impl<'de> Visitor<'de> for ChainVisitor {
            type Value = Chain<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence of DER certificates")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Chain<'de>, A::Error> {
                let mut certs = Vec::with_capacity(MAX_CERTS);
                let mut count = 0usize;
                while let Some(Bytes(cert)) = seq.next_element()? {
                    count = count.saturating_add(1);
                    if certs.len() < MAX_CERTS {
                        certs.push(cert);
                    }
                }
                Ok(Chain { certs, count })
            }
        }
        deserializer.deserialize_seq(ChainVisitor)
    }
}

#[cfg(test)]
mod tests;
