//! Making a cluster's certificates: a certificate authority (CA) and a certificate per node,
//! with [`rcgen`](https://docs.rs/rcgen). The `whirl-certs` command of the `cluster` example
//! package does the same from a shell; this module is for programs and tests that make their
//! own.
//!
//! A cluster has one CA. Each node gets a certificate the CA signs, whose common name is the
//! node's **name** (what a [`Policy`](crate::Policy) refers to), valid for both ends of a TLS
//! link (a node both listens and connects). Keys are ECDSA P-256. Keep the CA's key off the
//! nodes: a node needs only its own certificate and key, and the CA's certificate.
//!
//! ```
//! use whirl_dist::certs::ClusterCa;
//!
//! # fn main() -> Result<(), whirl_dist::certs::CertError> {
//! let ca = ClusterCa::new("orders-ca")?;
//! let node = ca.node("orders-1", 365)?;
//! assert!(node.certificate.starts_with("-----BEGIN CERTIFICATE-----"));
//! // Later, from the saved PEM texts:
//! let again = ClusterCa::from_pem(&ca.certificate_pem(), &ca.key_pem())?;
//! let other = again.node("orders-2", 365)?;
//! # let _ = other;
//! # Ok(()) }
//! ```

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};

/// Why a certificate could not be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot make the certificate")]
pub struct CertError(#[from] rcgen::Error);

/// A node's certificate and private key, as PEM text.
#[derive(Clone)]
pub struct NodeCert {
    /// The certificate, signed by the CA.
    pub certificate: String,
    /// Its private key (PKCS#8). Secret: readable by the node's user only.
    pub key: String,
}

impl std::fmt::Debug for NodeCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeCert").finish_non_exhaustive()
    }
}

/// A cluster's certificate authority: signs node certificates.
pub struct ClusterCa {
    certificate: String,
    issuer: Issuer<'static, KeyPair>,
    key: String,
}

impl std::fmt::Debug for ClusterCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterCa").finish_non_exhaustive()
    }
}

impl ClusterCa {
    /// A new CA named `name`, valid for ten years.
    pub fn new(name: &str) -> Result<ClusterCa, CertError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.distinguished_name = named(name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.not_before = rcgen::date_time_ymd(2024, 1, 1);
        params.not_after = params.not_before + time_days(3653);
        let key = KeyPair::generate()?;
        let key_pem = key.serialize_pem();
        let issuer = CertifiedIssuer::self_signed(params.clone(), key)?;
        let certificate = issuer.pem();
        let key = KeyPair::from_pem(&key_pem)?;
        Ok(ClusterCa {
            certificate,
            issuer: Issuer::new(params, key),
            key: key_pem,
        })
    }

    /// The CA saved earlier: its certificate and key, as PEM text.
    pub fn from_pem(certificate: &str, key: &str) -> Result<ClusterCa, CertError> {
        let key_pair = KeyPair::from_pem(key)?;
        let issuer = Issuer::from_ca_cert_pem(certificate, key_pair)?;
        Ok(ClusterCa {
            certificate: certificate.to_owned(),
            issuer,
            key: key.to_owned(),
        })
    }

    /// The CA's certificate (what every node trusts), as PEM text.
    pub fn certificate_pem(&self) -> String {
        self.certificate.clone()
    }

    /// The CA's private key, as PEM text. Secret: keep it off the nodes.
    pub fn key_pem(&self) -> String {
        self.key.clone()
    }

    /// A certificate for the node named `name` (its common name and DNS name), valid for
    /// `days` days from now (back-dated by a day for clocks that lag), for both TLS client and
    /// server use.
    pub fn node(&self, name: &str, days: u32) -> Result<NodeCert, CertError> {
        let mut params = CertificateParams::new(vec![name.to_owned()])?;
        params.distinguished_name = named(name);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time_days(1);
        params.not_after = now + time_days(u64::from(days.max(1)));
        let key = KeyPair::generate()?;
        let certificate = params.signed_by(&key, &self.issuer)?;
        Ok(NodeCert {
            certificate: certificate.pem(),
            key: key.serialize_pem(),
        })
    }
}

fn named(name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    dn
}

fn time_days(days: u64) -> time::Duration {
    time::Duration::days(i64::try_from(days).unwrap_or(i64::MAX / 86_400))
}
