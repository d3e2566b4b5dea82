//! `GET /v1/conversations/{id}`: a proxied conversation's ledger, what the
//! provider billed turn by turn and what it would have billed without
//! condense (`proxy::Ledger`).

use axum::Json;
use axum::extract::{Path, State};

use super::access::Access;
use crate::error::{ApiError, Result};
use crate::proxy::Ledger;
use crate::state::AppState;

super::access::routes! {
    Access::Api;
    get "/v1/conversations/{id}" => ledger,
}

/// A conversation's name is 32 lowercase hex digits (`proxy::conversation`).
fn well_formed(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

async fn ledger(State(app): State<AppState>, Path(id): Path<String>) -> Result<Json<Ledger>> {
    if !well_formed(&id) {
        return Err(ApiError::MalformedPath(
            "id",
            "a conversation id is 32 lowercase hex digits, as `x-condense-conversation` gives it",
        ));
    }
    if !app.proxy.keeps_ledger() {
        return Err(ApiError::ProxyDisabled(
            "the ledger is off: it is kept with the summaries, and the summary cache is off \
             (CONDENSE_DATABASE_URL=off)"
                .into(),
        ));
    }
    let ledger = app.proxy.ledger(&id).await.map_err(|e| {
        ApiError::Internal(anyhow::Error::new(e).context("reading the conversation's ledger"))
    })?;
    ledger
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("/v1/conversations/{id}")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_proxys_names_are_well_formed() {
        assert!(super::well_formed("0123456789abcdef0123456789abcdef"));
        for bad in [
            "",
            "0123456789abcdef",
            "0123456789ABCDEF0123456789abcdef",
            "0123456789abcdef0123456789abcdeg",
            "0123456789abcdef0123456789abcdef0",
        ] {
            assert!(!super::well_formed(bad), "{bad}");
        }
    }
}
