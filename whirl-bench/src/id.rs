//! A recorded run's identity ([`RunId`]): what errors, the store and comparisons refer to.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A recorded run's id: the database's row id, starting at 1 and increasing with each run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(pub i64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for RunId {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.trim().parse().map(RunId)
    }
}

impl From<i64> for RunId {
    fn from(id: i64) -> Self {
        RunId(id)
    }
}
