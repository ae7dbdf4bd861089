//! The pure core of dialtone: identifiers, E.164 numbers, money, timestamps, the clock
//! abstraction and the state machines of the platform's resources.
//!
//! This crate owns the rules and nothing else: no I/O, no async, no database. Every other
//! crate depends on it and it depends on none of them, so the rules are unit-tested without a
//! server.

pub mod account;
pub mod call;
pub mod clock;
pub mod country;
pub mod credentials;
pub mod money;
pub mod number;
pub mod phone;
pub mod run;
pub mod sid;
pub mod sms;
pub mod timestamp;
mod words;

pub use clock::{Clock, ManualClock, SystemClock};
pub use money::Money;
pub use phone::E164;
pub use sid::Sid;
pub use timestamp::Timestamp;
pub use words::Word;
