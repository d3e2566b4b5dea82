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
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Body;
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::ServeOptions;

pub async fn serve(
    stream: TcpStream,
    peer: std::net::SocketAddr,
    router: axum::Router,
    options: ServeOptions,
    mut stop: watch::Receiver<bool>,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: activity.clone(),
    });
    let tracked = activity.clone();
    let service = hyper::service::service_fn(move |req| {
        let guard = InFlight::begin(&tracked);
        let response = super::call(router.clone(), peer, req);
        async move {
            let response = response.await?;
            // The guard lives as long as the body: a streamed answer is in
            // flight until its last chunk is written.
            Ok::<_, Infallible>(response.map(|body| {
                Body::new(body.map_frame(move |frame| {
                    let _held = &guard;
                    frame
                }))
            }))
        }
    });
    // A client may shut its write side once its request is sent (RFC 9112
    // §9.6): without `half_close` hyper takes that end of input for the end
    // of the connection and drops the request unanswered. With it, the
    // answer is written and the connection closes after it. The watchdog
    // still covers such a client: it sends nothing more, so only the
    // request in flight and an unread answer keep the connection open.
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
struct Activity {
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
        match (waiting, unread) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn read_some(&self) {
        let mut s = self.lock();
        if s.in_flight == 0 && s.served && s.head_started.is_none() {
            s.head_started = Some(Instant::now());
            drop(s);
            self.changed.notify_one();
        }
    }

    fn write_blocked(&self, blocked: bool) {
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
        Self(activity.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.in_flight -= 1;
        if s.in_flight == 0 {
            s.served = true;
            s.idle_since = Instant::now();
            s.head_started = None;
            drop(s);
            self.0.changed.notify_one();
        }
    }
}

/// The socket, reporting reads and stalled writes to [`Activity`].
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.read_some();
        }
        polled
    }
}

impl Watched {
    fn track<T>(&self, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        self.activity.write_blocked(polled.is_pending());
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.track(polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.track(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
