//! What the suite's modules share.

/// The in-process router with a chosen configuration, and request helpers.
pub mod common;
/// The real parts a test needs (PostgreSQL, the local LLM, the agent CLIs),
/// or a failure that says how to provide them.
pub mod live;
/// The condense binary as its own process.
pub mod process;
/// A strict reader of `GET /metrics`.
pub mod prometheus;
/// An HTTP relay that records each exchange it forwards.
pub mod recorder;
/// A TCP relay that counts and can be cut.
pub mod relay;
/// OpenAI Responses items: a Codex loop with settings and compaction items.
pub mod responses;
/// condense serving on a free port, in-process.
pub mod server;
/// A stub upstream for the faults a real one will not produce on demand.
pub mod stub;

/// Runs `f` to completion on the suite's current-thread runtime: how a
/// synchronous test (a property test) drives the async compression path
/// as it runs in production. Several test threads may block on it at once.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    static RUNTIME: std::sync::LazyLock<tokio::runtime::Runtime> = std::sync::LazyLock::new(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime")
    });
    RUNTIME.block_on(f)
}
