//! Records where the nightly's own libraries are (`librustc_driver-*.so`), so that the driver
//! finds them when cargo runs it as a rustc wrapper, with no `LD_LIBRARY_PATH`.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).args(["--print", "sysroot"]).output();
    if let Ok(out) = out {
        let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !sysroot.is_empty() {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{sysroot}/lib");
            println!("cargo:rustc-env=WHIRL_DRIVER_SYSROOT={sysroot}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
