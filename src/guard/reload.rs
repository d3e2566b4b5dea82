//! Reloading the keys file on SIGHUP and every few seconds (a Kubernetes
//! Secret volume only rewrites the file). Its digest is compared, not its
//! mtime, which is coarse and not updated by every writer.

use std::sync::Arc;
use std::time::Duration;

/// Calls `reload` on each tick and SIGHUP; the handler is in place on return.
pub fn spawn(every: Duration, reload: impl Fn() + Send + Sync + 'static) {
    let reload = Arc::new(reload);
    let every = every.max(Duration::from_secs(1));
    #[cfg(unix)]
    let mut hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "SIGHUP cannot be caught; the API keys file is still re-read every few seconds");
            None
        }
    };
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            #[cfg(unix)]
            let signalled = async {
                match hangup.as_mut() {
                    Some(s) => s.recv().await,
                    None => std::future::pending().await,
                }
            };
            #[cfg(not(unix))]
            let signalled = std::future::pending::<Option<()>>();
            tokio::select! {
                _ = tick.tick() => {}
                Some(()) = signalled => tracing::info!("SIGHUP: reading the API keys file again"),
            }
            let reload = reload.clone();
            // A file read: off the async workers.
            let _ = tokio::task::spawn_blocking(move || reload()).await;
        }
    });
}
