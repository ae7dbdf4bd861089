//! The networks SMS leave through: the simulated network (unless the operator turned it
//! off), and the SMPP connectors of the configuration file and of `/admin`, routed by
//! destination prefix. Connectors can be added and removed while the server runs.
//!
//! The voice networks calls are carried on, routed the same way ([`Networks::voice_for`]):
//! the SIP trunks of the node by prefix (and the default trunk), the simulated network for
//! the rest.
//!
//! An SMS keeps the network it was routed to when it was accepted (`sms.carrier`). While
//! that network runs, the SMS goes there; when it is gone (a connector removed), the SMS is
//! routed again, to connectors only: it waits, visible to the operator, until a connector
//! routes its destination, and is never handed to the simulated network, which would report
//! it delivered by a network that never took it.

use std::sync::{Arc, OnceLock, RwLock};

use dialtone_carrier::smpp::{CarrierEvent, Smpp, SmppConfig};
use dialtone_carrier::{Carrier, Routes, Simulated, VoiceNetwork};
use dialtone_sip::SipNode;
use tokio::sync::mpsc;

/// The name the simulated network carries SMS under.
pub(crate) const SIMULATED: &str = "simulated";

/// Where a connector's configuration comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A `[[smpp]]` table of the configuration file.
    File,
    /// `POST /admin/smpp` (stored in the database).
    Admin,
}

impl Source {
    /// The word shown by `/admin/smpp`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Admin => "admin",
        }
    }
}

struct Current {
    connectors: Vec<(Smpp, Source)>,
    /// Connectors by prefix, with the default connector, else the simulated network.
    routes: Routes,
    /// Connectors by prefix, with the default connector only.
    real_routes: Routes,
}

/// Every network, routed.
pub struct Networks {
    simulated: Option<Arc<Simulated>>,
    /// Voice networks by prefix (the simulated network for the rest, when it is on).
    voice: Routes<dyn VoiceNetwork>,
    events: mpsc::Sender<CarrierEvent>,
    current: RwLock<Current>,
    /// The node's SIP side, once started.
    sip: OnceLock<Arc<SipNode>>,
}

impl Networks {
    /// Starts the connectors of `configs` beside the simulated network (None: turned off);
    /// their receipts and inbound SMS arrive on the receiver.
    pub fn start(
        configs: &[(SmppConfig, Source)],
        simulated: Option<Arc<Simulated>>,
    ) -> (Arc<Self>, mpsc::Receiver<CarrierEvent>) {
        let (events, rx) = mpsc::channel(1024);
        let connectors: Vec<(Smpp, Source)> = configs
            .iter()
            .map(|(c, source)| (Smpp::start(c.clone(), events.clone()), *source))
            .collect();
        let current = current(connectors, simulated.as_ref());
        let voice = Routes::new(simulated.clone().map(|s| -> Arc<dyn VoiceNetwork> { s }));
        let networks = Arc::new(Self {
            voice,
            simulated,
            events,
            current: RwLock::new(current),
            sip: OnceLock::new(),
        });
        (networks, rx)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        self.current.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Current> {
        self.current.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The simulated network, when it is on.
    pub fn simulated(&self) -> Option<&Arc<Simulated>> {
        self.simulated.as_ref()
    }

    /// The node's SIP side, when it runs.
    pub fn sip(&self) -> Option<&Arc<SipNode>> {
        self.sip.get()
    }

    /// Routes calls through the node's SIP side from now on (set once).
    pub fn set_sip(&self, node: Arc<SipNode>) {
        let _ = self.sip.set(node);
    }

    /// The voice network that places calls to `to`; None when no network carries calls
    /// there.
    pub fn voice_for(&self, to: &str) -> Option<Arc<dyn VoiceNetwork>> {
        match self.sip.get() {
            Some(node) => {
                let fallback = self
                    .simulated
                    .clone()
                    .map(|s| -> Arc<dyn VoiceNetwork> { s });
                node.routes(fallback).carrier_for(to).cloned()
            }
            None => self.voice.carrier_for(to).cloned(),
        }
    }

    /// The voice network named `name` (the network a call leg is on): the simulated
    /// network, or a SIP trunk (which carries its calls on even when it was removed).
    pub fn voice(&self, name: &str) -> Option<Arc<dyn VoiceNetwork>> {
        match name {
            SIMULATED => self
                .simulated
                .clone()
                .map(|s| -> Arc<dyn VoiceNetwork> { s }),
            _ => self.sip.get().map(|node| node.network(name)),
        }
    }

    /// The name of the network a new SMS to `to` is routed to; None when no network
    /// carries that destination (no connector routes it and the simulated network is off).
    pub fn network_for(&self, to: &str) -> Option<String> {
        self.read()
            .routes
            .carrier_for(to)
            .map(|c| c.name().to_owned())
    }

    /// The running network named `name`.
    pub fn carrier(&self, name: &str) -> Option<Arc<dyn Carrier>> {
        if name == SIMULATED {
            return self.simulated.clone().map(|s| -> Arc<dyn Carrier> { s });
        }
        self.connector(name)
            .map(|c| -> Arc<dyn Carrier> { Arc::new(c) })
    }

    /// The connector that routes `to` now (its prefix, or the default connector); never the
    /// simulated network.
    pub fn connector_for(&self, to: &str) -> Option<String> {
        self.read()
            .real_routes
            .carrier_for(to)
            .map(|c| c.name().to_owned())
    }

    /// The running connectors and where each comes from.
    pub fn connectors(&self) -> Vec<(Smpp, Source)> {
        self.read().connectors.clone()
    }

    /// The running connector named `name`.
    pub fn connector(&self, name: &str) -> Option<Smpp> {
        self.read()
            .connectors
            .iter()
            .find(|(c, _)| c.config().name == name)
            .map(|(c, _)| c.clone())
    }

    /// The configurations running now, for validating one more.
    pub fn configs(&self) -> Vec<SmppConfig> {
        self.read()
            .connectors
            .iter()
            .map(|(c, _)| c.config().clone())
            .collect()
    }

    /// Starts one more connector and routes to it.
    pub fn add(&self, config: SmppConfig, source: Source) -> Smpp {
        let smpp = Smpp::start(config, self.events.clone());
        let mut guard = self.write();
        let mut connectors = std::mem::take(&mut guard.connectors);
        connectors.push((smpp.clone(), source));
        *guard = current(connectors, self.simulated.as_ref());
        smpp
    }

    /// Stops routing to the connector named `name`; the connector, if any (the caller
    /// unbinds it).
    pub fn remove(&self, name: &str) -> Option<Smpp> {
        let mut guard = self.write();
        let index = guard
            .connectors
            .iter()
            .position(|(c, _)| c.config().name == name)?;
        let mut connectors = std::mem::take(&mut guard.connectors);
        let (smpp, _) = connectors.remove(index);
        *guard = current(connectors, self.simulated.as_ref());
        Some(smpp)
    }
}

/// The routes of `connectors`: by prefix, then the default connector; the simulated network
/// for the rest when it is on.
fn current(connectors: Vec<(Smpp, Source)>, simulated: Option<&Arc<Simulated>>) -> Current {
    let default: Option<Arc<dyn Carrier>> = connectors
        .iter()
        .find(|(c, _)| c.config().default)
        .map(|(c, _)| -> Arc<dyn Carrier> { Arc::new(c.clone()) });
    let with_prefixes = |default: Option<Arc<dyn Carrier>>| {
        let mut routes = Routes::new(default);
        for (c, _) in &connectors {
            for prefix in &c.config().prefixes {
                routes = routes.route(prefix, Arc::new(c.clone()));
            }
        }
        routes
    };
    let real_routes = with_prefixes(default.clone());
    let fallback = default.or_else(|| simulated.cloned().map(|s| -> Arc<dyn Carrier> { s }));
    let routes = with_prefixes(fallback);
    Current {
        connectors,
        routes,
        real_routes,
    }
}
