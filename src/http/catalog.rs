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

#[derive(Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfilesResponse {
    #[schema(schema_with = profiles_by_name)]
    pub profiles: BTreeMap<String, Profile>,
}

/// A map that always holds `default` (`Profiles` keeps it).
fn profiles_by_name() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some("Profiles by name; `default` is always present."))
        .required("default")
        .additional_properties(Some(AdditionalProperties::RefOr(
            utoipa::openapi::Ref::from_schema_name("Profile").into(),
        )))
        .build()
}

async fn profiles(State(app): State<AppState>) -> Json<ProfilesResponse> {
    Json(ProfilesResponse {
        profiles: app.profiles.all().clone(),
    })
}
