//! Routing of destinations to networks: the longest matching E.164 prefix wins, and a
//! default network, when there is one, carries the rest. The same table routes SMS
//! (`Routes<dyn Carrier>`) and calls (`Routes<dyn VoiceNetwork>`).

use std::sync::Arc;

use crate::Carrier;

/// Networks chosen by destination prefix.
pub struct Routes<N: ?Sized = dyn Carrier> {
    default: Option<Arc<N>>,
    /// Longest prefix first.
    routes: Vec<(String, Arc<N>)>,
}

impl<N: ?Sized> Clone for Routes<N> {
    fn clone(&self) -> Self {
        Self {
            default: self.default.clone(),
            routes: self.routes.clone(),
        }
    }
}

impl<N: ?Sized> Default for Routes<N> {
    fn default() -> Self {
        Self {
            default: None,
            routes: Vec::new(),
        }
    }
}

impl<N: ?Sized> Routes<N> {
    /// Every destination goes to `default` (none: no destination is routed) until routes
    /// are added.
    pub fn new(default: Option<Arc<N>>) -> Self {
        Self {
            default,
            routes: Vec::new(),
        }
    }

    /// Sends destinations starting with `prefix` (such as `+33`) to `carrier`.
    pub fn route(mut self, prefix: &str, carrier: Arc<N>) -> Self {
        self.routes.push((prefix.to_owned(), carrier));
        self.routes.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        self
    }

    /// The network of a destination; None when no prefix matches and there is no default.
    pub fn carrier_for(&self, to: &str) -> Option<&Arc<N>> {
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

    fn name(routes: &Routes<dyn Carrier>, to: &str) -> Option<String> {
        routes.carrier_for(to).map(|c| c.name().to_owned())
    }

    #[test]
    fn longest_prefix_then_default() {
        let routes: Routes = Routes::new(Some(Arc::new(Simulated::new(200)) as Arc<dyn Carrier>))
            .route("+33", Arc::new(Named("fr")))
            .route("+336", Arc::new(Named("fr-mobile")));
        assert_eq!(name(&routes, "+33612345678").as_deref(), Some("fr-mobile"));
        assert_eq!(name(&routes, "+33123456789").as_deref(), Some("fr"));
        assert_eq!(name(&routes, "+447700900001").as_deref(), Some("simulated"));
    }

    #[test]
    fn calls_route_by_prefix_like_sms() {
        let routes: Routes<dyn crate::VoiceNetwork> = Routes::new(Some(
            Arc::new(Simulated::new(200)) as Arc<dyn crate::VoiceNetwork>,
        ));
        let name = |to: &str| routes.carrier_for(to).map(|n| n.name().to_owned());
        assert_eq!(name("+33612345678").as_deref(), Some("simulated"));
        let none: Routes<dyn crate::VoiceNetwork> = Routes::default();
        assert!(none.carrier_for("+33612345678").is_none());
    }

    #[test]
    fn without_a_default_only_prefixes_route() {
        let routes: Routes = Routes::new(None).route("+33", Arc::new(Named("fr")));
        assert_eq!(name(&routes, "+33612345678").as_deref(), Some("fr"));
        assert_eq!(name(&routes, "+447700900001"), None);
    }
}
