//! Hangup causes between SIP and Q.850 (the CDR's `hangupCause`): a SIP final answer to a
//! cause (RFC 3398 section 8.2.6.1, with RFC 4497's refinements), a cause to the SIP answer
//! that refuses a call (section 8.2.6.2), the `Reason: Q.850;cause=N` header both ways
//! (RFC 3326), and a dial's outcome from the answer.

use dialtone_carrier::voice::DialOutcome;

/// Normal clearing.
pub const NORMAL_CLEARING: i64 = 16;
/// The called party is busy.
pub const USER_BUSY: i64 = 17;
/// No answer from the called party.
pub const NO_ANSWER: i64 = 19;
/// The call was rejected (a caller not allowed, an account that may not take it).
pub const CALL_REJECTED: i64 = 21;
/// No circuit available (a trunk at its cap).
pub const NO_CIRCUIT: i64 = 34;
/// Bearer capability not available (no codec in common).
pub const BEARER_UNAVAILABLE: i64 = 58;
/// Recovery on timer expiry (no ACK, no answer from the network).
pub const TIMER_EXPIRY: i64 = 102;
/// Unspecified interworking.
pub const INTERWORKING: i64 = 127;

/// The Q.850 cause of a SIP final answer.
pub fn cause_of_status(status: u16) -> i64 {
    match status {
        400 | 481 | 500 | 503 => 41,
        401 | 402 | 403 | 407 | 603 => CALL_REJECTED,
        404 | 485 | 604 => 1,
        405 => 63,
        406 | 415 | 501 => 79,
        408 | 504 => TIMER_EXPIRY,
        410 => 22,
        480 => 18,
        482 | 483 => 25,
        484 => 28,
        486 | 600 => USER_BUSY,
        487 => NORMAL_CLEARING,
        502 => 38,
        580 => 47,
        606 | 488 => BEARER_UNAVAILABLE,
        _ => INTERWORKING,
    }
}

/// The SIP answer that refuses a call for a Q.850 cause.
pub fn status_of_cause(cause: i64) -> u16 {
    match cause {
        1..=3 | 26 => 404,
        17 => 486,
        18 => 408,
        19..=20 | 31 => 480,
        21 | 55 | 57 | 87 => 403,
        22 => 410,
        27 => 502,
        28 => 484,
        29 | 69 | 79 => 501,
        34 | 38 | 41 | 42 | 47 | 58 | 88 => 503,
        65 => 488,
        102 => 504,
        _ => 500,
    }
}

/// The `Reason` header value of a cause (`Q.850;cause=16;text="..."`).
pub fn reason_header(cause: i64, text: &str) -> String {
    let text: String = text.chars().filter(|c| *c != '"' && *c != '\\').collect();
    format!("Q.850;cause={cause};text=\"{text}\"")
}

/// The Q.850 cause of a `Reason` header, if it carries one.
pub fn cause_of_reason(value: &str) -> Option<i64> {
    value.split(',').find_map(|reason| {
        let mut parts = reason.split(';').map(str::trim);
        if !parts.next()?.eq_ignore_ascii_case("Q.850") {
            return None;
        }
        parts.find_map(|p| {
            let (k, v) = p.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case("cause")
                .then(|| v.trim().trim_matches('"').parse().ok())
                .flatten()
        })
    })
}

/// How a dialled target answered, from its final SIP status (a 2xx is answered).
pub fn dial_outcome(status: u16) -> DialOutcome {
    match status {
        200..=299 => DialOutcome::Answered,
        486 | 600 | 603 => DialOutcome::Busy,
        408 | 480 | 487 => DialOutcome::NoAnswer,
        _ => DialOutcome::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings() {
        assert_eq!(cause_of_status(486), 17);
        assert_eq!(cause_of_status(404), 1);
        assert_eq!(cause_of_status(699), 127);
        assert_eq!(status_of_cause(1), 404);
        assert_eq!(status_of_cause(21), 403);
        assert_eq!(status_of_cause(34), 503);
        assert_eq!(status_of_cause(999), 500);
        assert_eq!(dial_outcome(200), DialOutcome::Answered);
        assert_eq!(dial_outcome(486), DialOutcome::Busy);
        assert_eq!(dial_outcome(480), DialOutcome::NoAnswer);
        assert_eq!(dial_outcome(503), DialOutcome::Failed);
    }

    #[test]
    fn reason_headers_both_ways() {
        let h = reason_header(1, "not \"allocated\"");
        assert_eq!(h, "Q.850;cause=1;text=\"not allocated\"");
        assert_eq!(cause_of_reason(&h), Some(1));
        assert_eq!(
            cause_of_reason("SIP;cause=200;text=\"x\", Q.850; cause=31"),
            Some(31)
        );
        assert_eq!(cause_of_reason("SIP;cause=487"), None);
    }
}
