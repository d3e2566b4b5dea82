//! Stopping CPU work whose request is gone.
//!
//! Counting and compressing run on the blocking pool. When the request that
//! asked for the work times out (503) or its client disconnects (the
//! connection's watchdog drops it: `serve::conn`), the future awaiting the
//! work is dropped, but a blocking task cannot be aborted: it
//! would keep a core busy for nothing. So the task runs in a [`scope`] whose
//! flag the dropped future sets ([`Cancel`]), and the loops that cost time
//! (tokenizing each string, extracting each message) look at [`cancelled`]
//! and stop. What a cancelled task still returns is never seen: its
//! receiver is gone.
//!
//! Until it notices, the task still holds memory and a core, so the
//! request's place and memory must not be freed before it ends: the gates
//! run the request [`holding`] its ticket, and every CPU task it starts
//! counts as the ticket's work ([`held`]).

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::admission::{Ticket, Work};

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

tokio::task_local! {
    static TICKET: Ticket;
}

/// Runs `request` holding `ticket`, whose work every CPU task the request
/// starts counts as: what it holds is free when the request and all its
/// tasks are done, not when the request is dropped.
pub async fn holding<F: Future>(ticket: Ticket, request: F) -> F::Output {
    TICKET.scope(ticket, request).await
}

/// A share of the current request's ticket, for a CPU task it starts to
/// keep until the task ends (None outside [`holding`]).
pub fn held() -> Option<Work> {
    TICKET.try_with(Ticket::work).ok()
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

/// Runs CPU-bound work (tokenizing, extracting, hashing) on the blocking
/// pool, so it cannot stall the async workers; it stops early when this
/// future is dropped (a timeout, a client gone: the [`scope`]'s flag), and
/// the request's place stays taken until it has stopped ([`held`]). The one
/// way the crate runs CPU work off the async workers. A panic is passed on
/// (the HTTP layer's panic catcher answers it as a 500).
pub async fn cpu<T, F>(work: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (_cancel, flag) = Cancel::new();
    let place = held();
    let task = tokio::task::spawn_blocking(move || {
        let _place = place;
        scope(flag, work)
    });
    match task.await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("a blocking task was cancelled: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{held, holding};
    use crate::admission::{Overload, Ticket};

    #[tokio::test]
    async fn a_place_is_free_only_when_the_tasks_of_a_dropped_request_end() {
        let places = Overload::new(1);
        let ticket = Ticket::default();
        assert!(ticket.enter(&places));
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let request = holding(ticket, async move {
            let share = held().expect("inside `holding`");
            tokio::task::spawn_blocking(move || {
                let _share = share;
                // Work that has not yet looked at its flag.
                wait.recv().ok();
            })
            .await
        });
        // The request is dropped (its time limit) while its task still runs.
        assert!(
            tokio::time::timeout(Duration::from_millis(50), request)
                .await
                .is_err()
        );
        assert!(
            places.try_enter().is_none(),
            "the place was freed while its work ran"
        );
        go.send(()).unwrap();
        for _ in 0..6000 {
            if places.try_enter().is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the place was never freed");
    }

    #[test]
    fn outside_a_request_nothing_is_held() {
        assert!(held().is_none());
    }
}
