//! The words of scenario runs: what started a run and where it is.

crate::words! {
    /// What started a run.
    pub enum RunKind {
        /// A call to a number the scenario is attached to (`inbound-call`, then `hangup`).
        InboundCall = "inbound-call",
        /// An SMS to a number the scenario is attached to (`inbound-sms`).
        InboundSms = "inbound-sms",
        /// Started through `POST /actions/scenarios/{sid}/runs` (`api-initiated`).
        Api = "api",
    }
}

impl RunKind {
    /// The branch of the script the run starts in.
    pub fn entry_branch(self) -> &'static str {
        match self {
            Self::InboundCall => "inbound-call",
            Self::InboundSms => "inbound-sms",
            Self::Api => "api-initiated",
        }
    }
}

crate::words! {
    /// Where a run is.
    pub enum RunStatus {
        /// Started or waiting for something.
        Running = "running",
        /// Every branch ran to its end.
        Completed = "completed",
        /// Failed (the error says why).
        Failed = "failed",
        /// Stopped through the API or by the call's end.
        Stopped = "stopped",
    }
}

impl RunStatus {
    /// The run has ended.
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Running)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        for k in RunKind::ALL {
            assert_eq!(RunKind::parse(k.as_str()), Some(*k));
        }
        for s in RunStatus::ALL {
            assert_eq!(RunStatus::parse(s.as_str()), Some(*s));
        }
        assert_eq!(RunKind::Api.entry_branch(), "api-initiated");
        assert!(RunStatus::Stopped.is_final());
        assert!(!RunStatus::Running.is_final());
    }
}
