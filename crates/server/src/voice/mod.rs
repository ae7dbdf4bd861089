//! Calls as the platform keeps them, whatever network carries them: the CDR and its
//! renderings ([`cdr`]), legs opened and ended with their events and billing ([`legs`]),
//! and the recordings calls make ([`recordings`]); [`sip`] is the platform as the SIP
//! network sees it. Scenarios decide what happens on a call
//! (`crate::scenarios`); networks carry it out (`dialtone_carrier::voice`).

pub(crate) mod cdr;
pub(crate) mod legs;
pub(crate) mod recordings;
pub(crate) mod sip;
pub(crate) mod transcriptions;
