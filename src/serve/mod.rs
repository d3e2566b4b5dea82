//! The accept loop: HTTP/1 connections served with a cap on how many are
//! open and timeouts for clients that send nothing or stop reading.
//!
//! `axum::serve` has neither: a client that opens a connection and stays
//! silent holds it (and a file descriptor) forever, and enough of them
//! exhaust the process's descriptors, after which even `/healthz` goes
//! unanswered. Here a semaphore caps open connections: past the cap, new
//! ones wait in the kernel's accept queue until one closes. Each
//! connection has a watchdog ([`conn`]) that closes it when its client is
//! too slow to send a request head or to read a response, or idles too
//! long between requests.

mod conn;
mod fds;

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

pub use fds::connection_budget;

/// How connections are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeOptions {
    /// Longest time a client may take to send a request head: from the
    /// connection's start for the first request, from the first byte for
    /// later ones.
    pub header_read_timeout: Duration,
    /// Longest silence of a kept-alive connection between requests, and
    /// longest time a client may leave a response unread.
    pub idle_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `shutdown` completes, then stops
/// accepting, lets each connection finish the request it is serving (idle
/// ones close at once) and returns when all are closed.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    // `acquire_many` counts in u32.
    let max = options.max_connections.clamp(1, u32::MAX as usize >> 3);
    let slots = Arc::new(Semaphore::new(max));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // A slot first, then a connection: past the cap the kernel holds
        // new connections in the accept queue instead of us holding them.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let router = router.clone();
        let stop = stop_rx.clone();
        tokio::spawn(async move {
            conn::serve(stream, peer, router, options, stop).await;
            drop(slot);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Every slot back means every connection closed.
    let _all = slots.acquire_many(max as u32).await;
    Ok(())
}

/// A failed accept: a connection that went away before we took it is
/// skipped; anything else (out of descriptors: `EMFILE`) is logged and
/// retried after a pause, so the loop does not spin while the process
/// is short of descriptors.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind as K;
    if matches!(
        e.kind(),
        K::ConnectionAborted | K::ConnectionReset | K::ConnectionRefused
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// One request as hyper hands it over, through the router: the peer
/// address in request extensions (`ConnectInfo`, as `axum::serve` gives it
/// when asked), the body boxed.
fn call(
    router: axum::Router,
    peer: std::net::SocketAddr,
    req: hyper::Request<hyper::body::Incoming>,
) -> impl Future<Output = Result<axum::response::Response, Infallible>> + Send {
    use tower::ServiceExt;
    let mut req = req.map(axum::body::Body::new);
    req.extensions_mut()
        .insert(axum::extract::ConnectInfo(peer));
    router.oneshot(req)
}
