//! A response body that keeps something alive until it is sent (a
//! request's in-flight mark, its memory reservation), and says what the
//! body it wraps says of its length: `http-body-util`'s `map_frame` does
//! not, and hyper then sends every answer chunked instead of with a
//! `Content-Length`.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use hyper::body::{Frame, SizeHint};

/// `body`, holding `guard` until it is sent or dropped.
pub fn guarded<G: Send + Unpin + 'static>(body: Body, guard: G) -> Body {
    Body::new(Guarded {
        body,
        _guard: guard,
    })
}

struct Guarded<G> {
    body: Body,
    _guard: G,
}

impl<G: Send + Unpin + 'static> hyper::body::Body for Guarded<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        // `Body` is `Unpin`: no unsafe projection needed.
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
