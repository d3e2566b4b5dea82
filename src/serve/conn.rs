//! One connection: hyper's HTTP/1 state machine, and a watchdog that closes
//! the connection when its client keeps it waiting.
//!
//! hyper 1.x has one timer of its own, `header_read_timeout`, and it starts
//! whenever the connection waits for a request head, including the wait of
//! an idle kept-alive connection: it cannot give a short limit for sending a
//! head and a longer one for idling between requests, and it never fires
//! while a response waits for a client that stopped reading. The watchdog
//! gives all three, from what it sees: bytes read and written (the socket is
//! wrapped) and requests in flight (each one holds a guard until its
//! response body is done). It closes a connection only while no request is
//! being served or while the client leaves a response unread, so it never
//! cuts a slow handler (the request time limit does that, with a 503).

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::ServeOptions;
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
        let response = super::call(router.clone(), peer, req);
        async move {
            let response = response.await?;
            // The guard lives as long as the body: a streamed answer is in
            // flight until its last chunk is written.
            Ok::<_, Infallible>(response.map(|body| super::guarded(body, guard)))
        }
    });
    // A client may shut its write side once its request is sent (RFC 9112
    // §9.6): without `half_close` hyper takes that end of input for the end
    // of the connection and drops the request unanswered. With it, the
    // answer is written and the connection closes after it. The watchdog
    // still covers such a client: it sends nothing more, so only the
    // request in flight and an unread answer keep the connection open.
    // The price: hyper no longer notices a client that leaves mid-request,
    // so the watchdog does: a request whose client's side closes ends at
    // once when it is tied to its client ([`EndWithClient`]: a proxied
    // provider call), or when its client's side was reset; any other gets
    // [`LEFT_GRACE`] to answer (a client that only half-closed gets a quick
    // answer), then ends, and its work stops.
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

/// What the watchdog knows of a connection.
/// How long a request whose client's side closed may still take to answer
/// (see `serve`): a half-closed client's quick request is answered, an
/// abandoned one's work stops this long after its client left rather than
/// at the request time limit.
pub const LEFT_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

pub(super) struct Activity {
    state: Mutex<State>,
    /// Wakes the watchdog when a deadline may have moved earlier.
    changed: Notify,
}

struct State {
    accepted: Instant,
    /// Requests whose response is not yet fully written.
    in_flight: usize,
    /// A request has been answered: the connection is kept alive.
    served: bool,
    /// When the last response was done.
    idle_since: Instant,
    /// First byte of the next request head, read while idle.
    head_started: Option<Instant>,
    /// Since when a write has been waiting for the client to read.
    write_blocked: Option<Instant>,
    /// The request in flight ends when its client leaves ([`EndWithClient`]).
    tied: bool,
    /// When the client's side was seen closed while a request was in flight.
    left: Option<Instant>,
}

impl Activity {
    fn new() -> Self {
        let now = Instant::now();
        Self {
            state: Mutex::new(State {
                accepted: now,
                in_flight: 0,
                served: false,
                idle_since: now,
                head_started: None,
                write_blocked: None,
                tied: false,
                left: None,
            }),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// When the connection is to be closed if nothing changes; `None`
    /// while a request is served and its response is being read.
    fn deadline(&self, o: &ServeOptions) -> Option<Instant> {
        let s = self.lock();
        let waiting = (s.in_flight == 0).then(|| match (s.served, s.head_started) {
            (false, _) => s.accepted + o.header_read_timeout,
            (true, Some(first_byte)) => first_byte + o.header_read_timeout,
            (true, None) => s.idle_since + o.idle_timeout,
        });
        let unread = s.write_blocked.map(|since| since + o.idle_timeout);
        let left = s
            .left
            .filter(|_| s.in_flight > 0)
            .map(|since| since + LEFT_GRACE);
        [waiting, unread, left].into_iter().flatten().min()
    }

    /// A request is in flight and its client has not been seen to leave.
    fn watching(&self) -> bool {
        let s = self.lock();
        s.in_flight > 0 && s.left.is_none()
    }

    /// The client's side closed: true when the connection is to close now
    /// (a tied request, a reset), else the grace starts.
    fn client_left(&self, how: socket::Left) -> bool {
        let mut s = self.lock();
        if s.tied || how == socket::Left::Reset {
            return true;
        }
        s.left = Some(Instant::now());
        drop(s);
        self.changed.notify_one();
        false
    }

    pub(super) fn read_some(&self) {
        let mut s = self.lock();
        if s.in_flight == 0 && s.served && s.head_started.is_none() {
            s.head_started = Some(Instant::now());
            drop(s);
            self.changed.notify_one();
        }
    }

    pub(super) fn write_blocked(&self, blocked: bool) {
        let mut s = self.lock();
        match (blocked, s.write_blocked) {
            (true, None) => {
                s.write_blocked = Some(Instant::now());
                drop(s);
                self.changed.notify_one();
            }
            (false, Some(_)) => s.write_blocked = None,
            _ => {}
        }
    }
}

/// Held by a request from its head to the end of its response.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn begin(activity: &Arc<Activity>) -> Self {
        activity.lock().in_flight += 1;
        // The watchdog looks at what it watches anew: a request in flight
        // is watched for its client leaving.
        activity.changed.notify_one();
        Self(activity.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.in_flight -= 1;
        if s.in_flight == 0 {
            s.served = true;
            s.tied = false;
            s.idle_since = Instant::now();
            s.head_started = None;
            drop(s);
            self.0.changed.notify_one();
        }
    }
}

/// In a request's extensions: the handler of a request whose work is worth
/// ending when its client leaves (a proxied provider call, which may run
/// for minutes and is billed) calls [`EndWithClient::tie`], and from then
/// on the connection is closed as soon as its client's side reads as
/// closed, dropping the request and whatever it awaits. Others are
/// answered even after their client shut its write side.
///
/// TCP cannot tell a client that left from one that only half-closed: a
/// tied request is ended in both cases, as a reverse proxy ends its
/// upstream call (nginx's default). No SDK half-closes.
#[derive(Clone)]
pub struct EndWithClient(Arc<Activity>);

impl EndWithClient {
    pub fn tie(&self) {
        self.0.lock().tied = true;
        self.0.changed.notify_one();
    }
}
