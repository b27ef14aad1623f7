//! What the harness's binaries share: making the certificates of a cluster of test nodes.

use std::path::Path;

/// Makes a cluster CA named `ca_name` and a certificate for each of `labels` in `dir` (made
/// if missing): `ca.pem`, and `<label>.pem` and `<label>.key`, readable by this user only. A
/// node's certificate names it `node-<label>`.
pub fn make_certs(dir: &Path, ca_name: &str, labels: &[&str]) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {dir:?}: {e}"))?;
    let ca = whirl_dist::certs::ClusterCa::new(ca_name)
        .map_err(|e| format!("cannot make the CA: {e}"))?;
    let write = |name: String, text: &str| -> Result<(), String> {
        let path = dir.join(name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("cannot write {path:?}: {e}"))?;
        std::io::Write::write_all(&mut file, text.as_bytes())
            .map_err(|e| format!("cannot write {path:?}: {e}"))
    };
    write("ca.pem".to_owned(), &ca.certificate_pem())?;
    for label in labels {
        let cert = ca
            .node(&format!("node-{label}"), 1)
            .map_err(|e| format!("cannot make {label}'s certificate: {e}"))?;
        write(format!("{label}.pem"), &cert.certificate)?;
        write(format!("{label}.key"), &cert.key)?;
    }
    Ok(())
}
