//! One connection, and a watchdog that closes it when its client keeps it
//! waiting (sending a head, idling, reading): hyper's one timer does not
//! tell these apart. A slow handler is the request time limit's.

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
            // In flight until the body's last chunk is written.
            Ok::<_, Infallible>(response.map(|body| super::guarded(body, guard)))
        }
    });
    // A client may half-close once its request is sent (RFC 9112 §9.6); then
    // the watchdog notices a client that leaves (`Activity::client_left`).
    // A head over the limits is refused by hyper, in words of ours (`head`);
    // hyper's own limit of header fields is `head::HEAD_FIELDS` (setting it
    // would put every request's headers on the heap).
    let conn = hyper::server::conn::http1::Builder::new()
        .half_close(true)
        .max_header_size(super::head::HEAD_BYTES)
        .serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    let mut stopping = false;
    loop {
        let deadline = activity.deadline(&options);
        tokio::select! {
            result = conn.as_mut() => {
                match result {
                    // The rest of a refused head is drained, so its answer is read.
                    Ok(()) => socket::linger(&stream).await,
                    Err(e) if e.is_parse_too_large() => socket::linger(&stream).await,
                    Err(e) => tracing::debug!(error = %e, %peer, "connection ended with an error"),
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

/// One request through the router, with its `ConnectInfo`.
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
