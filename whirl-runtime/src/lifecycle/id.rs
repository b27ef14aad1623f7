//! Process identity.

use std::fmt;

/// A runtime-unique process identifier, stable for the process's whole life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize), serde(transparent))]
pub struct ProcessId(pub(crate) u64);

impl ProcessId {
    /// The raw number, for logs and maps.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}>", self.0)
    }
}

/// Reads an id back from its display form, `<12>`, or from its number, `12` (an id in a log
/// line, or in the console's URLs). An id names a process; it gives no access to it (an
/// [`Addr`](crate::Addr) does).
impl std::str::FromStr for ProcessId {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bare = s.strip_prefix('<').and_then(|s| s.strip_suffix('>'));
        bare.unwrap_or(s).parse().map(ProcessId)
    }
}

// SAFETY: a number (invariant I8 in ARCHITECTURE.md: plain owned data).
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for ProcessId {}
impl crate::isolation::Reply for ProcessId {}
