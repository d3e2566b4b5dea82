//! Precompute: a summary never costs the agent a turn. From `precompute_at`
//! of the way to its trigger, the due turn's summary is written in the
//! background under its own ahead key, so a turn not yet due never finds it
//! and the forwarded prefix stays as it was.
//!
//! When due, the swap rule (Anthropic's background compaction): the summary
//! stands for exactly its prefix, newer messages verbatim, if that fits; not
//! ready, only a thread that would not fit waits.
//!
//! Jobs are bounded (a full semaphore skips, never queues), one per
//! conversation across replicas (a cache claim), hold memory from the
//! budget, and are aborted on shutdown; a failure never reaches a request.

use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use super::continuity::Anchor;
use super::plan::{self, Planned};
use super::{Compression, Mode, Ready, Setup};
use crate::admission::MemoryBudget;
use crate::cache::CacheError;
use crate::summarize::{SummaryService, Writer, ahead, cpu};

/// What precompute did on a request (the `precompute` field, the proxy's
/// `x-condense-precompute` header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Precompute {
    /// A summary is now being written ahead, started by this request.
    Started,
    /// One is already being written ahead for this conversation.
    Running,
    /// One was written ahead here and waits for its turn.
    Ready,
    /// This request carries a summary written ahead (the swap rule).
    Used,
    /// Due, the one written ahead not ready, the thread fits: went on without it.
    Pending,
    /// Every background slot (or the memory budget) was taken.
    Skipped,
}

impl Precompute {
    pub fn as_str(self) -> &'static str {
        match self {
            Precompute::Started => "started",
            Precompute::Running => "running",
            Precompute::Ready => "ready",
            Precompute::Used => "used",
            Precompute::Pending => "pending",
            Precompute::Skipped => "skipped",
        }
    }

    /// A summary is being written in the background (the API answers 202).
    pub fn accepted(self) -> bool {
        matches!(
            self,
            Precompute::Started | Precompute::Running | Precompute::Pending
        )
    }
}

/// The background jobs of one process (which conversation has one: the cache's claim).
pub struct Precomputer {
    slots: Arc<Semaphore>,
    tasks: Mutex<JoinSet<()>>,
    /// The requests' budget: a job holds its thread's parsed copy.
    memory: MemoryBudget,
    /// Set at shutdown: every job stops and gives its claim up.
    stop: watch::Sender<bool>,
}

impl Default for Precomputer {
    fn default() -> Self {
        Self::new(DEFAULT_CONCURRENCY, MemoryBudget::default())
    }
}

/// Half the upstream's default concurrency: due turns still find room.
pub const DEFAULT_CONCURRENCY: usize = 2;

/// Longest wait at shutdown for the jobs to give their claims up.
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Precomputer {
    /// At most `concurrency` jobs at once (0: none), holding `memory`.
    pub fn new(concurrency: usize, memory: MemoryBudget) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(concurrency)),
            tasks: Mutex::default(),
            memory,
            stop: watch::Sender::new(false),
        }
    }

    /// Stops every job (shutdown): a cut job stores nothing and gives its
    /// claims up (the job's, and its summary's), so the conversation's next turn (on another replica, or on
    /// this one restarted) writes the summary at once instead of waiting out
    /// the claim's lease. A release that hangs (a cache down) is not waited
    /// for past [`RELEASE_WAIT`]; the lease ends it then.
    pub async fn shutdown(&self) {
        self.stop.send_replace(true);
        let mut tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        let all = async { while tasks.join_next().await.is_some() {} };
        let _ = tokio::time::timeout(RELEASE_WAIT, all).await;
        // The claims its summaries' writes held, given up as they were cut.
        crate::cache::settle(RELEASE_WAIT).await;
    }

    /// Spawns `job` unless any replica holds this conversation's claim, or there is no room.
    pub(super) async fn start(&self, summarizer: Arc<SummaryService>, job: Job) -> Precompute {
        let metrics = summarizer.metrics().clone();
        let claim = match summarizer.cache().claim_lease(&ahead(&job.name)).await {
            Ok(Some(claim)) => claim,
            Ok(None) => return Precompute::Running,
            Err(e) => {
                tracing::warn!(error = %e, "precompute: the summary cache is unavailable");
                return Precompute::Skipped;
            }
        };
        // Dropped on the way out, the claim is given up at once.
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            metrics.precompute("skipped_busy");
            return Precompute::Skipped;
        };
        let Some(ticket) = self.memory.try_reserve(job.memory) else {
            metrics.precompute("skipped_memory");
            return Precompute::Skipped;
        };
        metrics.precompute("started");
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        // Finished jobs leave their results behind until reaped.
        while tasks.try_join_next().is_some() {}
        let mut stop = self.stop.subscribe();
        tasks.spawn(async move {
            let _held = (slot, ticket);
            let done = tokio::select! {
                done = claim.hold(write(&summarizer, job)) => Some(done),
                _ = stop.wait_for(|stop| *stop) => None,
            };
            claim.release().await;
            if let Some(done) = done {
                metrics.precompute(done);
            }
        });
        Precompute::Started
    }
}

/// What a background job needs, owned (the request is planned again as if due).
pub(super) struct Job {
    pub req: Compression,
    pub setup: Setup,
    pub anchor: Arc<Anchor>,
    /// The conversation since its last summary (see [`Anchor::since`]).
    pub name: String,
    /// What it holds in memory, for the budget.
    pub memory: u64,
}

/// The summary written ahead for the longest prefix of `anchor`'s history.
pub(super) async fn ready(
    summarizer: &SummaryService,
    anchor: &Anchor,
) -> Result<Option<Ready>, CacheError> {
    let found = summarizer.find(anchor.hashes(), true).await?;
    Ok(found.and_then(|entry| {
        Some(Ready {
            cut: anchor.cut(&entry)?,
            entry,
        })
    }))
}

/// One job, under its claim: writes the summary a due compression would
/// write now, under its ahead key. Returns the `condense_precompute_jobs`
/// outcome: `written`, `found`, `nothing` or `failed`.
async fn write(summarizer: &SummaryService, job: Job) -> &'static str {
    let Job {
        req,
        mut setup,
        anchor,
        ..
    } = job;
    let ready = match ready(summarizer, &anchor).await {
        Ok(ready) => ready,
        Err(e) => {
            tracing::warn!(error = %e, "precompute: the summary cache is unavailable");
            return "failed";
        }
    };
    setup.mode = Mode::Ahead { ready };
    let plan = match cpu(move || plan::plan(req, setup)).await {
        Ok(Planned::Pending(plan)) if plan.ready.is_some() => return "found",
        Ok(Planned::Pending(plan)) => plan,
        Ok(Planned::Done(..)) => return "nothing",
        Err(e) => {
            tracing::warn!(error = %e, "precompute: planning failed");
            return "failed";
        }
    };
    let Some(mut request) = plan
        .job
        .filter(|j| matches!(j.settings.writer, Writer::Llm(_) | Writer::Hybrid(_)))
    else {
        return "nothing";
    };
    // A failure writes no heuristic stand-in: the due turn decides then.
    request.settings.fallback = false;
    let request = request.written_ahead(anchor.index(plan.cut));
    let written = summarizer.write(&request).await;
    if let Some(u) = written.as_ref().ok().and_then(|w| w.usage) {
        let tokens = u.prompt_tokens + u.completion_tokens;
        summarizer.metrics().summary_call_tokens("ahead", tokens);
    }
    match written {
        Ok(w) if w.warnings.is_empty() => "written",
        Ok(_) => "failed",
        Err(e) => {
            tracing::warn!(error = %e, "precompute: the upstream summary failed");
            "failed"
        }
    }
}
