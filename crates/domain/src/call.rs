//! The words of calls: where a call is in its life, which way it goes, who hung it up, and
//! the kinds of recording a call makes. Stored and sent as these words.

crate::words! {
    /// Where a call (one leg) is in its life.
    pub enum CallStatus {
        /// Ringing, not answered yet.
        Ringing = "ringing",
        /// Answered and live.
        Answered = "answered",
        /// Over (hung up, declined or failed).
        Ended = "ended",
    }
}

impl CallStatus {
    /// The call is still up (ringing or answered).
    pub fn is_live(self) -> bool {
        !matches!(self, Self::Ended)
    }
}

crate::words! {
    /// Which way a call leg goes.
    pub enum CallDirection {
        /// To one of the platform's numbers.
        Inbound = "inbound",
        /// Dialled by the platform (a `dial` target).
        Outbound = "outbound",
    }
}

crate::words! {
    /// Who ended a call (the CDR's `hangupSource`).
    pub enum HangupSource {
        /// The calling party.
        Caller = "caller",
        /// The called party, or the scenario answering for it.
        Callee = "callee",
        /// The platform (declined, stopped through the API, node policy).
        System = "system",
    }
}

impl HangupSource {
    /// The earlier interfaces' word (`CALLER`, `CALLEE`, `SYSTEM`).
    pub fn legacy(self) -> &'static str {
        match self {
            Self::Caller => "CALLER",
            Self::Callee => "CALLEE",
            Self::System => "SYSTEM",
        }
    }
}

crate::words! {
    /// What a recording holds.
    pub enum RecordingKind {
        /// The whole call (`startRecording@v1`).
        Call = "call",
        /// A message left by the caller (`record@v1`).
        Voicemail = "voicemail",
    }
}

impl RecordingKind {
    /// The earlier interfaces' word (`CALL`, `VOICEMAIL`).
    pub fn legacy(self) -> &'static str {
        match self {
            Self::Call => "CALL",
            Self::Voicemail => "VOICEMAIL",
        }
    }
}

crate::words! {
    /// Where the transcription of a recording stands.
    pub enum TranscriptStatus {
        /// Asked for, not done yet.
        Pending = "pending",
        /// Done: the recording has its transcript.
        Ready = "ready",
        /// The transcriber failed (its error says why).
        Failed = "failed",
        /// No model for the language asked (its error says so).
        Unsupported = "unsupported",
    }
}

/// Q.850 cause of a normal hangup.
pub const NORMAL_CLEARING: i64 = 16;
/// Q.850 cause of a call to a number that leads nowhere.
pub const UNALLOCATED_NUMBER: i64 = 1;
/// Q.850 cause of a busy line.
pub const USER_BUSY: i64 = 17;
/// Q.850 cause of a target that did not answer.
pub const NO_ANSWER: i64 = 19;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        for s in CallStatus::ALL {
            assert_eq!(CallStatus::parse(s.as_str()), Some(*s));
        }
        for d in CallDirection::ALL {
            assert_eq!(CallDirection::parse(d.as_str()), Some(*d));
        }
        assert_eq!(HangupSource::parse("caller"), Some(HangupSource::Caller));
        assert_eq!(RecordingKind::Voicemail.legacy(), "VOICEMAIL");
        assert_eq!(CallStatus::parse("busy"), None);
        assert_eq!(
            serde_json::from_str::<CallStatus>("\"ended\"").ok(),
            Some(CallStatus::Ended)
        );
        assert!(serde_json::from_str::<CallStatus>("\"gone\"").is_err());
    }
}
