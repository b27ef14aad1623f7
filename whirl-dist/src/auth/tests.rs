//! The handshake and frame authentication, tried with certificates made by rcgen.

use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, SignatureAlgorithm,
};
use x509_parser::prelude::FromDer;

use super::*;

const CLUSTER: &str = "prod";

/// An RSA-2048 key in PKCS#1 form ("RSA PRIVATE KEY"), which rcgen's ring backend
/// cannot generate.
const RSA_PKCS1: &str = concat!(
    "-----BEGIN RSA PRIVATE KEY-----\n",
    "MIIEogIBAAKCAQEAq9vPsljKQa5TMRgZgtU6KxhtOl5VSDuWlo+Wzyz5AB7CGS3e\n",
    "3zHlfnUDi4FCEQQZGfxK+3+xgeUXPI6zNX9dnHqGgtMD18eUXzOq6tzUCfIMObT8\n",
    "VkJBt78FF3bjp0soCmBfBBCX5QGpjxQQV+BiUEJXLarSWr5Fc3DJYyGjXbH5U/LJ\n",
    "SnLWs2DD5aT13rHpsWebLHq5VBxcBEcskm+nyleiz7PNfutemhq3zEnPBbfDD15J\n",
    "P4vSPq3/YurfICIOQ9ZDMdaCV7LF5fjKIJ5W2xZeL6yIPbHlCCuQj7aHy1/zfLVy\n",
    "je82S8tbEnTCZNOJu0/uVmYZdFjIlM8qEvGY5wIDAQABAoIBACU06xPtFii/IYKs\n",
    "+YTyPewrlyY+Ww9O20zQXHGRBn2IqzQBUtGWf11v3usael+tt/OAxAkL/bWmD/BL\n",
    "4q+P2gfxHOMA5UGXk19DE9tSINPgY9YwgTr5kDnEMMmCM0o6QrpwX9HE9+WcBQYV\n",
    "bW5hBVfj7PTVmUINFIMoJWmBVFmJvgCzaeqUhgIBilAtmjBAcPrrfhE4wDt0GUfO\n",
    "SVlMQVfVPEVfoWOTg5enOvkOCbilX3lDAaJxcZiJJd4hvcBpUsb8iQ1MyyiltBah\n",
    "DZC/ywoqdnc6dqOHZF4zJ2icNO1DUTXf56MVAFkPOHsHfJFbjJiVaJVhigR60Y12\n",
    "p+BjkN0CgYEA3XQnF2dXl5feNPFkGex2ex5Iy9n3/3N+jjj7rJdPcO43AdQ/lopM\n",
    "4iR6aFtM0z31GDwu+R9pBtgGEhtwZK5N7kQ+WVwNurtMvV9SuYn/Re+0WxQ9Uo2S\n",
    "h/WrjnTyuUq6jTQp8d2pXWntLKx836pCxHVWJkzbJondCyjaCSPZixMCgYEAxqsO\n",
    "4lK2DU8Q/cvGoXjiEiTe1JPyMfm52y7/hNwpnK7Gh8P3FU+g7YxxyzNfNmOTgFTu\n",
    "SebUpDsBjl5/wgbQxk+pYM2azGcA4Ze5P/H5eSdB/itEqtAVscpdVkmTJQSpJNa4\n",
    "T81Ie5KtSNqB2RjDx0PBoRYyk8ILHcYq7RQFAV0CgYAf7ObV0OgnypUWPNaZhiVu\n",
    "imckPEAsa5ILHtvpfcbOGQmFEfw4z6dV0rxy3vasXXpADC0ZbRXPDsWRRrNlUFub\n",
    "xerXJxYznVzq0Bs09FgA1RXDK5/Lju1Y/GnHF8UGQWezg5mobLRF60dt8U/vTrRh\n",
    "bikFTH8rhyR+v1zvhGOQUQKBgCggYsg5toWno6HvZ7YziU3q3osHOtL3Qp/PtVJr\n",
    "eYgpEPZZEW3fgHyacl19icydfixceyi4E9j8BgtwcNOKtt5nNqnTvWFtqJLoJ0WQ\n",
    "JThgQocIzDzH/KnFWubTw4GlmFhVejK8Hti+vntJjxJ/WwPDXrefmSWY+s/Pt9nc\n",
    "wkoNAoGAb8kwvoeI9W/c8It552HrwvjhOU/IromfqiLieLI1ZHPqgL778pKFVmVd\n",
    "zX/hyOT/luMRSrSF24llLKcRWaBqDWKgidA2DkoJRUKAKffyLGXkMS3eHlq38X0o\n",
    "C2h7Ta5KAnO1K1YvexXTJJ664HjbdI4ZbRiNG07ZYSQGHx+fCkw=\n",
    "-----END RSA PRIVATE KEY-----\n",
);

/// A P-256 key in SEC1 form ("EC PRIVATE KEY").
const EC_SEC1: &str = concat!(
    "-----BEGIN EC PRIVATE KEY-----\n",
    "MHcCAQEEIBiY9whcxPZZmueGQTbH9xQ1TzMoNfvY4EAXVoMzgVD5oAoGCCqGSM49\n",
    "AwEHoUQDQgAEdCmTGzJd2dwyM+SkN/H0DylQPz9jTjqJpxcB+AevnHJmUJkKuyS9\n",
    "K4Joh61ewPG6VeDPOhlPaRJnoL/YxVNznw==\n",
    "-----END EC PRIVATE KEY-----\n",
);

struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str) -> Ca {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().expect("CA key");
    let cert = params.self_signed(&key).expect("CA certificate");
    Ca {
        pem: cert.pem(),
        issuer: Issuer::new(params, key),
    }
}

/// Leaf parameters: a CN (if any), DNS names, both TLS usages.
fn params(cn: Option<&str>, sans: &[&str]) -> CertificateParams {
    let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
    let mut params = CertificateParams::new(sans).expect("names");
    params.distinguished_name = DistinguishedName::new();
    if let Some(cn) = cn {
        params.distinguished_name.push(DnType::CommonName, cn);
    }
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    params
}

/// A leaf's certificate and key, in PEM.
struct Leaf {
    chain: String,
    key: String,
}

fn issue(ca: &Ca, params: CertificateParams, key: &KeyPair) -> Leaf {
    Leaf {
        chain: params.signed_by(key, &ca.issuer).expect("leaf").pem(),
        key: key.serialize_pem(),
    }
}

fn leaf(ca: &Ca, name: &str) -> Leaf {
    let key = KeyPair::generate().expect("key");
    issue(ca, params(Some(name), &[name]), &key)
}

fn load(leaf: &Leaf, ca: &Ca) -> Result<Credentials, AuthError> {
    Credentials::from_pem(
        leaf.chain.as_bytes(),
        leaf.key.as_bytes(),
        ca.pem.as_bytes(),
    )
}

struct Node {
    creds: Credentials,
    nonce: [u8; 16],
    id: u128,
}

fn node_of(creds: Credentials) -> Node {
    let nonce = fresh_nonce().expect("nonce");
    let id = creds.node_id(&nonce);
    Node { creds, nonce, id }
}

fn node(ca: &Ca, name: &str) -> Node {
    node_of(load(&leaf(ca, name), ca).expect("loads"))
}

fn hello(from: &Node, to: &Node) -> (Vec<u8>, Handshake) {
    from.creds
        .hello(CLUSTER, from.id, from.nonce, to.id, 64)
        .expect("hello")
}

/// Both handshakes; returns (a's keys for b, b's keys for a).
fn pair(a: &Node, b: &Node) -> (PairKeys, PairKeys) {
    let (to_b, a_half) = hello(a, b);
    let (to_a, b_half) = hello(b, a);
    let from_a = b
        .creds
        .verify_hello(CLUSTER, b.id, &to_b)
        .expect("a's hello");
    let from_b = a
        .creds
        .verify_hello(CLUSTER, a.id, &to_a)
        .expect("b's hello");
    assert_eq!((from_a.from, from_b.from), (a.id, b.id));
    let a_keys = a_half.finish(&from_b).expect("a finishes");
    let b_keys = b_half.finish(&from_a).expect("b finishes");
    (a_keys, b_keys)
}

fn sealed(keys: &PairKeys, lane: Lane, body: &[u8]) -> Vec<u8> {
    let mut frame = body.to_vec();
    keys.seal(lane, &mut frame);
    frame
}

fn signer_of(key_pem: &str) -> Box<dyn Signer> {
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("key PEM");
    rustls::crypto::ring::default_provider()
        .key_provider
        .load_private_key(key)
        .expect("key")
        .choose_scheme(SCHEMES)
        .expect("scheme")
}

fn der(pem: &str) -> Vec<u8> {
    CertificateDer::from_pem_slice(pem.as_bytes())
        .expect("certificate PEM")
        .to_vec()
}

/// A hello with any contents, signed by any key.
fn forge(from: u128, to: u128, nonce: [u8; 16], chain: &[&[u8]], key_pem: &str) -> Vec<u8> {
    let signer = signer_of(key_pem);
    let body = Body {
        cluster: CLUSTER,
        from,
        to,
        nonce,
        chain: Chain {
            certs: chain.to_vec(),
            count: chain.len(),
        },
        ephemeral: [9; 32],
        scheme: u16::from(signer.scheme()),
        window: 64,
    };
    encode_hello(&body, &*signer).expect("encodes")
}

#[test]
fn shared_types_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Credentials>();
    send_sync::<Handshake>();
    send_sync::<PeerHello>();
    send_sync::<PairKeys>();
    send_sync::<AuthError>();
}

#[test]
fn node_id_is_the_hash_of_certificate_and_nonce() {
    let ca = ca("ca");
    let leaf = leaf(&ca, "a");
    let creds = load(&leaf, &ca).expect("loads");
    let mut input = NODE_ID_CONTEXT.to_vec();
    input.extend_from_slice(&der(&leaf.chain));
    input.extend_from_slice(&[7; 16]);
    let hash = digest::digest(&digest::SHA256, &input);
    let expected = u128::from_le_bytes(hash.as_ref()[..16].try_into().expect("16 bytes"));
    assert_eq!(creds.node_id(&[7; 16]), expected);
    assert_ne!(creds.node_id(&[8; 16]), expected);
    assert_eq!(creds.name(), "a");
}

#[test]
fn handshake_round_trip_both_directions_with_matching_keys() {
    let ca = ca("ca");
    let (a, b) = (node(&ca, "node-a"), node(&ca, "node-b"));
    let (to_b, a_half) = hello(&a, &b);
    let from_a = b
        .creds
        .verify_hello(CLUSTER, b.id, &to_b)
        .expect("verifies");
    assert_eq!((from_a.from, from_a.name.as_str()), (a.id, "node-a"));
    let (to_a, b_half) = hello(&b, &a);
    let from_b = a
        .creds
        .verify_hello(CLUSTER, a.id, &to_a)
        .expect("verifies");
    assert_eq!((from_b.from, from_b.name.as_str()), (b.id, "node-b"));
    let (ab, ba) = (
        a_half.finish(&from_b).expect("a"),
        b_half.finish(&from_a).expect("b"),
    );
    for lane in Lane::ALL {
        for n in 0..3u8 {
            let body = [lane as u8, n, 42];
            assert_eq!(ba.open(&sealed(&ab, lane, &body)).expect("a to b"), body);
            assert_eq!(ab.open(&sealed(&ba, lane, &body)).expect("b to a"), body);
        }
    }
    assert_eq!(ba.open(&sealed(&ab, Lane::Data, &[])).expect("empty"), b"");
}

#[test]
fn frames_are_authenticated_and_fresh() {
    let ca = ca("ca");
    let (a, b) = (node(&ca, "a"), node(&ca, "b"));
    let (ab, ba) = pair(&a, &b);
    let first = sealed(&ab, Lane::Data, b"first");
    let second = sealed(&ab, Lane::Data, b"second");
    assert_eq!(first.len(), 5 + TRAILER);
    // Every tampered byte is refused (the lane byte as unknown or by its tag).
    for i in 0..first.len() {
        let mut bad = first.clone();
        bad[i] ^= 0x20;
        assert!(ba.open(&bad).is_err(), "tampered byte {i} accepted");
    }
    let mut bad = first.clone();
    bad[0] ^= 1;
    assert!(matches!(ba.open(&bad), Err(AuthError::BadTag)));
    bad = first.clone();
    bad[5] = 3;
    assert!(matches!(ba.open(&bad), Err(AuthError::UnknownLane(3))));
    // A sender's own frame reflected back to it does not verify: keys are directional.
    assert!(matches!(ab.open(&first), Err(AuthError::BadTag)));
    // In order: accepted; again, or an older one after a newer: replays.
    assert_eq!(ba.open(&first).expect("first"), b"first");
    assert!(matches!(
        ba.open(&first),
        Err(AuthError::Replay {
            lane: 0,
            counter: 1,
            highest: 1
        })
    ));
    let third = sealed(&ab, Lane::Data, b"third");
    assert_eq!(ba.open(&third).expect("skips are fine"), b"third");
    assert!(matches!(ba.open(&second), Err(AuthError::Replay { .. })));
    // Lanes count separately.
    let control = sealed(&ab, Lane::Control, b"ack");
    assert_eq!(ba.open(&control).expect("control lane"), b"ack");
    // A frame moved to another lane does not verify.
    let mut moved = sealed(&ab, Lane::Data, b"x");
    moved[1] = Lane::Direct as u8;
    assert!(matches!(ba.open(&moved), Err(AuthError::BadTag)));
    for len in 0..TRAILER {
        assert!(matches!(ba.open(&third[..len]), Err(AuthError::Short(l)) if l == len));
    }
}

#[test]
fn a_third_member_cannot_forge_frames_between_two_others() {
    let ca = ca("ca");
    let (a, b, c) = (node(&ca, "a"), node(&ca, "b"), node(&ca, "c"));
    let (_ab, ba) = pair(&a, &b);
    let (cb, _bc) = pair(&c, &b);
    let (ca_keys, _ac) = pair(&c, &a);
    // Whatever keys C holds, B's keys for A refuse its frames.
    for keys in [&cb, &ca_keys] {
        for lane in Lane::ALL {
            let frame = sealed(keys, lane, b"I am A");
            assert!(matches!(ba.open(&frame), Err(AuthError::BadTag)));
        }
    }
}

#[test]
fn a_member_cannot_claim_another_members_id() {
    let ca = ca("ca");
    let (a, b) = (node(&ca, "a"), node(&ca, "b"));
    let c_leaf = leaf(&ca, "c");
    let c = node_of(load(&c_leaf, &ca).expect("loads"));
    // Its own credentials will not make the hello.
    let made = c.creds.hello(CLUSTER, a.id, c.nonce, b.id, 64);
    assert!(matches!(made, Err(AuthError::IdMismatch)));
    // With its own certificate, A's id and A's nonce: not the hash of its certificate.
    let forged = forge(a.id, b.id, a.nonce, &[&der(&c_leaf.chain)], &c_leaf.key);
    let verified = b.creds.verify_hello(CLUSTER, b.id, &forged);
    assert!(
        matches!(verified, Err(AuthError::IdMismatch)),
        "{verified:?}"
    );
    // With A's certificate too: it cannot sign for A's key.
    let a_leaf = a.creds.chain[0].to_vec();
    let forged = forge(a.id, b.id, a.nonce, &[&a_leaf], &c_leaf.key);
    let verified = b.creds.verify_hello(CLUSTER, b.id, &forged);
    assert!(
        matches!(verified, Err(AuthError::Signature(_))),
        "{verified:?}"
    );
    // A handshake finishes only with the hello of the peer it was started with.
    let (_, a_half) = hello(&a, &b);
    let (to_a, _) = hello(&c, &a);
    let from_c = a
        .creds
        .verify_hello(CLUSTER, a.id, &to_a)
        .expect("c's own hello");
    assert!(matches!(a_half.finish(&from_c), Err(AuthError::WrongPeer)));
}

#[test]
fn strangers_are_refused() {
    let (ca, other) = (ca("ca"), ca("other"));
    let b = node(&ca, "b");
    // A member of another CA: it loads with its own CA, but B refuses its hello.
    let stranger = node(&other, "mallory");
    let (bytes, _) = hello(&stranger, &b);
    let verified = b.creds.verify_hello(CLUSTER, b.id, &bytes);
    assert!(
        matches!(verified, Err(AuthError::Certificate(_))),
        "{verified:?}"
    );
    // A self-signed certificate.
    let key = KeyPair::generate().expect("key");
    let cert = params(Some("mallory"), &["mallory"])
        .self_signed(&key)
        .expect("self-signed");
    let own = cert.der().to_vec();
    let nonce = [3; 16];
    let from = derive_node_id(&own, &nonce);
    let forged = forge(from, b.id, nonce, &[&own], &key.serialize_pem());
    let verified = b.creds.verify_hello(CLUSTER, b.id, &forged);
    assert!(
        matches!(verified, Err(AuthError::Certificate(_))),
        "{verified:?}"
    );
    // A node given a certificate of another CA refuses to start.
    let loaded = load(&leaf(&other, "x"), &ca);
    assert!(
        matches!(loaded, Err(AuthError::Certificate(_))),
        "{loaded:?}"
    );
}

#[test]
fn hellos_for_others_are_refused() {
    let ca = ca("ca");
    let (a, b, c) = (node(&ca, "a"), node(&ca, "b"), node(&ca, "c"));
    let (to_b, _) = hello(&a, &b);
    let other_cluster = b.creds.verify_hello("staging", b.id, &to_b);
    assert!(matches!(other_cluster, Err(AuthError::WrongCluster)));
    let other_node = c.creds.verify_hello(CLUSTER, c.id, &to_b);
    assert!(matches!(other_node, Err(AuthError::WrongRecipient)));
    let to_self = a.creds.hello(CLUSTER, a.id, a.nonce, a.id, 64);
    assert!(matches!(to_self, Err(AuthError::WrongRecipient)));
}

#[test]
fn oversized_and_overlong_hellos_are_refused() {
    let ca = ca("ca");
    let (a, b) = (node(&ca, "a"), node(&ca, "b"));
    let big = vec![0; 20 * 1024];
    let envelope = Envelope {
        version: HELLO_VERSION,
        body: Bytes(&big),
        signature: Bytes(&[]),
    };
    let bytes = postcard::to_stdvec(&envelope).expect("encodes");
    let verified = b.creds.verify_hello(CLUSTER, b.id, &bytes);
    assert!(matches!(verified, Err(AuthError::TooLarge { .. })));
    let a_leaf_pem = a.creds.chain[0].to_vec();
    let five = [&a_leaf_pem[..]; 5];
    let forged = forge(a.id, b.id, a.nonce, &five, &leaf(&ca, "x").key);
    let verified = b.creds.verify_hello(CLUSTER, b.id, &forged);
    assert!(matches!(
        verified,
        Err(AuthError::TooManyCertificates { count: 5 })
    ));
    let empty = forge(a.id, b.id, a.nonce, &[], &leaf(&ca, "x").key);
    let verified = b.creds.verify_hello(CLUSTER, b.id, &empty);
    assert!(matches!(verified, Err(AuthError::NoCertificate { .. })));
}

#[test]
fn truncated_flipped_and_random_hellos_are_refused_without_panics() {
    let ca = ca("ca");
    let (a, b) = (node(&ca, "a"), node(&ca, "b"));
    let (bytes, _) = hello(&a, &b);
    let verify = |bytes: &[u8]| b.creds.verify_hello(CLUSTER, b.id, bytes);
    for len in 0..bytes.len() {
        assert!(verify(&bytes[..len]).is_err(), "prefix of {len} accepted");
    }
    for i in 0..bytes.len() {
        let mut flipped = bytes.clone();
        flipped[i] ^= 0x80;
        assert!(verify(&flipped).is_err(), "flip at {i} accepted");
    }
    let mut extended = bytes.clone();
    extended.push(0);
    assert!(matches!(verify(&extended), Err(AuthError::TrailingBytes)));
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut random = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    };
    for round in 0..3000 {
        let garbage = random(round % 700);
        assert!(verify(&garbage).is_err());
        // Garbage inside a well-formed envelope reaches the body decoder.
        let envelope = Envelope {
            version: HELLO_VERSION,
            body: Bytes(&garbage),
            signature: Bytes(&garbage),
        };
        let wrapped = postcard::to_stdvec(&envelope).expect("encodes");
        assert!(verify(&wrapped).is_err());
    }
    assert!(matches!(verify(&[2, 0, 0]), Err(AuthError::Version(2))));
}

#[test]
fn loading_refuses_unusable_credentials() {
    let ca = ca("ca");
    let (a, c) = (leaf(&ca, "a"), leaf(&ca, "c"));
    let mismatched = Leaf {
        chain: a.chain.clone(),
        key: c.key.clone(),
    };
    assert!(matches!(
        load(&mismatched, &ca),
        Err(AuthError::KeyMismatch)
    ));
    let ed = KeyPair::generate_for(&rcgen::PKCS_ED25519).expect("key");
    let other_type = Leaf {
        chain: a.chain.clone(),
        key: ed.serialize_pem(),
    };
    assert!(matches!(
        load(&other_type, &ca),
        Err(AuthError::KeyMismatch)
    ));
    let no_cert = Credentials::from_pem(b"", a.key.as_bytes(), ca.pem.as_bytes());
    assert!(matches!(no_cert, Err(AuthError::NoCertificate { .. })));
    let no_ca = Credentials::from_pem(a.chain.as_bytes(), a.key.as_bytes(), b"junk");
    assert!(matches!(no_ca, Err(AuthError::NoCertificate { .. })));
    let no_key = Credentials::from_pem(a.chain.as_bytes(), b"", ca.pem.as_bytes());
    assert!(matches!(no_key, Err(AuthError::Pem { .. })));
    // Server authentication only: peers would refuse it, so it does not load.
    let key = KeyPair::generate().expect("key");
    let mut server_only = params(Some("s"), &["s"]);
    server_only.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let loaded = load(&issue(&ca, server_only, &key), &ca);
    assert!(
        matches!(loaded, Err(AuthError::ServerAuthOnly)),
        "{loaded:?}"
    );
    // No name at all (an IP address is not one); a DNS name serves when there is no CN.
    let loaded = load(&issue(&ca, params(None, &["10.0.0.1"]), &key), &ca);
    assert!(matches!(loaded, Err(AuthError::NoName)), "{loaded:?}");
    let loaded = load(&issue(&ca, params(None, &["n.example"]), &key), &ca);
    assert_eq!(loaded.expect("loads").name(), "n.example");
    // A chain too large for a hello.
    let names: Vec<String> = (0..400).map(|i| format!("n{i:04}.example")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let big = issue(&ca, params(Some("big"), &names), &key);
    let thrice = Leaf {
        chain: big.chain.repeat(3),
        key: big.key,
    };
    let loaded = load(&thrice, &ca);
    assert!(
        matches!(loaded, Err(AuthError::ChainTooLarge { .. })),
        "{loaded:?}"
    );
}

#[test]
fn expired_certificates_are_refused() {
    let ca = ca("ca");
    let b = node(&ca, "b");
    let key = KeyPair::generate().expect("key");
    let mut old = params(Some("old"), &["old"]);
    old.not_before = rcgen::date_time_ymd(2000, 1, 1);
    old.not_after = rcgen::date_time_ymd(2001, 1, 1);
    let old = issue(&ca, old, &key);
    let loaded = load(&old, &ca);
    assert!(
        matches!(loaded, Err(AuthError::Certificate(_))),
        "{loaded:?}"
    );
    // Loaded while it was valid, its hellos are refused now.
    let then = UnixTime::since_unix_epoch(Duration::from_secs(960_000_000)); // 2000-06
    let creds = Credentials::from_pem_at(
        old.chain.as_bytes(),
        old.key.as_bytes(),
        ca.pem.as_bytes(),
        then,
    );
    let (bytes, _) = hello(&node_of(creds.expect("valid then")), &b);
    let verified = b.creds.verify_hello(CLUSTER, b.id, &bytes);
    assert!(
        matches!(verified, Err(AuthError::Certificate(_))),
        "{verified:?}"
    );
}

/// A public key for rcgen to certify, taken from a key rustls loaded.
struct Public {
    key: Vec<u8>,
    alg: &'static SignatureAlgorithm,
}

impl rcgen::PublicKeyData for Public {
    fn der_bytes(&self) -> &[u8] {
        &self.key
    }
    fn algorithm(&self) -> &'static SignatureAlgorithm {
        self.alg
    }
}

/// A leaf certifying a PEM key of any form rustls reads.
fn issue_for_pem(ca: &Ca, name: &str, key_pem: &str, alg: &'static SignatureAlgorithm) -> Leaf {
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("key PEM");
    let key = rustls::crypto::ring::default_provider()
        .key_provider
        .load_private_key(key)
        .expect("key");
    let spki = key.public_key().expect("public key");
    let (_, spki) = x509_parser::x509::SubjectPublicKeyInfo::from_der(&spki).expect("SPKI");
    let public = Public {
        key: spki.subject_public_key.data.to_vec(),
        alg,
    };
    let cert = params(Some(name), &[name])
        .signed_by(&public, &ca.issuer)
        .expect("leaf");
    Leaf {
        chain: cert.pem(),
        key: key_pem.to_owned(),
    }
}

#[test]
fn every_supported_key_type_shakes_hands() {
    let ca = ca("ca");
    let b = node(&ca, "b");
    let mut leaves = Vec::new();
    for (name, alg) in [
        ("p384", &rcgen::PKCS_ECDSA_P384_SHA384),
        ("ed25519", &rcgen::PKCS_ED25519),
    ] {
        let key = KeyPair::generate_for(alg).expect("key");
        leaves.push(issue(&ca, params(Some(name), &[name]), &key));
    }
    leaves.push(issue_for_pem(
        &ca,
        "rsa",
        RSA_PKCS1,
        &rcgen::PKCS_RSA_SHA256,
    ));
    leaves.push(issue_for_pem(
        &ca,
        "sec1",
        EC_SEC1,
        &rcgen::PKCS_ECDSA_P256_SHA256,
    ));
    for leaf in &leaves {
        let a = node_of(load(leaf, &ca).expect("loads"));
        let (ab, ba) = pair(&a, &b);
        assert_eq!(
            ba.open(&sealed(&ab, Lane::Data, b"hi")).expect("opens"),
            b"hi"
        );
    }
    // RSA PKCS#1 v1.5 signatures verify too; a scheme outside the list does not.
    let rsa = &leaves[2];
    let leaf = CertificateDer::from(der(&rsa.chain));
    let key = PrivateKeyDer::from_pem_slice(RSA_PKCS1.as_bytes()).expect("key PEM");
    let key = rustls::crypto::ring::default_provider()
        .key_provider
        .load_private_key(key)
        .expect("key");
    let signer = key
        .choose_scheme(&[SignatureScheme::RSA_PKCS1_SHA256])
        .expect("PKCS#1");
    let signature = signer.sign(b"message").expect("signs");
    verify_signature(
        &leaf,
        SignatureScheme::RSA_PKCS1_SHA256,
        b"message",
        &signature,
    )
    .expect("verifies");
    let pss = verify_signature(
        &leaf,
        SignatureScheme::RSA_PSS_SHA256,
        b"message",
        &signature,
    );
    assert!(matches!(pss, Err(AuthError::Signature(_))));
    let sha1 = verify_signature(
        &leaf,
        SignatureScheme::RSA_PKCS1_SHA1,
        b"message",
        &signature,
    );
    assert!(matches!(sha1, Err(AuthError::UnsupportedScheme(0x0201))));
}

/// Cost of seal + open: `cargo test --release -- --ignored --nocapture seal_open_cost`.
#[test]
#[ignore = "timing only; run in release with --ignored --nocapture"]
fn seal_open_cost() {
    let ca = ca("ca");
    let (a, b) = (node(&ca, "a"), node(&ca, "b"));
    let start = Instant::now();
    let rounds = 200;
    for _ in 0..rounds {
        std::hint::black_box(pair(&a, &b));
    }
    let handshake = start.elapsed() / rounds;
    println!("full handshake (2 hellos, 2 verifications, 2 finishes): {handshake:?}");
    let (ab, ba) = pair(&a, &b);
    for size in [64, 4096] {
        let body = vec![7; size];
        let mut frame = Vec::with_capacity(size + TRAILER);
        let n = 100_000u32;
        let start = Instant::now();
        for _ in 0..n {
            frame.clear();
            frame.extend_from_slice(&body);
            ab.seal(Lane::Data, &mut frame);
            std::hint::black_box(ba.open(&frame).expect("opens"));
        }
        let per = start.elapsed().as_nanos() / u128::from(n);
        println!("seal + open, {size}-byte frame: {per} ns");
    }
}
