//! One connection: hyper's HTTP/1 state machine, and a watchdog that closes
//! the connection when its client keeps it waiting.
//!
//! hyper's one timer, `header_read_timeout`, also runs while a kept-alive
//! connection idles, and never while a response waits for a client that
//! stopped reading. The watchdog gives a limit for each (sending a head,
//! idling, reading), from what it sees: bytes read and written, and requests
//! in flight. It never cuts a slow handler (the request time limit does).

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

use super::activity::{Activity, EndWithClient, InFlight, ServeOptions};
use super::socket::{self, Watched};

pub async fn serve(
    stream: TcpStream,
    peer: std::net::SocketAddr,
    router: axum::Router,
    options: ServeOptions,
    mut stop: watch::Receiver<bool>,
) {
    let activity = Arc::new(Activity::new());
    let stream = Arc::new(stream);
    let io = TokioIo::new(Watched::new(stream.clone(), activity.clone()));
    let tracked = activity.clone();
    let service = hyper::service::service_fn(move |mut req: hyper::Request<_>| {
        let guard = InFlight::begin(&tracked);
        req.extensions_mut().insert(EndWithClient(tracked.clone()));
        let response = call(router.clone(), peer, req);
        async move {
            let response = response.await?;
            // The guard lives as long as the body: a streamed answer is in
            // flight until its last chunk is written.
            Ok::<_, Infallible>(response.map(|body| super::guarded(body, guard)))
        }
    });
    // A client may shut its write side once its request is sent (RFC 9112
    // §9.6): without `half_close` hyper takes that for the end of the
    // connection and drops the request unanswered. The price: hyper no longer
    // notices a client that leaves mid-request, so the watchdog does (see
    // `Activity::client_left`).
    let conn = hyper::server::conn::http1::Builder::new()
        .half_close(true)
        .serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    let mut stopping = false;
    loop {
        let deadline = activity.deadline(&options);
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, %peer, "connection ended with an error");
                }
                break;
            }
            () = sleep_until(deadline) => {
                if activity.deadline(&options).is_some_and(|d| d <= Instant::now()) {
                    tracing::debug!(%peer, "closing a connection whose client kept it waiting");
                    break;
                }
            }
            () = activity.changed.notified() => {}
            left = socket::client_left(&stream), if activity.watching() => {
                if activity.client_left(left) {
                    tracing::debug!(%peer, "the client left a request in flight; closing");
                    break;
                }
            }
            _ = stop.changed(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
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
