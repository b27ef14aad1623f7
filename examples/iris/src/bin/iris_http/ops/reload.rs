//! What SIGHUP does: the configuration file and the TLS certificate, read again and applied
//! without dropping a connection.
//!
//! The configuration goes through `whirl-config`'s live reload (`Assembled::reload`), as the
//! file watcher's changes do: predicate thresholds and budgets, group budgets and controller
//! parameters apply at once; what needs a restart (threads, schedulers, groups added or
//! removed) is said on stderr, one line each. The certificate and key are read again by
//! [`ReloadableCert::reload`]: new handshakes use them, established connections keep theirs.
//! Either may fail on its own (a file that does not parse, a key that does not match): the
//! failure is said on stderr with where it is, the last good configuration or certificate
//! stays, and `iris_http_reloads_total{what,result}` counts each outcome.

use std::path::PathBuf;
use std::sync::Arc;

use whirl_config::{Assembled, Assembly, ConfigError, Reloaded};

use super::certs::ReloadableCert;
use super::metrics::{Metrics, Outcome, Reloadable};

/// The configuration file a reload reads, and what it applies to.
pub struct ConfigFile {
    pub path: PathBuf,
    pub assembled: Arc<Assembled>,
    /// Admission control on; off (`--no-predicates`), the file's predicates are left out
    /// of what is applied, as they were at start.
    pub predicates: bool,
}

/// Everything SIGHUP reloads.
pub struct Reload {
    pub config: Option<ConfigFile>,
    pub cert: Option<Arc<ReloadableCert>>,
    pub metrics: Metrics,
}

/// What one reload did: each part's outcome, `None` for a part there is nothing to reload
/// of (the built-in configuration; plain HTTP).
#[derive(Debug)]
pub struct Outcomes {
    pub config: Option<Result<Reloaded, String>>,
    pub cert: Option<Result<(), String>>,
}

impl Outcomes {
    /// One line: how each part went (`configuration ok, certificate failed`).
    pub fn summary(&self) -> String {
        let part = |name: &str, outcome: Option<bool>| match outcome {
            None => format!("{name}: nothing to reload"),
            Some(true) => format!("{name}: ok"),
            Some(false) => format!("{name}: failed"),
        };
        format!(
            "{}, {}",
            part("configuration", self.config.as_ref().map(Result::is_ok)),
            part("certificate", self.cert.as_ref().map(Result::is_ok)),
        )
    }
}

impl Reload {
    /// Reloads the configuration and the certificate, saying on stderr what happened.
    pub fn run(&self) -> Outcomes {
        let config = self.config.as_ref().map(|file| {
            let outcome = Assembly::from_file(&file.path).map(|new| {
                let new = match file.predicates {
                    true => new,
                    false => new.without_predicates(),
                };
                file.assembled.reload(&new)
            });
            let result = match &outcome {
                Ok(_) => Outcome::Ok,
                Err(_) => Outcome::Failed,
            };
            self.metrics.reloaded(Reloadable::Config, result);
            report_config(&file.path.display().to_string(), &outcome);
            if matches!(&outcome, Ok(reloaded) if reloaded.is_empty()) {
                eprintln!("iris_http: {}: no change", file.path.display());
            }
            outcome.map_err(|e| e.to_string())
        });
        if self.config.is_none() {
            eprintln!("iris_http: the built-in configuration has no file to reload");
        }
        let cert = self.cert.as_ref().map(|cert| {
            let outcome = cert.reload();
            match &outcome {
                Ok(()) => {
                    self.metrics.reloaded(Reloadable::Certificate, Outcome::Ok);
                    eprintln!(
                        "iris_http: {}: certificate reloaded (new handshakes use it)",
                        cert.cert_path().display()
                    );
                }
                Err(e) => {
                    self.metrics
                        .reloaded(Reloadable::Certificate, Outcome::Failed);
                    eprintln!("iris_http: error: TLS: {e} (the last good certificate stays)");
                }
            }
            outcome.map_err(|e| e.to_string())
        });
        Outcomes { config, cert }
    }
}

/// Says on stderr what a reload of `file` did (applied, needs a restart) or why it failed;
/// for SIGHUP and for the file watcher alike.
pub fn report_config(file: &str, outcome: &Result<Reloaded, ConfigError>) {
    match outcome {
        Ok(reloaded) => {
            for path in &reloaded.applied {
                eprintln!("iris_http: {file}: applied {path}");
            }
            for restart in &reloaded.needs_restart {
                eprintln!("iris_http: {restart}");
            }
        }
        Err(e) => eprintln!("iris_http: error: {e} (the last good configuration stays)"),
    }
}
