//! What a connection's watchdog (`conn`) knows of it, as the socket, the
//! requests in flight and their handlers report it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// How connections are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeOptions {
    /// Longest time a client may take to send a request head.
    pub header_read_timeout: Duration,
    /// Longest idle time between requests, or with a response unread.
    pub idle_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: usize,
    /// Most connections one client address may hold (0: no limit).
    pub max_connections_per_address: usize,
}

/// How a client's side of a connection was seen to close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Left {
    /// End of input: it left, or only half-closed.
    Closed,
    Reset,
}

/// How long a request may still take after its client's side closed (a
/// half-closed client waits for its answer; an abandoned request stops).
const LEFT_GRACE: Duration = Duration::from_secs(10);

/// What the watchdog knows of a connection.
pub(super) struct Activity {
    state: Mutex<State>,
    /// Wakes the watchdog when a deadline may have moved earlier.
    pub(super) changed: Notify,
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
    pub(super) fn new() -> Self {
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

    /// When the connection is to be closed if nothing changes.
    pub(super) fn deadline(&self, o: &ServeOptions) -> Option<Instant> {
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

    /// A request is in flight: its answer is not yet all written.
    pub(super) fn in_flight(&self) -> bool {
        self.lock().in_flight > 0
    }

    /// A request is in flight and its client has not been seen to leave.
    pub(super) fn watching(&self) -> bool {
        let s = self.lock();
        s.in_flight > 0 && s.left.is_none()
    }

    /// The client's side closed: true to close now, else the grace starts.
    pub(super) fn client_left(&self, how: Left) -> bool {
        let mut s = self.lock();
        if s.tied || how == Left::Reset {
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
pub(super) struct InFlight(Arc<Activity>);

impl InFlight {
    pub(super) fn begin(activity: &Arc<Activity>) -> Self {
        activity.lock().in_flight += 1;
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

/// In a request's extensions: after [`EndWithClient::tie`] (a proxied call,
/// long and billed) the connection closes as soon as its client's side reads
/// as closed, even a half-close (as nginx does; no SDK half-closes).
#[derive(Clone)]
pub struct EndWithClient(pub(super) Arc<Activity>);

impl EndWithClient {
    pub fn tie(&self) {
        self.0.lock().tied = true;
        self.0.changed.notify_one();
    }
}
