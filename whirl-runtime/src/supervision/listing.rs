//! Walking a supervision tree without knowing its types: a child supervisor's
//! [`ChildInfo`] can list that supervisor's children, whatever its template type.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use super::error::SupervisorError;
use super::info::ChildInfo;

/// Asks a supervisor, whatever its template type, for its children, waiting at most the
/// duration given.
pub(super) type WhichChildren =
    Arc<dyn Fn(Duration) -> Result<Vec<ChildInfo>, SupervisorError> + Send + Sync>;

/// `ask`, erased for `AnyAddr::supervisor`.
pub(super) fn erase(ask: WhichChildren) -> Arc<dyn Any + Send + Sync> {
    Arc::new(ask)
}

impl ChildInfo {
    /// For a running child supervisor, its children (asked with
    /// [`which_children_timeout`](crate::Addr::which_children_timeout), whatever the child's
    /// template type); `None` for a worker or a stopped child. Walks a supervision tree.
    pub fn which_children_timeout(
        &self,
        timeout: Duration,
    ) -> Option<Result<Vec<ChildInfo>, SupervisorError>> {
        let ask = self
            .addr
            .as_ref()?
            .children()?
            .downcast_ref::<WhichChildren>()?;
        Some(ask(timeout))
    }
}
