//! Stopping CPU work whose request is gone.
//!
//! Counting and compressing run on the blocking pool. When the request that
//! asked for the work times out (503) or its client disconnects, the future
//! awaiting the work is dropped, but a blocking task cannot be aborted: it
//! would keep a core busy for nothing. So the task runs in a [`scope`] whose
//! flag the dropped future sets ([`Cancel`]), and the loops that cost time
//! (tokenizing each string, extracting each message) look at [`cancelled`]
//! and stop. What a cancelled task still returns is never seen: its
//! receiver is gone.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Tasks inside a [`scope`] right now, for tests that wait for the pool to drain.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Held by the future that awaits the work: dropping it (the request is
/// gone, or the work is done) tells the work to stop.
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A new flag, and the handle the blocking task checks.
    pub fn new() -> (Self, Arc<AtomicBool>) {
        let flag = Arc::new(AtomicBool::new(false));
        (Self(flag.clone()), flag)
    }
}

impl Drop for Cancel {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `work` with `flag` as this thread's cancellation flag.
pub fn scope<T>(flag: Arc<AtomicBool>, work: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            FLAG.with(|f| f.borrow_mut().take());
            RUNNING.fetch_sub(1, Ordering::Relaxed);
        }
    }
    RUNNING.fetch_add(1, Ordering::Relaxed);
    FLAG.with(|f| *f.borrow_mut() = Some(flag));
    let _reset = Reset;
    work()
}

/// The request this thread works for is gone: stop what costs time.
pub fn cancelled() -> bool {
    FLAG.with(|f| {
        f.borrow()
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    })
}

/// How many cancellable tasks are running now.
pub fn running() -> usize {
    RUNNING.load(Ordering::Relaxed)
}
