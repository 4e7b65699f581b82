//! The one error type of the API: an HTTP status and a message, answered as
//! `{"error": "..."}`.

use axum::Json;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A request the server could not carry out; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    /// The HTTP status answered.
    pub status: StatusCode,
    /// What was wrong, for a person.
    pub message: String,
}

impl ApiError {
    /// 400: the request is malformed or asks for something impossible.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    /// 404: no such game or path.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::NOT_FOUND, message: message.into() }
    }

    /// 409: the game is not in a state that allows the request.
    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::CONFLICT, message: message.into() }
    }

    /// 422: well-formed JSON of the wrong shape.
    pub fn unprocessable(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::UNPROCESSABLE_ENTITY, message: message.into() }
    }

    /// 429: the client sends faster than the server's rate.
    pub fn too_many_requests(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::TOO_MANY_REQUESTS, message: message.into() }
    }

    /// 500: the engine failed (a network whose outputs are not numbers).
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, message: message.into() }
    }

    /// 503: the server is shutting down.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::SERVICE_UNAVAILABLE, message: message.into() }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(serde_json::json!({ "error": self.message }))).into_response()
    }
}

/// A body too large or unreadable keeps axum's status (413 for the limit).
impl From<BytesRejection> for ApiError {
    fn from(rejection: BytesRejection) -> ApiError {
        ApiError { status: rejection.status(), message: rejection.body_text() }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, message: rejection.body_text() }
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, message: rejection.body_text() }
    }
}

/// JSON bodies are parsed here rather than by axum's `Json` extractor, so
/// that an empty body means "all defaults", any content type is accepted
/// (`curl -d` sends a form type) and the status tells syntax (400) from
/// shape (422).
pub fn parse_json<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        let message = format!("request body: {e}");
        match e.classify() {
            serde_json::error::Category::Data => ApiError::unprocessable(message),
            _ => ApiError::bad_request(message),
        }
    })
}
