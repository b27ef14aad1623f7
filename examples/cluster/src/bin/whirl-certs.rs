//! `whirl-certs`: makes a cluster's certificates as files, with `whirl_dist::certs`.
//!
//! ```text
//! whirl-certs ca --dir certs                # certs/ca.pem, certs/ca.key
//! whirl-certs node n1 --dir certs           # certs/n1.pem, certs/n1.key, signed by the CA
//! ```
//!
//! Keys are written with mode 0600, through a temporary file renamed into place, and never
//! over an existing file unless `--force` is given. Errors are printed as
//! `whirl-certs: <what>: <cause>`, with exit code 1.

use cluster::Failure;

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use whirl_dist::certs::ClusterCa;

/// Makes a whirl-dist cluster's certificate authority (CA) and its nodes' certificates.
///
/// Files, all PEM:
///
///   DIR/ca.pem     the CA's certificate: every node needs it (dist_node --ca)
///   DIR/ca.key     the CA's private key: signs node certificates; keep it OFF the nodes
///   DIR/NAME.pem   node NAME's certificate (its common name and DNS name are NAME)
///   DIR/NAME.key   node NAME's private key: on node NAME only
///
/// A node needs its own NAME.pem and NAME.key and the CA's ca.pem, nothing else. Keep ca.key
/// on the machine (or offline medium) where certificates are issued. Key files are written
/// with mode 0600. Nothing is overwritten unless --force is given.
#[derive(Parser, Debug)]
#[command(name = "whirl-certs", verbatim_doc_comment)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Makes a new CA: DIR/ca.pem (give it to every node) and DIR/ca.key (keep it off the
    /// nodes). Valid until 2034.
    Ca {
        /// The directory to write to (made if missing).
        #[arg(long)]
        dir: PathBuf,
        /// The CA's common name.
        #[arg(long, default_value = "whirl-cluster-ca")]
        name: String,
        /// Replace an existing ca.pem and ca.key (node certificates issued by the old CA are
        /// then no longer accepted by nodes given only the new ca.pem).
        #[arg(long)]
        force: bool,
    },
    /// Issues a certificate for node NAME, signed by the CA in DIR: writes DIR/NAME.pem and
    /// DIR/NAME.key. NAME is what peers see and what `dist_node --allow-factory-from` names.
    Node {
        /// The node's name: 1 to 64 ASCII letters, digits, '-', '_' and '.'.
        name: String,
        /// The directory holding ca.pem and ca.key, where NAME.pem and NAME.key are written.
        #[arg(long)]
        dir: PathBuf,
        /// How many days the certificate is valid, from now.
        #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=36_500))]
        days: u32,
        /// Replace an existing NAME.pem and NAME.key (to renew a node's certificate).
        #[arg(long)]
        force: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Ca { dir, name, force } => make_ca(&dir, &name, force),
        Command::Node {
            name,
            dir,
            days,
            force,
        } => make_node(&dir, &name, days, force),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { what, cause }) => {
            eprintln!("whirl-certs: {what}: {cause}");
            ExitCode::FAILURE
        }
    }
}

fn make_ca(dir: &Path, name: &str, force: bool) -> Result<(), Failure> {
    if name.trim().is_empty() {
        return Err(Failure::new("the CA's name", "it is empty"));
    }
    let (cert_path, key_path) = (dir.join("ca.pem"), dir.join("ca.key"));
    if !force {
        refuse_existing(&[&key_path, &cert_path])?;
    }
    fs::create_dir_all(dir).map_err(|e| Failure::of(format!("make {}", dir.display()), &e))?;
    let ca = ClusterCa::new(name).map_err(|e| Failure::of("make the CA", &e))?;
    write_file(&key_path, ca.key_pem().as_bytes(), Mode::Secret)?;
    write_file(&cert_path, ca.certificate_pem().as_bytes(), Mode::Public)?;
    println!(
        "wrote {} (the CA's certificate: copy it to every node)",
        cert_path.display()
    );
    println!(
        "wrote {} (the CA's key, mode 0600: keep it off the nodes)",
        key_path.display()
    );
    Ok(())
}

fn make_node(dir: &Path, name: &str, days: u32, force: bool) -> Result<(), Failure> {
    check_node_name(name)?;
    let (cert_path, key_path) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    if !force {
        refuse_existing(&[&key_path, &cert_path])?;
    }
    let ca_cert = read_text(&dir.join("ca.pem"))?;
    let ca_key = read_text(&dir.join("ca.key"))?;
    let ca = ClusterCa::from_pem(&ca_cert, &ca_key)
        .map_err(|e| Failure::of(format!("load the CA from {}", dir.display()), &e))?;
    let node = ca
        .node(name, days)
        .map_err(|e| Failure::of(format!("make the certificate of {name:?}"), &e))?;
    write_file(&key_path, node.key.as_bytes(), Mode::Secret)?;
    write_file(&cert_path, node.certificate.as_bytes(), Mode::Public)?;
    println!(
        "wrote {} (node {name:?}'s certificate, valid {days} days)",
        cert_path.display()
    );
    println!(
        "wrote {} (its key, mode 0600: on node {name:?} only)",
        key_path.display()
    );
    Ok(())
}

/// A node name is one file name and one certificate name: 1 to 64 ASCII letters, digits, '-',
/// '_' and '.', and not the CA's own file name.
fn check_node_name(name: &str) -> Result<(), Failure> {
    let what = format!("node name {name:?}");
    if name.is_empty() || name.len() > 64 {
        return Err(Failure::new(what, "it must be 1 to 64 characters long"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(Failure::new(
            what,
            "only ASCII letters, digits, '-', '_' and '.' are allowed",
        ));
    }
    if name.trim_matches('.').is_empty() {
        return Err(Failure::new(what, "it must not be only dots"));
    }
    if name.eq_ignore_ascii_case("ca") {
        return Err(Failure::new(
            what,
            "\"ca\" is taken by the CA's own files (ca.pem, ca.key)",
        ));
    }
    Ok(())
}

/// Refuses when any of `paths` exists.
fn refuse_existing(paths: &[&Path]) -> Result<(), Failure> {
    for path in paths {
        match fs::symlink_metadata(path) {
            Ok(_) => {
                return Err(Failure::new(
                    format!("write {}", path.display()),
                    "it exists already (pass --force to replace it)",
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Failure::of(format!("look at {}", path.display()), &e)),
        }
    }
    Ok(())
}

fn read_text(path: &Path) -> Result<String, Failure> {
    fs::read_to_string(path).map_err(|e| Failure::of(format!("read {}", path.display()), &e))
}

/// Who may read a file.
#[derive(Clone, Copy)]
enum Mode {
    /// The owner only (0600): private keys.
    Secret,
    /// Everyone (0644): certificates.
    Public,
}

/// Writes `bytes` to `path` through a new temporary file in the same directory (made with its
/// final mode, so a key is never readable by others, even for a moment), renamed over `path`.
fn write_file(path: &Path, bytes: &[u8], mode: Mode) -> Result<(), Failure> {
    let what = || format!("write {}", path.display());
    let file_name = path
        .file_name()
        .ok_or_else(|| Failure::new(what(), "the path has no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(match mode {
            Mode::Secret => 0o600,
            Mode::Public => 0o644,
        });
    }
    #[cfg(not(unix))]
    let _ = mode;
    let written = options.open(&tmp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    let renamed = written.and_then(|()| fs::rename(&tmp, path));
    renamed.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        Failure::of(what(), &e)
    })
}
