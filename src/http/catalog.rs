//! `GET /v1/models` and `GET /v1/profiles`: what the service knows.

use super::access::Access;
use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use serde::Serialize;

use crate::policy::Profile;
use crate::state::AppState;
use crate::tokens::ModelSpec;

super::access::routes! {
    Access::Api;
    get "/v1/models" => models,
    get "/v1/profiles" => profiles,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelsResponse {
    /// The model assumed when a request names none.
    pub default_model: String,
    pub models: Vec<ModelSpec>,
}

async fn models(State(app): State<AppState>) -> Json<ModelsResponse> {
    Json(ModelsResponse {
        default_model: app.config.models.default_model.clone(),
        models: app.models.models().to_vec(),
    })
}

#[derive(Serialize)]
pub struct ProfilesResponse {
    pub profiles: BTreeMap<String, Profile>,
}

async fn profiles(State(app): State<AppState>) -> Json<ProfilesResponse> {
    Json(ProfilesResponse {
        profiles: app.profiles.all().clone(),
    })
}
