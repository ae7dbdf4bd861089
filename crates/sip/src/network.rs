//! Each trunk as a voice network of the platform ([`VoiceNetwork`]): dials go out through the
//! trunk ([`crate::outbound`]), actions on a leg go to the node that carries it, and the
//! trunks are routed by prefix with the default trunk.

use std::sync::Arc;

use dialtone_carrier::voice::{CallAction, Dial, DialOutcome, VoiceError, VoiceNetwork};
use dialtone_carrier::{BoxFuture, Routes};

use crate::node::SipNode;
use crate::outbound;
use crate::trunk::Trunk;

impl SipNode {
    /// The voice network of each trunk, routed by prefix (and the default trunk), for the
    /// platform's routes; `fallback` carries what no trunk does.
    pub fn routes(
        self: &Arc<Self>,
        fallback: Option<Arc<dyn VoiceNetwork>>,
    ) -> Routes<dyn VoiceNetwork> {
        let trunks: Vec<Arc<Trunk>> = self
            .trunks
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(t, _)| t.clone())
            .collect();
        let default = trunks
            .iter()
            .find(|t| t.config.default)
            .map(|t| self.network(t.name()))
            .or(fallback);
        let mut routes = Routes::new(default);
        for t in &trunks {
            for prefix in &t.config.prefixes {
                routes = routes.route(prefix, self.network(t.name()));
            }
        }
        routes
    }

    /// The voice network of the trunk named `name`.
    pub fn network(self: &Arc<Self>, name: &str) -> Arc<dyn VoiceNetwork> {
        Arc::new(TrunkNetwork {
            node: self.clone(),
            name: name.to_owned(),
        })
    }
}

/// One trunk as a voice network of the platform.
struct TrunkNetwork {
    node: Arc<SipNode>,
    name: String,
}

impl VoiceNetwork for TrunkNetwork {
    fn name(&self) -> &str {
        &self.name
    }

    fn carries_media(&self) -> bool {
        true
    }

    fn dial<'a>(&'a self, dial: &'a Dial) -> BoxFuture<'a, DialOutcome> {
        Box::pin(async move {
            match self.node.trunk(&self.name) {
                Some(trunk) => outbound::dial(&self.node, &trunk, dial).await,
                None => DialOutcome::Failed,
            }
        })
    }

    fn act<'a>(
        &'a self,
        callid: &'a str,
        action: &'a CallAction,
    ) -> BoxFuture<'a, Result<(), VoiceError>> {
        Box::pin(async move {
            self.node
                .act(callid, action)
                .await
                .map_err(|reason| VoiceError {
                    network: self.name.clone(),
                    reason,
                })
        })
    }
}
