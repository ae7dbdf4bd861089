//! Starting the node's SIP side: the listeners (UDP and TCP on the listen address, TLS when
//! configured), the endpoint and its dialog layer, the task that takes the requests that
//! come in (a new INVITE to [`crate::inbound`], anything within a dialog to its dialog),
//! and the trunks, each resolved and registered when it asks to be.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rsipstack::EndpointBuilder;
use rsipstack::dialog::dialog_layer::DialogLayer;
use rsipstack::sip::prelude::HeadersExt;
use rsipstack::sip::{Method, StatusCode};
use rsipstack::transaction::transaction::Transaction;
use rsipstack::transport::TransportLayer;
use rsipstack::transport::tcp_listener::TcpListenerConnection;
use rsipstack::transport::tls::{TlsConfig, TlsListenerConnection};
use rsipstack::transport::udp::UdpConnection;
use tokio_util::sync::CancellationToken;

use crate::config::{NodeConfig, TrunkConfig};
use crate::media::{MediaStats, Pcm, PortPool};
use crate::node::{SipNode, StartError};
use crate::platform::Platform;
use crate::trunk::Trunk;
use crate::{cause, early_offer, inbound, registration};

impl SipNode {
    /// Starts listening on `config.listen` (UDP and TCP) and `config.tls_listen`, with the
    /// `trunks` given; calls that come in are offered to `platform`.
    pub async fn start(
        config: NodeConfig,
        trunks: Vec<TrunkConfig>,
        platform: Arc<dyn Platform>,
    ) -> Result<Arc<Self>, StartError> {
        let problems = config.problems();
        if !problems.is_empty() {
            return Err(StartError(problems.join("; ")));
        }
        let cancel = CancellationToken::new();
        let transports = TransportLayer::new(cancel.child_token());
        let udp = UdpConnection::create_connection(config.listen, None, Some(cancel.child_token()))
            .await
            .map_err(|e| StartError(format!("listen udp {}: {e}", config.listen)))?;
        let local = udp
            .get_addr()
            .get_socketaddr()
            .map_err(|e| StartError(format!("listen udp: {e}")))?;
        transports.add_transport(udp.into());
        let tcp = TcpListenerConnection::new(local, None)
            .await
            .map_err(|e| StartError(format!("listen tcp {local}: {e}")))?;
        transports.add_transport(tcp.into());
        if let (Some(at), Some(cert), Some(key)) =
            (config.tls_listen, &config.tls_cert, &config.tls_key)
        {
            let read = |path: &str| {
                std::fs::read(path).map_err(|e| StartError(format!("read {path}: {e}")))
            };
            let tls = TlsConfig {
                cert: Some(read(cert)?),
                key: Some(read(key)?),
                ..TlsConfig::default()
            };
            let listener = TlsListenerConnection::new(at, None, tls)
                .await
                .map_err(|e| StartError(format!("listen tls {at}: {e}")))?;
            transports.add_transport(listener.into());
        }
        let endpoint = EndpointBuilder::new()
            .with_user_agent(concat!("dialtone/", env!("CARGO_PKG_VERSION")))
            .with_cancel_token(cancel.child_token())
            .with_transport_layer(transports)
            .build();
        let incoming = endpoint
            .incoming_transactions()
            .map_err(|e| StartError(format!("endpoint: {e}")))?;
        let inner = endpoint.inner.clone();
        let dialogs = Arc::new(DialogLayer::new(inner.clone()));
        let rtp_ip = if config.listen.ip().is_loopback() {
            config.listen.ip()
        } else {
            IpAddr::from([0, 0, 0, 0])
        };
        let node = Arc::new(Self {
            ports: PortPool::new(rtp_ip, config.rtp_first, config.rtp_last),
            config,
            endpoint: inner,
            dialogs,
            stats: Arc::new(MediaStats::default()),
            platform,
            trunks: RwLock::new(Vec::new()),
            calls: Mutex::new(HashMap::new()),
            by_sip_call_id: Mutex::new(HashMap::new()),
            auth: crate::auth::AuthGuard::default(),
            local,
            beep: beep(),
            first_audio: crate::prompt::FirstAudio::default(),
            cancel,
        });
        let serving = node.cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = endpoint.serve() => {}
                () = serving.cancelled() => {}
            }
        });
        tokio::spawn(node.clone().dispatch(incoming));
        for trunk in trunks {
            node.add_trunk(trunk).await;
        }
        Ok(node)
    }

    /// Starts a trunk (resolves its host, registers when asked to).
    pub async fn add_trunk(self: &Arc<Self>, config: TrunkConfig) {
        let trunk = Arc::new(Trunk::new(config));
        trunk.resolve().await;
        let token = self.cancel.child_token();
        {
            let refresh = trunk.clone();
            let stop = token.clone();
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(60)) => refresh.resolve().await,
                        () = stop.cancelled() => break,
                    }
                }
            });
        }
        if trunk.config.register {
            tokio::spawn(registration::keep(
                self.clone(),
                trunk.clone(),
                token.clone(),
            ));
        }
        self.trunks
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push((trunk, token));
    }

    /// Takes requests as they come in.
    async fn dispatch(self: Arc<Self>, mut incoming: rsipstack::transaction::TransactionReceiver) {
        while let Some(mut tx) = incoming.recv().await {
            let node = self.clone();
            tokio::spawn(async move {
                if let Err(e) = node.take(&mut tx).await {
                    tracing::debug!(method = %tx.original.method, error = %e, "sip: request not handled");
                }
            });
        }
    }

    async fn take(self: Arc<Self>, tx: &mut Transaction) -> rsipstack::Result<()> {
        let in_dialog = tx
            .original
            .to_header()
            .ok()
            .and_then(|t| t.tag().ok().flatten())
            .is_some();
        match tx.original.method {
            Method::Invite if !in_dialog => inbound::invite(&self, tx).await,
            Method::Options if !in_dialog => {
                // Trunks keep their path alive with OPTIONS; strangers learn nothing.
                let source = inbound::source_ip(tx);
                if source.is_some_and(|ip| self.trunk_from(ip).is_some()) {
                    tx.reply(StatusCode::OK).await
                } else {
                    tx.reply(StatusCode::Forbidden).await
                }
            }
            Method::Ack | Method::Cancel => Ok(()),
            _ if in_dialog => {
                if tx.original.method == Method::Bye
                    && let Ok(id) = tx.original.call_id_header()
                    && let Some(call) = self.call_by_sip_id(id.value())
                {
                    let reason = tx.original.headers.iter().find_map(|h| match h {
                        rsipstack::sip::Header::Reason(r) => cause::cause_of_reason(r.value()),
                        _ => None,
                    });
                    *call.remote_cause.lock().unwrap_or_else(|p| p.into_inner()) = reason;
                }
                match self.dialogs.match_dialog(tx) {
                    Some(mut dialog) => {
                        if tx.original.method == Method::Invite
                            && !early_offer::ready(&dialog, tx).await?
                        {
                            return Ok(());
                        }
                        dialog.handle(tx).await
                    }
                    None => tx.reply(StatusCode::CallTransactionDoesNotExist).await,
                }
            }
            _ => tx.reply(StatusCode::MethodNotAllowed).await,
        }
    }
}

/// A beep: 400 ms of 1 kHz, before a voicemail.
fn beep() -> Pcm {
    (0..3200)
        .map(|i| {
            let t = i as f32 / 8000.0;
            ((2.0 * std::f32::consts::PI * 1000.0 * t).sin() * 8000.0) as i16
        })
        .collect::<Vec<_>>()
        .into()
}
