//! The ledger's table: a turn appended with its counterfactual, read back
//! as it was written, in both databases through one set of statements.

use sqlx::{Encode, Executor, FromRow, IntoArguments, Type};

use super::counterfactual::{Previous, without_condense};
use super::turn::{Bill, Recorded, Turn};
use crate::cache::CacheError;
use crate::cache::store::{Dialect, Store, secs};

/// A ledger row as the database holds it.
#[derive(Debug, sqlx::FromRow)]
pub struct Row {
    at: String,
    route: String,
    provider: String,
    model: Option<String>,
    sent_tokens: Option<i64>,
    forwarded_tokens: Option<i64>,
    input: i64,
    cache_read: i64,
    cache_write_5m: i64,
    cache_write_1h: i64,
    output: i64,
    reasoning: i64,
    dropped_items: i64,
    summary_call_tokens: Option<i64>,
    reason: Option<String>,
    cf_input: i64,
    cf_cache_read: i64,
    cf_cache_write_5m: i64,
    cf_cache_write_1h: i64,
}

const ROW: &str = "route, provider, model, sent_tokens, forwarded_tokens, input, cache_read, \
                   cache_write_5m, cache_write_1h, output, reasoning, dropped_items, \
                   summary_call_tokens, reason, cf_input, cf_cache_read, cf_cache_write_5m, \
                   cf_cache_write_1h";

fn n(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn u(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A name the table holds, for a `&'static str` field (unknown ones read as `other`).
fn known(v: &str, names: &[&'static str]) -> &'static str {
    names.iter().find(|n| **n == v).copied().unwrap_or("other")
}

/// The routes and providers a row may name.
const ROUTES: &[&str] = &["/v1/chat/completions", "/v1/responses", "/v1/messages"];
const PROVIDERS: &[&str] = &["anthropic", "openai", "responses"];

impl Row {
    fn recorded(self, conversation: &str) -> Recorded {
        Recorded {
            at: self.at,
            turn: Turn {
                conversation: conversation.to_string(),
                route: known(&self.route, ROUTES),
                provider: known(&self.provider, PROVIDERS),
                model: self.model,
                sent_tokens: self.sent_tokens.map(u),
                forwarded_tokens: self.forwarded_tokens.map(u),
                bill: Bill {
                    input: u(self.input),
                    cache_read: u(self.cache_read),
                    cache_write_5m: u(self.cache_write_5m),
                    cache_write_1h: u(self.cache_write_1h),
                    output: u(self.output),
                    reasoning: u(self.reasoning),
                },
                dropped_items: u(self.dropped_items),
                summary_call_tokens: self.summary_call_tokens.map(u),
                reason: self.reason,
            },
            without_condense: Bill {
                input: u(self.cf_input),
                cache_read: u(self.cf_cache_read),
                cache_write_5m: u(self.cf_cache_write_5m),
                cache_write_1h: u(self.cf_cache_write_1h),
                output: u(self.output),
                reasoning: u(self.reasoning),
            },
        }
    }
}

impl<DB: Dialect> Store<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    DB::Connection: sqlx::migrate::Migrate,
    crate::cache::CachedSummary: for<'r> FromRow<'r, DB::Row>,
    Row: for<'r> FromRow<'r, DB::Row>,
    Previous: for<'r> FromRow<'r, DB::Row>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB> + Type<DB>,
    for<'q> f64: Encode<'q, DB> + Type<DB>,
{
    /// Appends `turn` to its conversation's ledger, with its counterfactual
    /// from the conversation's last turn (one connection, two statements:
    /// a conversation's turns come one after another).
    pub async fn append_turn(&self, turn: &Turn) -> Result<(), CacheError> {
        let last = last_turn::<DB>();
        let insert = format!(
            "INSERT INTO ledger (conversation, at, {ROW}) VALUES ($1, {}, $2, $3, $4, $5, $6, \
                 $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)",
            DB::NOW
        );
        let opt = |v: Option<u64>| v.map(n);
        self.call(async {
            let mut conn = self.pool.acquire().await?;
            let previous: Option<Previous> = sqlx::query_as(&last)
                .bind(turn.conversation.as_str())
                .fetch_optional(&mut *conn)
                .await?;
            let (b, cf) = (&turn.bill, without_condense(turn, previous.as_ref()));
            sqlx::query(&insert)
                .bind(turn.conversation.as_str())
                .bind(turn.route)
                .bind(turn.provider)
                .bind(turn.model.as_deref())
                .bind(opt(turn.sent_tokens))
                .bind(opt(turn.forwarded_tokens))
                .bind(n(b.input))
                .bind(n(b.cache_read))
                .bind(n(b.cache_write_5m))
                .bind(n(b.cache_write_1h))
                .bind(n(b.output))
                .bind(n(b.reasoning))
                .bind(n(turn.dropped_items))
                .bind(opt(turn.summary_call_tokens))
                .bind(turn.reason.as_deref())
                .bind(n(cf.input))
                .bind(n(cf.cache_read))
                .bind(n(cf.cache_write_5m))
                .bind(n(cf.cache_write_1h))
                .execute(&mut *conn)
                .await
                .map(|_| ())
        })
        .await
    }

    /// Seconds since `conversation`'s latest turn was written, by the
    /// database's clock (so every replica reads one clock); None without one.
    pub async fn idle_secs(&self, conversation: &str) -> Result<Option<f64>, CacheError> {
        let sql = last_turn::<DB>();
        let q = sqlx::query_as::<_, Previous>(&sql).bind(conversation);
        let last = self.call(q.fetch_optional(&self.pool)).await?;
        Ok(last.map(|p| p.age_secs))
    }

    /// The unexpired turns of `conversation`, oldest first.
    pub async fn turns(&self, conversation: &str) -> Result<Vec<Recorded>, CacheError> {
        let sql = format!(
            "SELECT {} AS at, {ROW} FROM ledger \
             WHERE conversation = $1 AND at > {} - {} ORDER BY id",
            DB::rfc3339("at"),
            DB::NOW,
            DB::secs("$2")
        );
        let q = sqlx::query_as::<_, Row>(&sql)
            .bind(conversation)
            .bind(secs(self.opts.ttl));
        let rows = self.call(q.fetch_all(&self.pool)).await?;
        Ok(rows.into_iter().map(|r| r.recorded(conversation)).collect())
    }
}

/// The latest turn of the conversation bound as `$1`, as [`Previous`].
fn last_turn<DB: Dialect>() -> String {
    format!(
        "SELECT {} AS age_secs, cf_input + cf_cache_read + cf_cache_write_5m \
             + cf_cache_write_1h AS client_tokens \
         FROM ledger WHERE conversation = $1 ORDER BY id DESC LIMIT 1",
        DB::age_secs("at")
    )
}
