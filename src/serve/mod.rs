//! The accept loop: HTTP/1 with a cap on open connections (per address too:
//! [`peers`]) and a watchdog for clients that send nothing or stop reading
//! ([`conn`]). `axum::serve` has neither: silent clients would hold
//! descriptors until even `/healthz` goes unanswered.

mod activity;
mod conn;
mod fds;
mod guarded;
mod head;
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
pub use head::{HEAD_BYTES, HEAD_FIELDS};
use peers::Peers;

/// Serves until `shutdown` completes, then lets each connection finish its
/// request and returns when all are closed.
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
        let Some(counted) = peers.admit(peer.ip(), slots.available_permits()) else {
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

/// What an address past its connection cap is told.
const TOO_MANY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/problem+json\r\nretry-after: 1\r\nconnection: close\r\n\
content-length: 134\r\n\r\n\
{\"type\":\"urn:condense:problem:overloaded\",\"title\":\"Service overloaded\",\
\"status\":503,\"detail\":\"too many connections from this address\"}";

/// Answers [`TOO_MANY`] with one non-blocking write and closes, without
/// waiting for a head that may never come.
fn turn_away(stream: tokio::net::TcpStream, peer: std::net::SocketAddr) {
    tracing::debug!(%peer, "turning away a connection: its address holds its cap");
    let _ = stream.try_write(TOO_MANY);
}

/// A failed accept other than a vanished connection (`EMFILE`) pauses the
/// loop rather than let it spin.
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
