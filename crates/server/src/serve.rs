//! The HTTP/1.1 accept loop: axum's router on hyper connections, with the limits a public
//! server needs against slow clients (request headers must arrive within
//! `--header-timeout`; a body that stalls is cut off by the router's body timeout), and a
//! graceful stop: no new connections, in-flight requests finish (within
//! [`STOP_GRACE`](crate::app::STOP_GRACE)).

use std::future::Future;
use std::time::Duration;

use axum::Router;
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
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let service = TowerToHyperService::new(router.clone());
                let connection = builder.serve_connection(TokioIo::new(stream), service);
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
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
