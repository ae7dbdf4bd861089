//! The HTTP/1.1 accept loop: axum's router on hyper connections, over plain TCP and, beside
//! it, TLS (HTTPS), with the limits a public server needs against slow or greedy clients
//! (at most `--max-connections` open, and `--max-connections-per-ip` from one address, over
//! both listeners: a connection over either gets a 503 and is closed at once, so the others
//! are served; the TLS handshake and then the request headers must each arrive within
//! `--header-timeout`; a body within `--body-timeout` of the request's start), each request
//! tagged with its client's address, and a graceful stop: no new connections, in-flight
//! requests finish (within [`STOP_GRACE`]).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::http::client::{Admitted, ClientAddr, Connections, OverTls};

/// How long a stop waits for in-flight requests, then for the background tick in progress.
pub(crate) const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// What the accept loop serves.
pub(crate) struct Listeners {
    /// Plain HTTP.
    pub http: TcpListener,
    /// HTTPS, with the TLS settings it presents.
    pub https: Option<(TcpListener, TlsAcceptor)>,
}

/// Serves `router` on the listeners until `shutdown` resolves, then waits for open requests.
pub(crate) async fn serve(
    listeners: Listeners,
    router: Router,
    header_timeout: Duration,
    connections: Arc<Connections>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    let builder = Arc::new(builder);
    let graceful = GracefulShutdown::new();
    let Listeners { http, https } = listeners;
    tokio::pin!(shutdown);
    loop {
        let https_accept = async {
            match &https {
                Some((listener, acceptor)) => (listener.accept().await, Some(acceptor.clone())),
                None => std::future::pending().await,
            }
        };
        let (accepted, tls) = tokio::select! {
            accepted = http.accept() => (accepted, None),
            (accepted, tls) = https_accept => (accepted, tls),
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: wait instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(admitted) = admit(&connections, peer) else {
            refuse(stream, tls.is_some());
            continue;
        };
        let _ = stream.set_nodelay(true);
        let conn = Conn {
            router: router.clone(),
            builder: builder.clone(),
            watcher: graceful.watcher(),
            client: peer,
            admitted,
            over_tls: tls.is_some(),
        };
        match tls {
            None => {
                tokio::spawn(conn.serve(stream));
            }
            Some(acceptor) => {
                tokio::spawn(async move {
                    // A client that never finishes its handshake holds its place only this long.
                    match tokio::time::timeout(header_timeout, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => conn.serve(tls).await,
                        Ok(Err(e)) => {
                            tracing::debug!(client = %conn.client, error = %e, "TLS handshake failed")
                        }
                        Err(_) => tracing::debug!(client = %conn.client, "TLS handshake timed out"),
                    }
                });
            }
        }
    }
    drop(http);
    drop(https);
    if tokio::time::timeout(STOP_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still open at shutdown were cut off");
    }
    Ok(())
}

fn admit(connections: &Arc<Connections>, peer: SocketAddr) -> Option<Admitted> {
    match connections.admit(peer.ip()) {
        Ok(admitted) => Some(admitted),
        Err(why) => {
            tracing::debug!(client = %peer.ip(), ?why, "connection refused: at its limit");
            None
        }
    }
}

/// Turns a connection over the limits away: a plain one with a 503 (best effort, never
/// waited for), a TLS one by closing it (a 503 needs a handshake the limit exists to spare).
fn refuse(mut stream: TcpStream, tls: bool) {
    if tls {
        return;
    }
    tokio::spawn(async move {
        let busy = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(busy)).await;
    });
}

/// One admitted connection, before its protocol runs.
struct Conn {
    router: Router,
    builder: Arc<http1::Builder>,
    watcher: Watcher,
    client: SocketAddr,
    admitted: Admitted,
    over_tls: bool,
}

impl Conn {
    /// Serves HTTP/1.1 on `io` (TCP or TLS) until the client or the stop ends it.
    async fn serve<I>(self, io: I)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let Conn {
            router,
            builder,
            watcher,
            client,
            admitted,
            over_tls,
        } = self;
        let ip = client.ip();
        let tagged = tower::ServiceExt::map_request(
            router,
            move |mut req: Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ClientAddr(ip));
                if over_tls {
                    req.extensions_mut().insert(OverTls);
                }
                req
            },
        );
        let service = TowerToHyperService::new(tagged);
        let connection = watcher.watch(builder.serve_connection(TokioIo::new(io), service));
        let _admitted = admitted;
        // A client that goes away or times out ends its connection; nothing to do.
        let _ = connection.await;
    }
}
