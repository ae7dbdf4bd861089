//! Routing of destinations to networks: the longest matching E.164 prefix wins, and a
//! default network carries the rest.

use std::sync::Arc;

use dialtone_domain::sms::SmsStatus;

use crate::{Accepted, BoxFuture, Carrier, OutboundSms, Rejected};

/// Networks chosen by destination prefix.
pub struct Routes {
    default: Arc<dyn Carrier>,
    /// Longest prefix first.
    routes: Vec<(String, Arc<dyn Carrier>)>,
}

impl Routes {
    /// Every destination goes to `default` until routes are added.
    pub fn new(default: Arc<dyn Carrier>) -> Self {
        Self {
            default,
            routes: Vec::new(),
        }
    }

    /// Sends destinations starting with `prefix` (such as `+33`) to `carrier`.
    pub fn route(mut self, prefix: &str, carrier: Arc<dyn Carrier>) -> Self {
        self.routes.push((prefix.to_owned(), carrier));
        self.routes.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        self
    }

    /// The network of a destination.
    pub fn carrier_for(&self, to: &str) -> &Arc<dyn Carrier> {
        self.routes
            .iter()
            .find(|(p, _)| to.starts_with(p.as_str()))
            .map_or(&self.default, |(_, c)| c)
    }
}

impl Carrier for Routes {
    fn name(&self) -> &str {
        self.default.name()
    }

    fn network_for(&self, to: &str) -> String {
        self.carrier_for(to).name().to_owned()
    }

    fn submit<'a>(&'a self, sms: &'a OutboundSms) -> BoxFuture<'a, Result<Accepted, Rejected>> {
        self.carrier_for(&sms.to).submit(sms)
    }

    fn submit_now(&self, sms: &OutboundSms) -> Option<Result<Accepted, Rejected>> {
        self.carrier_for(&sms.to).submit_now(sms)
    }

    fn next_status(&self, to: &str, current: SmsStatus) -> Option<(SmsStatus, i64)> {
        self.carrier_for(to).next_status(to, current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Simulated;

    struct Named(&'static str);
    impl Carrier for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn submit<'a>(&'a self, _: &'a OutboundSms) -> BoxFuture<'a, Result<Accepted, Rejected>> {
            Box::pin(std::future::ready(Err(Rejected {
                permanent: true,
                reason: self.0.into(),
            })))
        }
    }

    #[test]
    fn longest_prefix_then_default() {
        let routes = Routes::new(Arc::new(Simulated::new(200)))
            .route("+33", Arc::new(Named("fr")))
            .route("+336", Arc::new(Named("fr-mobile")));
        assert_eq!(routes.network_for("+33612345678"), "fr-mobile");
        assert_eq!(routes.network_for("+33123456789"), "fr");
        assert_eq!(routes.network_for("+447700900001"), "simulated");
        assert!(
            routes
                .next_status("+33612345678", SmsStatus::Pending)
                .is_none()
        );
        assert!(routes.next_status("+4412", SmsStatus::Pending).is_some());
    }

    #[test]
    fn only_networks_without_io_answer_at_once() {
        let routes = Routes::new(Arc::new(Simulated::new(200))).route("+33", Arc::new(Named("fr")));
        let sms = |to: &str| OutboundSms {
            sid: "abcd1234".into(),
            from: "SMS".into(),
            to: to.into(),
            parts: vec!["one".into(), "two".into()],
            encoding: dialtone_domain::sms::Encoding::Gsm,
            flash: false,
        };
        assert!(routes.submit_now(&sms("+33612345678")).is_none());
        let taken = routes.submit_now(&sms("+447700900555"));
        assert_eq!(
            taken.and_then(Result::ok).map(|a| a.message_ids),
            Some(vec!["abcd1234-1".to_owned(), "abcd1234-2".to_owned()])
        );
        assert!(matches!(
            routes.submit_now(&sms("+447700900003")),
            Some(Err(Rejected {
                permanent: true,
                ..
            }))
        ));
    }
}
