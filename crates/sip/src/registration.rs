//! Registration with a trunk that asks for it: REGISTER with the trunk's credentials at
//! start, refreshed at three quarters of what the trunk grants, with backoff after a
//! failure (rsipstack's keep-alive loop); the state is the trunk's health. Unregisters
//! (expires 0) when the trunk stops.

use std::sync::Arc;

use rsipstack::dialog::authenticate::Credential;
use rsipstack::dialog::registration::{RefreshOutcome, Registration};
use rsipstack::sip::Uri;
use tokio_util::sync::CancellationToken;

use crate::config::Transport;
use crate::node::SipNode;
use crate::trunk::Trunk;

/// Keeps `trunk` registered until `stop`.
pub(crate) async fn keep(node: Arc<SipNode>, trunk: Arc<Trunk>, stop: CancellationToken) {
    let (Some(username), Some(password)) = (&trunk.config.username, &trunk.config.password) else {
        return;
    };
    let scheme = match trunk.config.transport {
        Transport::Tls => "sips",
        Transport::Udp | Transport::Tcp => "sip",
    };
    let params = match trunk.config.transport {
        Transport::Udp => "",
        Transport::Tcp => ";transport=tcp",
        Transport::Tls => ";transport=tls",
    };
    let text = format!(
        "{scheme}:{}:{}{params}",
        trunk.config.host, trunk.config.port
    );
    let server = match Uri::try_from(text.as_str()) {
        Ok(uri) => uri,
        Err(e) => {
            trunk.failed(format!("register: {text}: {e}"));
            return;
        }
    };
    let credential = Credential {
        username: username.clone(),
        password: password.clone(),
        realm: trunk.config.realm.clone(),
        ..Credential::default()
    };
    let mut registration = Registration::new(node.endpoint.clone(), Some(credential));
    let health = trunk.clone();
    registration
        .keep_alive(
            server.clone(),
            trunk.config.register_secs,
            stop,
            move |outcome| {
                health.with_health(|h| match outcome {
                    RefreshOutcome::Registered(_) => {
                        h.registered = Some(true);
                        h.last_error = None;
                    }
                    RefreshOutcome::Rejected(resp) => {
                        h.registered = Some(false);
                        h.last_error = Some(format!("register: {}", resp.status_code));
                    }
                    RefreshOutcome::Failed(e) => {
                        h.registered = Some(false);
                        h.last_error = Some(format!("register: {e}"));
                    }
                });
            },
        )
        .await;
    // Stopped: take the binding back.
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        registration.register(server, Some(0)),
    )
    .await;
}
