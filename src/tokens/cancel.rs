//! Stopping CPU work whose request is gone: a blocking task cannot be aborted,
//! so its dropped future sets a flag the costly loops read ([`cancelled`]).
//! Until it stops, each task keeps a share of the request's ticket ([`held`]).

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

/// Runs `request` holding `ticket`, freed when the request and all its CPU
/// tasks are done, not when the request is dropped.
pub async fn holding<F: Future>(ticket: Ticket, request: F) -> F::Output {
    TICKET.scope(ticket, request).await
}

/// A share of the current request's ticket for a CPU task (None outside [`holding`]).
pub fn held() -> Option<Work> {
    TICKET.try_with(Ticket::work).ok()
}

/// Tasks inside a [`scope`] right now, for tests that wait for the pool to drain.
static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Dropped with the future that awaits the work: tells the work to stop.
struct Cancel(Arc<AtomicBool>);

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

/// The one way the crate runs CPU-bound work: on the blocking pool, stopped when
/// this future is dropped, holding the request's place till then. Panics pass on.
pub async fn cpu<T, F>(work: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let flag = Arc::new(AtomicBool::new(false));
    let _cancel = Cancel(flag.clone());
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
        assert!(ticket.enter(&places, 1));
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
            places.try_enter(2).is_none(),
            "the place was freed while its work ran"
        );
        go.send(()).unwrap();
        for _ in 0..6000 {
            if places.try_enter(2).is_some() {
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
