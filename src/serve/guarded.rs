//! A response body that keeps something alive until it is sent (a
//! request's in-flight mark, its memory reservation).

use axum::body::Body;
use http_body_util::BodyExt;

/// `body`, holding `guard` until it is sent or dropped. The guard rides in
/// `map_err`'s closure because `map_err` keeps the body's size hint
/// (`map_frame` does not, and hyper would then send every answer chunked).
pub fn guarded<G: Send + 'static>(body: Body, guard: G) -> Body {
    Body::new(body.map_err(move |e| {
        let _held = &guard;
        e
    }))
}
