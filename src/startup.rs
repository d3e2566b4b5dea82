//! Building and serving the application.

use std::net::SocketAddr;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::config::Config;
use crate::serve::{ServeOptions, connection_budget, serve};
use crate::state::AppState;

/// The bound listeners and their routers (tests bind port 0).
pub struct Application {
    main: Site,
    probe: Option<Site>,
    /// Its summaries written ahead are aborted when serving stops.
    compressor: std::sync::Arc<crate::compress::Compressor>,
}

/// One listening address and what it serves.
struct Site {
    listener: TcpListener,
    router: axum::Router,
    options: ServeOptions,
}

impl Site {
    async fn bind(
        addr: SocketAddr,
        router: axum::Router,
        options: ServeOptions,
    ) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        Ok(Self {
            listener,
            router,
            options,
        })
    }

    async fn serve(self, stop: impl Future<Output = ()>) -> std::io::Result<()> {
        serve(self.listener, self.router, self.options, stop).await
    }

    fn addr(&self) -> SocketAddr {
        let addr = self.listener.local_addr();
        addr.expect("a bound listener has an address")
    }
}

impl Application {
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        if let Some(url) = config.upstream.url() {
            tracing::info!(url = %crate::redact::redact_url(url), "upstream LLM configured");
        } else {
            tracing::info!(
                "no upstream LLM (CONDENSE_UPSTREAM_URL): the heuristic writes every summary"
            );
        }
        let state = AppState::connect(config).await?;
        let cache = state.summarizer.cache().clone();
        if !matches!(cache, crate::cache::Cache::Off) {
            tokio::spawn(report_cache(cache.clone()));
            let o = state.config.cache.options();
            crate::cache::spawn_pruner(
                cache,
                std::time::Duration::from_secs(600),
                o.ttl,
                o.max_rows,
            );
        }
        state.access.watch();
        state.access.warn_if_open(
            state.summarizer.upstream().is_some(),
            !state.config.proxy.api_key.is_empty() || !state.config.count.api_key.is_empty(),
        );
        let server = &state.config.server;
        let probe = match server.probe_listen {
            Some(addr) => {
                let router = crate::http::probe_router(state.clone());
                Some(Site::bind(addr, router, server.probe_serve_options()).await?)
            }
            None => None,
        };
        let serve = ServeOptions {
            max_connections: connection_budget(server.max_connections, state.config.reserved_fds()),
            ..server.serve_options()
        };
        let (listen, compressor) = (server.listen, state.compressor.clone());
        let main = Site::bind(listen, crate::http::router(state), serve).await?;

        Ok(Self {
            main,
            probe,
            compressor,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.main.addr()
    }

    /// The probe listener's address, when one is configured.
    pub fn probe_addr(&self) -> Option<SocketAddr> {
        self.probe.as_ref().map(Site::addr)
    }

    /// Serves until SIGTERM or Ctrl-C, then lets in-flight requests finish.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.run_until(shutdown_signal()).await
    }

    /// Serves until `stop` completes, then lets in-flight requests finish;
    /// summaries being written ahead are aborted at once.
    pub async fn run_until(self, stop: impl Future<Output = ()>) -> std::io::Result<()> {
        let (tx, rx) = tokio::sync::watch::channel(false);
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|stop| *stop).await;
        };
        let compressor = self.compressor;
        let signal = async {
            stop.await;
            let _ = tx.send(true);
            compressor.precomputer().shutdown().await;
        };
        let probe = async {
            match self.probe {
                Some(site) => site.serve(stopped(rx.clone())).await,
                None => Ok(()),
            }
        };
        let ((), main, probe) = tokio::join!(signal, self.main.serve(stopped(rx.clone())), probe);
        main.and(probe)
    }
}

/// Logs once whether the summary cache answers: the service starts either
/// way, and an operator must not learn it from latency graphs.
async fn report_cache(cache: crate::cache::Cache) {
    let backend = cache.backend();
    match cache.check().await {
        Ok(()) => tracing::info!(backend, "summary cache reachable at start-up"),
        Err(error) => tracing::warn!(
            backend,
            %error,
            "summary cache unreachable at start-up: requests are answered uncached, and \
             /readyz reports `cache: down`, until it answers"
        ),
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutdown signal received; finishing in-flight requests");
}
