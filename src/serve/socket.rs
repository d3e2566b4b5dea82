//! A connection's socket, shared by hyper (through [`Watched`], which
//! reports reads and stalled writes, and answers for hyper a head it
//! refuses: [`head`](super::head)) and the watchdog's peek ([`client_left`]);
//! driven through readiness, so neither takes the other's wake-up.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

use super::activity::{Activity, Left};
use super::head::{self, Replacement};

/// The socket, reporting reads and stalled writes to [`Activity`].
pub(super) struct Watched {
    inner: Arc<TcpStream>,
    activity: Arc<Activity>,
    /// condense's answer to a head hyper refused, being written.
    replacing: Option<Replacement>,
}

impl Watched {
    pub(super) fn new(inner: Arc<TcpStream>, activity: Arc<Activity>) -> Self {
        Self {
            inner,
            activity,
            replacing: None,
        }
    }

    fn track<T>(&self, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        self.activity.write_blocked(polled.is_pending());
        polled
    }

    /// When `first` (what hyper writes first) is hyper's own refusal of a
    /// head, writes condense's answer instead: then the bytes of hyper's it
    /// stands for, else None.
    fn replace(&mut self, cx: &mut Context<'_>, first: &[u8]) -> Poll<io::Result<Option<usize>>> {
        if self.replacing.is_none() {
            // With a request in flight, what hyper writes is its answer.
            if !head::is_hyper_431(first) || self.activity.in_flight() {
                return Poll::Ready(Ok(None));
            }
            self.replacing = Some(head::replacement(first.len()));
        }
        let Some(r) = &mut self.replacing else {
            return Poll::Ready(Ok(None));
        };
        while r.written < r.answer.len() {
            let rest = &r.answer[r.written..];
            match ready!(write_with(&self.inner, cx, |s| s.try_write(rest))) {
                Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Ok(n) => r.written += n,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        let stands_for = r.stands_for;
        self.replacing = None;
        Poll::Ready(Ok(Some(stands_for)))
    }
}

fn write_with(
    inner: &TcpStream,
    cx: &mut Context<'_>,
    write: impl Fn(&TcpStream) -> io::Result<usize>,
) -> Poll<io::Result<usize>> {
    loop {
        ready!(inner.poll_write_ready(cx))?;
        match write(inner) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            done => return Poll::Ready(done),
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.inner.poll_read_ready(cx))?;
            // hyper hands its buffer's whole spare room, uninitialised, on
            // every read (up to ~400 KB while a large body arrives): zeroing
            // it first (`initialize_unfilled`) cost 6% of a resent thread's
            // turn. The socket writes into it as it is, as tokio's own
            // `TcpStream` does.
            // SAFETY: `recv` only writes bytes into the slice; it never
            // de-initialises one.
            let unfilled = unsafe { buf.unfilled_mut() };
            let read = self.inner.try_io(Interest::READABLE, || {
                socket2::SockRef::from(&*self.inner).recv(unfilled)
            });
            match read {
                Ok(n) => {
                    // SAFETY: `recv` wrote the first `n` bytes of `unfilled`.
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                    if n > 0 {
                        self.activity.read_some();
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = match this.replace(cx, buf) {
            Poll::Ready(Ok(None)) => write_with(&this.inner, cx, |s| s.try_write(buf)),
            other => other.map_ok(|n| n.unwrap_or_default()),
        };
        this.track(polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let first = bufs.first().map_or(&[][..], |b| &b[..]);
        let polled = match this.replace(cx, first) {
            Poll::Ready(Ok(None)) => write_with(&this.inner, cx, |s| s.try_write_vectored(bufs)),
            other => other.map_ok(|n| n.unwrap_or_default()),
        };
        this.track(polled)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Writes go straight to the socket: nothing is buffered here.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let shut = socket2::SockRef::from(&*self.inner).shutdown(std::net::Shutdown::Write);
        Poll::Ready(match shut {
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
            other => other,
        })
    }
}

/// Completes when the client's side reads as closed, without taking a byte
/// (a pipelined request's byte means it is still there).
pub(super) async fn client_left(stream: &TcpStream) -> Left {
    let mut byte = [0u8; 1];
    loop {
        match stream.peek(&mut byte).await {
            Ok(0) => return Left::Closed,
            Err(_) => return Left::Reset,
            Ok(_) => tokio::time::sleep(std::time::Duration::from_secs(1)).await,
        }
    }
}

/// How long a client still sending may be drained after its answer: while
/// bytes keep coming, at most [`LINGER_MOST`]; a pause of [`LINGER_PAUSE`]
/// ends it.
const LINGER_PAUSE: std::time::Duration = std::time::Duration::from_secs(2);
const LINGER_MOST: std::time::Duration = std::time::Duration::from_secs(30);

/// Before closing a connection whose client may still be sending (a body
/// refused from its head, 413 or 503): its answer is written and the write
/// side shut, and what still arrives is read and dropped until the client
/// closes, pauses or takes too long. Closing with unread bytes would reset
/// the connection, and a client still uploading would see a broken pipe
/// instead of the status and `Retry-After` (lingering close, RFC 9112 §9.6).
pub(super) async fn linger(stream: &TcpStream) {
    let _ = socket2::SockRef::from(stream).shutdown(std::net::Shutdown::Write);
    let most = tokio::time::Instant::now() + LINGER_MOST;
    // Dropped as it comes: a small buffer, not a heap one per connection.
    let mut buf = [0u8; 8 * 1024];
    loop {
        let pause = tokio::time::Instant::now() + LINGER_PAUSE;
        tokio::select! {
            ready = stream.readable() => {
                if ready.is_err() {
                    return;
                }
                match stream.try_read(&mut buf) {
                    Ok(0) => return,
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(_) => return,
                }
            }
            () = tokio::time::sleep_until(pause.min(most)) => return,
        }
    }
}
