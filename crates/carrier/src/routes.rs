//! Routing of destinations to networks: the longest matching E.164 prefix wins, and a
//! default network, when there is one, carries the rest.

use std::sync::Arc;

use crate::Carrier;

/// Networks chosen by destination prefix.
#[derive(Clone, Default)]
pub struct Routes {
    default: Option<Arc<dyn Carrier>>,
    /// Longest prefix first.
    routes: Vec<(String, Arc<dyn Carrier>)>,
}

impl Routes {
    /// Every destination goes to `default` (none: no destination is routed) until routes
    /// are added.
    pub fn new(default: Option<Arc<dyn Carrier>>) -> Self {
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

    /// The network of a destination; None when no prefix matches and there is no default.
    pub fn carrier_for(&self, to: &str) -> Option<&Arc<dyn Carrier>> {
        self.routes
            .iter()
            .find(|(p, _)| to.starts_with(p.as_str()))
            .map(|(_, c)| c)
            .or(self.default.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BoxFuture, Instant, OutboundSms, Rejected, Simulated};

    struct Named(&'static str);
    impl Carrier for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn submit_part<'a>(
            &'a self,
            _: &'a OutboundSms,
            _: usize,
            _: Instant,
        ) -> BoxFuture<'a, Result<String, Rejected>> {
            Box::pin(std::future::ready(Err(Rejected {
                permanent: true,
                reason: self.0.into(),
            })))
        }
    }

    fn name(routes: &Routes, to: &str) -> Option<String> {
        routes.carrier_for(to).map(|c| c.name().to_owned())
    }

    #[test]
    fn longest_prefix_then_default() {
        let routes = Routes::new(Some(Arc::new(Simulated::new(200))))
            .route("+33", Arc::new(Named("fr")))
            .route("+336", Arc::new(Named("fr-mobile")));
        assert_eq!(name(&routes, "+33612345678").as_deref(), Some("fr-mobile"));
        assert_eq!(name(&routes, "+33123456789").as_deref(), Some("fr"));
        assert_eq!(name(&routes, "+447700900001").as_deref(), Some("simulated"));
    }

    #[test]
    fn without_a_default_only_prefixes_route() {
        let routes = Routes::new(None).route("+33", Arc::new(Named("fr")));
        assert_eq!(name(&routes, "+33612345678").as_deref(), Some("fr"));
        assert_eq!(name(&routes, "+447700900001"), None);
    }
}
