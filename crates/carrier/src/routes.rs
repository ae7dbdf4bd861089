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
}
