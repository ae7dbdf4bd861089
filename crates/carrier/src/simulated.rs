//! The simulated carrier network. Destinations in the fictional range `+447700900000` to
//! `+447700900999` pick their fate by their last three digits; every other number delivers.
//!
//! | last digits | SMS | call |
//! |---|---|---|
//! | 001 | failed (rejected by the carrier) | |
//! | 002 | expired | |
//! | 003 | error (refused at submission) | |
//! | 004 | stays remote-queued | |
//! | 005 | delivered after 30 s | |
//! | 100 | | busy |
//! | 101 | | no answer |
//! | 102 | | failed |
//! | others | delivered, one step per `step_ms` | answered after 1 s |

use dialtone_domain::sms::SmsStatus;

use crate::voice::{CallAction, Dial, DialOutcome, VoiceError, VoiceNetwork};
use crate::{Accepted, BoxFuture, Carrier, Instant, OutboundSms, Rejected};

const MAGIC_PREFIX: &str = "+447700900";

/// The simulated network.
#[derive(Debug, Clone)]
pub struct Simulated {
    step_ms: i64,
}

/// How a simulated call attempt ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// Answered after this many milliseconds.
    Answered(i64),
    /// The line is busy.
    Busy,
    /// Nobody answers.
    NoAnswer,
    /// The call fails.
    Failed,
}

fn magic(to: &str) -> Option<&str> {
    to.strip_prefix(MAGIC_PREFIX).filter(|rest| rest.len() == 3)
}

impl Simulated {
    /// A network moving SMS one status every `step_ms` milliseconds.
    pub fn new(step_ms: i64) -> Self {
        Self {
            step_ms: step_ms.max(1),
        }
    }

    /// Milliseconds between two statuses.
    pub fn step_ms(&self) -> i64 {
        self.step_ms
    }

    /// Whether the network takes an SMS to `to` when it is submitted (it refuses `...003`).
    pub fn takes(to: &str) -> bool {
        magic(to) != Some("003")
    }

    /// The network's id of part `part` (from 1) of the SMS `sid`.
    pub fn part_id(sid: &str, part: usize) -> String {
        format!("{sid}-{part}")
    }

    /// How a call to `to` goes.
    pub fn call_outcome(&self, to: &str) -> CallOutcome {
        match magic(to) {
            Some("100") => CallOutcome::Busy,
            Some("101") => CallOutcome::NoAnswer,
            Some("102") => CallOutcome::Failed,
            _ => CallOutcome::Answered(1000),
        }
    }
}

impl Simulated {
    /// The network's answer to a submission: refused for `...003`, taken otherwise, with
    /// one message id per part.
    fn answer(&self, sms: &OutboundSms) -> Result<Accepted, Rejected> {
        refusal(sms)?;
        Ok(Accepted {
            message_ids: (1..=sms.parts.len())
                .map(|part| part_id(sms, part))
                .collect(),
            network: "simulated".to_owned(),
        })
    }
}

/// The simulator's refusal of `...003`.
fn refusal(sms: &OutboundSms) -> Result<(), Rejected> {
    if !Simulated::takes(&sms.to) {
        return Err(Rejected {
            permanent: true,
            reason: "simulated: destination refused the message".to_owned(),
        });
    }
    Ok(())
}

/// The simulator's id of a part: the SMS's sid and the part's number.
fn part_id(sms: &OutboundSms, part: usize) -> String {
    Simulated::part_id(&sms.sid, part)
}

impl Carrier for Simulated {
    fn name(&self) -> &str {
        "simulated"
    }

    fn submit_part<'a>(
        &'a self,
        sms: &'a OutboundSms,
        part: usize,
        _until: Instant,
    ) -> BoxFuture<'a, Result<String, Rejected>> {
        Box::pin(std::future::ready(
            refusal(sms).map(|()| part_id(sms, part)),
        ))
    }

    fn submit_now(&self, sms: &OutboundSms) -> Option<Result<Accepted, Rejected>> {
        Some(self.answer(sms))
    }

    fn next_status(&self, to: &str, current: SmsStatus) -> Option<(SmsStatus, i64)> {
        let step = self.step_ms;
        let digits = magic(to);
        match (current, digits) {
            (SmsStatus::Pending, _) => Some((SmsStatus::Sent, step)),
            (SmsStatus::Sent, Some("001")) => Some((SmsStatus::Failed, step)),
            (SmsStatus::Sent, _) => Some((SmsStatus::RemoteQueued, step)),
            (SmsStatus::RemoteQueued, Some("002")) => Some((SmsStatus::Expired, step)),
            (SmsStatus::RemoteQueued, Some("004")) => None,
            // Delivered 30 s after submission: two steps have passed since.
            (SmsStatus::RemoteQueued, Some("005")) => {
                Some((SmsStatus::Delivered, (30_000 - 2 * step).max(step)))
            }
            (SmsStatus::RemoteQueued, _) => Some((SmsStatus::Delivered, step)),
            _ => None,
        }
    }
}

/// Calls on the simulated network have no wire: an action is done as soon as it is asked
/// (the platform's timeline records it), and the far end is the sandbox API.
impl VoiceNetwork for Simulated {
    fn name(&self) -> &str {
        "simulated"
    }

    fn dial<'a>(&'a self, dial: &'a Dial) -> BoxFuture<'a, DialOutcome> {
        let outcome = match self.call_outcome(&dial.to) {
            CallOutcome::Answered(_) => DialOutcome::Answered,
            CallOutcome::Busy => DialOutcome::Busy,
            CallOutcome::NoAnswer => DialOutcome::NoAnswer,
            CallOutcome::Failed => DialOutcome::Failed,
        };
        Box::pin(std::future::ready(outcome))
    }

    fn act<'a>(
        &'a self,
        _callid: &'a str,
        _action: &'a CallAction,
    ) -> BoxFuture<'a, Result<(), VoiceError>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(sim: &Simulated, to: &str) -> Vec<(SmsStatus, i64)> {
        let mut out = Vec::new();
        let mut status = SmsStatus::Pending;
        while let Some((next, after)) = sim.next_status(to, status) {
            out.push((next, after));
            status = next;
        }
        out
    }

    #[test]
    fn magic_destinations() {
        use SmsStatus::*;
        let sim = Simulated::new(200);
        assert_eq!(
            path(&sim, "+33612345678"),
            [(Sent, 200), (RemoteQueued, 200), (Delivered, 200)]
        );
        assert_eq!(path(&sim, "+447700900001"), [(Sent, 200), (Failed, 200)]);
        assert_eq!(
            path(&sim, "+447700900002"),
            [(Sent, 200), (RemoteQueued, 200), (Expired, 200)]
        );
        assert_eq!(
            path(&sim, "+447700900004"),
            [(Sent, 200), (RemoteQueued, 200)]
        );
        assert_eq!(
            path(&sim, "+447700900005"),
            [(Sent, 200), (RemoteQueued, 200), (Delivered, 29_600)]
        );
        assert_eq!(sim.call_outcome("+447700900100"), CallOutcome::Busy);
        assert_eq!(sim.call_outcome("+447700900101"), CallOutcome::NoAnswer);
        assert_eq!(sim.call_outcome("+447700900102"), CallOutcome::Failed);
        assert_eq!(
            sim.call_outcome("+447700900103"),
            CallOutcome::Answered(1000)
        );
    }

    #[test]
    fn error_destination_is_refused_at_submission() {
        let sim = Simulated::new(200);
        let sms = |to: &str| OutboundSms {
            sid: "abcdefgh".into(),
            from: "SMS".into(),
            to: to.into(),
            parts: vec!["a".into(), "b".into()],
            encoding: dialtone_domain::sms::Encoding::Gsm,
            flash: false,
            reference: 7,
        };
        let run = |s: OutboundSms, part| {
            let fut = sim.submit_part(&s, part, Instant::now());
            poll_ready(fut)
        };
        assert!(run(sms("+447700900003"), 1).unwrap_err().permanent);
        assert_eq!(run(sms("+447700900999"), 2).unwrap(), "abcdefgh-2");
        assert_eq!(
            sim.submit_now(&sms("+447700900999"))
                .and_then(Result::ok)
                .map(|a| a.message_ids),
            Some(vec!["abcdefgh-1".to_owned(), "abcdefgh-2".to_owned()])
        );
        assert!(matches!(
            sim.submit_now(&sms("+447700900003")),
            Some(Err(Rejected {
                permanent: true,
                ..
            }))
        ));
    }

    fn poll_ready<T>(fut: BoxFuture<'_, T>) -> T {
        use std::task::{Context, Poll, Waker};
        let mut fut = fut;
        let mut cx = Context::from_waker(Waker::noop());
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("the simulator answers at once"),
        }
    }
}
