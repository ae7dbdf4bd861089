//! Actions scenarios on the server: validation of scripts, runs driven through the pure
//! interpreter (`dialtone-actions`), and the calls they handle through the voice networks
//! (`dialtone_carrier::voice`).
//!
//! A run's state is stored at every step (table `runs`), so any node resumes it after a
//! restart; a step's outside work (network actions, SMS, HTTP) happens only after the step
//! that asked for it is committed.
//!
//! Layout: [`driver`] moves a run step by step, [`saves`] what a step saves in its run; [`commands`] is what each command does,
//! with [`prompts`] (say, play, gather, record) and [`dialing`] (dial); [`settle`] ends the
//! waits that are over; [`pending`] the waits; [`stored`] the stored state and the triggers;
//! [`runs`] creates runs (through the API, with the scenarios [`known`] to this node); [`inbound_call`] and [`call_events`] are calls coming in and what
//! their networks report; [`hangup`] the end of a call; [`sms_action`] and [`fetch`] the
//! outside work of `sms@v1` and `fetch@v1`.

pub(crate) mod call_events;
pub(crate) mod commands;
pub(crate) mod dialing;
pub(crate) mod driver;
pub(crate) mod engine;
pub(crate) mod fetch;
pub(crate) mod hangup;
pub(crate) mod inbound_call;
pub(crate) mod known;
pub(crate) mod parsed;
pub(crate) mod pending;
pub(crate) mod prompts;
pub(crate) mod runs;
pub(crate) mod saves;
pub(crate) mod scope;
pub(crate) mod settle;
pub(crate) mod sms_action;
pub(crate) mod stored;
pub(crate) mod validate;
pub(crate) mod worker;

pub(crate) use engine::Engine;
pub(crate) use parsed::ParsedCache;
