//! A run's three nodes, S (source), T (target) and X (third), each a child OS process on a
//! loopback port, over mutual TLS, in a full mesh (T connects to S, X to S and T); and their
//! end.

use std::path::Path;
use std::time::Instant;

use whirl_dist::NodeId;

use crate::child_proc::ChildProc;
use crate::settings::{CHILD_GRACE, SETUP_DEADLINE};
use crate::util::{endpoint, free_ports};

/// The three nodes of one run.
pub struct Trio {
    pub s: ChildProc,
    pub t: ChildProc,
    pub x: ChildProc,
}

impl Trio {
    /// Starts S, T and X as a fresh cluster and waits until each sees the other two Up.
    pub fn start(certs: &Path, lease_ms: u64) -> Result<Trio, String> {
        let id = NodeId::random().map_err(|e| format!("no entropy for a cluster name: {e}"))?;
        let cluster = format!("mig-{}", &id.to_string()[..12]);
        let ports = free_ports()?;
        let s = ChildProc::spawn("S", &cluster, certs, ports[0], &[], lease_ms)?;
        let t = ChildProc::spawn(
            "T",
            &cluster,
            certs,
            ports[1],
            &[endpoint(ports[0])],
            lease_ms,
        )?;
        let x = ChildProc::spawn(
            "X",
            &cluster,
            certs,
            ports[2],
            &[endpoint(ports[0]), endpoint(ports[1])],
            lease_ms,
        )?;
        let mut trio = Trio { s, t, x };
        let deadline = Instant::now() + SETUP_DEADLINE;
        for child in trio.all_mut() {
            child.ready(deadline)?;
        }
        Ok(trio)
    }

    fn all_mut(&mut self) -> [&mut ChildProc; 3] {
        [&mut self.s, &mut self.t, &mut self.x]
    }

    /// The node labelled `label` (`S`, `T` or `X`).
    pub fn get(&mut self, label: &str) -> Result<&mut ChildProc, String> {
        match label {
            "S" => Ok(&mut self.s),
            "T" => Ok(&mut self.t),
            "X" => Ok(&mut self.x),
            _ => Err(format!("no node {label}")),
        }
    }

    /// Closes every child's stdin and waits for them to shut down (killing the late ones).
    /// `s_killed`: S was killed on purpose, so how it ended does not matter.
    pub fn finish(mut self, s_killed: bool) -> Result<(), String> {
        for child in self.all_mut() {
            child.close();
        }
        let deadline = Instant::now() + CHILD_GRACE;
        let mut problems = Vec::new();
        for (child, killed) in [
            (&mut self.s, s_killed),
            (&mut self.t, false),
            (&mut self.x, false),
        ] {
            if let Err(e) = child.finish(deadline, killed) {
                problems.push(e);
            }
        }
        match problems.is_empty() {
            true => Ok(()),
            false => Err(problems.join("; ")),
        }
    }
}
