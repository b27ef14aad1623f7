//! [`Pid`]: a process anywhere in the cluster, named by its node and its id there.

use std::fmt;

use crate::NodeId;

/// A process on some node: the node's id (fresh on each start, so a pid of an earlier
/// incarnation never resolves again) and the process's id on that node.
///
/// Text form: `<local>@<node-hex>`; serialized as `{"node": "<node-hex>", "local": n}`.
///
/// ```
/// use whirl_dist::{NodeId, Pid};
///
/// let pid = Pid::new(NodeId::from_u128(0xab), 7);
/// assert_eq!(pid.to_string(), "7@000000000000000000000000000000ab");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, whirl::Isolated, serde::Serialize)]
pub struct Pid {
    node: NodeId,
    local: u64,
}

impl Pid {
    /// The process numbered `local` on `node`.
    pub const fn new(node: NodeId, local: u64) -> Pid {
        Pid { node, local }
    }

    /// The pid a frame names by its node's raw id and its local id.
    pub(crate) const fn from_wire(node: u128, local: u64) -> Pid {
        Pid::new(NodeId::from_u128(node), local)
    }

    /// The node the process runs on.
    pub const fn node(self) -> NodeId {
        self.node
    }

    /// The process's id on its node (its whirl [`ProcessId`](whirl::ProcessId) there).
    pub const fn local(self) -> u64 {
        self.local
    }
}

impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.local, self.node)
    }
}

impl fmt::Debug for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
