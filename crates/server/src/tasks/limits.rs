//! The task engine's bounds: how much one slice does and how long a node holds a task.

/// Items handled per slice.
pub(crate) const SLICE: i64 = 1_000;
/// How long a claimed task is left to its node.
pub(crate) const LEASE_MS: i64 = 60_000;
