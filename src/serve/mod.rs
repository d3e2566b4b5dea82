//! The accept loop: HTTP/1 connections served with a cap on how many are
//! open and timeouts for clients that send nothing or stop reading.
//!
//! `axum::serve` has neither: silent clients hold connections (and file
//! descriptors) until even `/healthz` goes unanswered. Here a semaphore caps
//! open connections (past it, new ones wait in the kernel's accept queue),
//! each connection has a watchdog ([`conn`]), and each client address may
//! hold only part of the cap ([`peers`]).

mod activity;
mod conn;
mod fds;
mod guarded;
mod peers;
mod socket;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

pub use activity::{EndWithClient, ServeOptions};
pub use fds::{connection_budget, reserved_fds};
pub use guarded::guarded;
use peers::Peers;

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
    let peers = Peers::new(options.max_connections_per_address);
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
        // Turned away, it gives its slot back at once.
        let Some(counted) = peers.admit(peer.ip()) else {
            turn_away(stream, peer);
            continue;
        };
        let router = router.clone();
        let stop = stop_rx.clone();
        tokio::spawn(async move {
            conn::serve(stream, peer, router, options, stop).await;
            drop((counted, slot));
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Every slot back means every connection closed.
    let _all = slots.acquire_many(max as u32).await;
    Ok(())
}

/// What an address past its connection cap is told before the connection
/// closes: the problem the API answers when it sheds load.
const TOO_MANY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/problem+json\r\nretry-after: 1\r\nconnection: close\r\n\
content-length: 134\r\n\r\n\
{\"type\":\"urn:condense:problem:overloaded\",\"title\":\"Service overloaded\",\
\"status\":503,\"detail\":\"too many connections from this address\"}";

/// Answers a connection past its address's cap with [`TOO_MANY`] and
/// closes it, without reading its request: a head may never come, and
/// waiting for it is what the cap is there to stop. The write is one
/// non-blocking try into an empty socket buffer; a client that already
/// sent its request may see a reset instead (its unread bytes make the
/// close abortive), which tells it the same.
fn turn_away(stream: tokio::net::TcpStream, peer: std::net::SocketAddr) {
    tracing::debug!(%peer, "turning away a connection: its address holds its cap");
    let _ = stream.try_write(TOO_MANY);
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_turn_away_answer_is_well_formed() {
        let text = std::str::from_utf8(super::TOO_MANY).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let problem: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(problem["status"], 503);
    }
}
