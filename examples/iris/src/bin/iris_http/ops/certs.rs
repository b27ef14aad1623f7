//! The TLS certificate, reloadable: new handshakes use the certificate and key last loaded
//! from `--tls-cert` and `--tls-key`, while connections already established keep theirs.
//!
//! The server's rustls configuration is built once and never replaced; its certificate
//! resolver is a [`ReloadableCert`], which answers each handshake with the resolver of the
//! last good load. [`ReloadableCert::reload`] reads and checks both files exactly as the
//! command line does (`whirl::net::tls::server_config`: PEM, a certificate, a key that
//! rustls accepts and that matches it) and swaps only if all of that succeeded, so a bad
//! file keeps the last good certificate serving. An established connection holds its own
//! rustls state: a swap does not touch it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use whirl::net::tls::rustls::server::{ClientHello, ResolvesServerCert};
use whirl::net::tls::rustls::sign::CertifiedKey;
use whirl::net::tls::{self, TlsConfig, TlsConfigError};

/// A certificate resolver whose certificate can be replaced while the server runs.
pub struct ReloadableCert {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Arc<dyn ResolvesServerCert>>,
}

impl ReloadableCert {
    /// Loads `cert` and `key`; returns the configuration to serve with (the default
    /// handshake timeout; by ALPN `h2` then `http/1.1` if `h2`, else `http/1.1` only: the
    /// server's order wins) and the handle that reloads them.
    pub fn load(
        cert: &Path,
        key: &Path,
        h2: bool,
    ) -> Result<(TlsConfig, Arc<ReloadableCert>), TlsConfigError> {
        let first = tls::server_config(cert, key)?;
        let holder = Arc::new(ReloadableCert {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            current: RwLock::new(Arc::clone(&first.rustls().cert_resolver)),
        });
        let mut config = (**first.rustls()).clone();
        config.cert_resolver = Arc::clone(&holder) as Arc<dyn ResolvesServerCert>;
        config.alpn_protocols = match h2 {
            true => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            false => vec![b"http/1.1".to_vec()],
        };
        let config =
            TlsConfig::new(Arc::new(config)).with_handshake_timeout(first.handshake_timeout());
        Ok((config, holder))
    }

    /// Reads both files again; new handshakes use them if they are good, else nothing
    /// changes and the error says what is wrong.
    pub fn reload(&self) -> Result<(), TlsConfigError> {
        let fresh = tls::server_config(&self.cert, &self.key)?;
        let resolver = Arc::clone(&fresh.rustls().cert_resolver);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = resolver;
        Ok(())
    }

    /// The certificate file.
    pub fn cert_path(&self) -> &Path {
        &self.cert
    }

    fn current(&self) -> Arc<dyn ResolvesServerCert> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }
}

impl ResolvesServerCert for ReloadableCert {
    fn resolve(&self, client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current().resolve(client_hello)
    }

    fn only_raw_public_keys(&self) -> bool {
        self.current().only_raw_public_keys()
    }
}

impl std::fmt::Debug for ReloadableCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadableCert")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}
