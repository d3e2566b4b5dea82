//! Tests that need the process to themselves, in a binary apart from the
//! suite (`tests/suite/`):
//!
//! - `cancel` and `work` measure work in bytes tokenized, a counter per
//!   process ([`condense::tokens::tokenized_bytes`]): no other test may
//!   tokenize while they read it, so each holds [`alone`] for its run;
//! - `secret_logs` reads every log line of the process through a global
//!   subscriber (a thread-local one misses events whose callsite another
//!   thread registered first); its tests may share the process with each
//!   other ([`shared`]), not with the counted ones.

mod cancel;
mod secret_logs;
// The suite's stub upstream; only some of it is used here.
#[allow(dead_code)]
#[path = "../suite/support/stub.rs"]
mod stub;
mod work;

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static PROCESS: RwLock<()> = RwLock::const_new(());

/// The whole process, for a test that reads the per-process counters.
pub async fn alone() -> RwLockWriteGuard<'static, ()> {
    PROCESS.write().await
}

/// The whole process, from a synchronous test.
pub fn alone_blocking() -> RwLockWriteGuard<'static, ()> {
    PROCESS.blocking_write()
}

/// The process, shared with other tests that do not read its counters.
pub async fn shared() -> RwLockReadGuard<'static, ()> {
    PROCESS.read().await
}

/// [`shared`], from a synchronous test.
pub fn shared_blocking() -> RwLockReadGuard<'static, ()> {
    PROCESS.blocking_read()
}
