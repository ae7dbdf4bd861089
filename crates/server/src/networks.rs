//! The networks SMS leave through: the simulated network, and the SMPP connectors of the
//! configuration file and of `/admin`, routed by destination prefix. Connectors can be added
//! and removed while the server runs; a submission in progress keeps the routes it began with.

use std::sync::{Arc, RwLock};

use dialtone_carrier::smpp::{CarrierEvent, Smpp, SmppConfig};
use dialtone_carrier::{Accepted, BoxFuture, Carrier, OutboundSms, Rejected, Routes, Simulated};
use dialtone_domain::sms::SmsStatus;
use tokio::sync::mpsc;

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
    routes: Arc<Routes>,
}

/// Every network, routed; the server's [`Carrier`].
pub struct Networks {
    simulated: Arc<Simulated>,
    events: mpsc::Sender<CarrierEvent>,
    current: RwLock<Current>,
}

impl Networks {
    /// Starts the connectors of `configs`; their receipts and inbound SMS arrive on the
    /// receiver.
    pub fn start(
        configs: &[(SmppConfig, Source)],
        simulated: Arc<Simulated>,
    ) -> (Arc<Self>, mpsc::Receiver<CarrierEvent>) {
        let (events, rx) = mpsc::channel(1024);
        let connectors: Vec<(Smpp, Source)> = configs
            .iter()
            .map(|(c, source)| (Smpp::start(c.clone(), events.clone()), *source))
            .collect();
        let routes = routes(&connectors, &simulated);
        let networks = Arc::new(Self {
            simulated,
            events,
            current: RwLock::new(Current { connectors, routes }),
        });
        (networks, rx)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        self.current.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Current> {
        self.current.write().unwrap_or_else(|p| p.into_inner())
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
        let mut current = self.write();
        current.connectors.push((smpp.clone(), source));
        current.routes = routes(&current.connectors, &self.simulated);
        smpp
    }

    /// Stops routing to the connector named `name` and unbinds it; the connector, if any.
    pub fn remove(&self, name: &str) -> Option<Smpp> {
        let mut current = self.write();
        let index = current
            .connectors
            .iter()
            .position(|(c, _)| c.config().name == name)?;
        let (smpp, _) = current.connectors.remove(index);
        current.routes = routes(&current.connectors, &self.simulated);
        Some(smpp)
    }

    fn routes(&self) -> Arc<Routes> {
        self.read().routes.clone()
    }
}

/// Prefix routes to the connectors; the default connector, else the simulated network, for
/// the rest.
fn routes(connectors: &[(Smpp, Source)], simulated: &Arc<Simulated>) -> Arc<Routes> {
    let default: Arc<dyn Carrier> = match connectors.iter().find(|(c, _)| c.config().default) {
        Some((c, _)) => Arc::new(c.clone()),
        None => simulated.clone(),
    };
    let mut routes = Routes::new(default);
    for (c, _) in connectors {
        for prefix in &c.config().prefixes {
            routes = routes.route(prefix, Arc::new(c.clone()));
        }
    }
    Arc::new(routes)
}

impl Carrier for Networks {
    fn name(&self) -> &str {
        "networks"
    }

    fn network_for(&self, to: &str) -> String {
        self.routes().network_for(to)
    }

    fn submit<'a>(&'a self, sms: &'a OutboundSms) -> BoxFuture<'a, Result<Accepted, Rejected>> {
        let routes = self.routes();
        Box::pin(async move { routes.submit(sms).await })
    }

    fn submit_now(&self, sms: &OutboundSms) -> Option<Result<Accepted, Rejected>> {
        self.routes().submit_now(sms)
    }

    fn next_status(&self, to: &str, current: SmsStatus) -> Option<(SmsStatus, i64)> {
        self.routes().next_status(to, current)
    }
}
