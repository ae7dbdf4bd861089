//! The HTTP/1.1 accept loop: axum's router on hyper connections, with the limits a public
//! server needs against slow or greedy clients (at most `--max-connections` open, and
//! `--max-connections-per-ip` from one address: a connection over either gets a 503 and is
//! closed at once, so the others are served; request headers must arrive within
//! `--header-timeout`; a body within `--body-timeout` of the request's start), each request
//! tagged with its client's address, and a graceful stop: no new connections, in-flight
//! requests finish (within [`STOP_GRACE`](crate::app::STOP_GRACE)).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use tokio::io::AsyncWriteExt;

use crate::http::client::{ClientAddr, Connections};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

/// Serves `router` on `listener` until `shutdown` resolves, then waits for open requests.
pub async fn serve(
    listener: TcpListener,
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
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (mut stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let client = peer.ip();
                let admitted = match connections.admit(client) {
                    Ok(admitted) => admitted,
                    Err(why) => {
                        tracing::debug!(%client, ?why, "connection refused: at its limit");
                        // Best effort, never waited for: the connection closes either way.
                        tokio::spawn(async move {
                            let busy = b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                            let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(busy)).await;
                        });
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let tagged = tower::ServiceExt::map_request(router.clone(), move |mut req: Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(ClientAddr(client));
                    req
                });
                let service = TowerToHyperService::new(tagged);
                let connection = builder.serve_connection(TokioIo::new(stream), service);
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    let _admitted = admitted;
                    // A client that goes away or times out ends its connection; nothing to do.
                    let _ = connection.await;
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    if tokio::time::timeout(crate::app::STOP_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still open at shutdown were cut off");
    }
    Ok(())
}
