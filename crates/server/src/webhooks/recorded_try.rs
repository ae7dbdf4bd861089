//! A webhook try that ended, on its way to the node's recorder.

use dialtone_store::deliveries::{Attempt, Next};

/// A try that ended, to be recorded (by the recorder).
pub struct RecordedTry {
    /// The try.
    pub(crate) attempt: Attempt,
    /// What follows it.
    pub(crate) next: Next,
}
