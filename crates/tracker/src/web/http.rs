//! HTTP hygiene around every route: CORS when configured, compression, on the JSON API
//! a strong ETag with `If-None-Match` → 304 and a short `Cache-Control`, the API's keys and
//! rates ([`super::access`]), unknown query parameters refused ([`super::params`]), every API
//! error as JSON ([`json_errors`]), and on every answer (pages, API, errors) the security
//! headers ([`SECURITY_HEADERS`], [`content_security_policy`]).

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use sha2::{Digest, Sha256};
use tower_http::compression::CompressionLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};

use std::sync::Arc;

use super::access::Access;
use super::Site;

/// The router with its layers: ETag outside compression (so each encoding of a body has
/// its own strong ETag, as RFC 9110 asks of a strong validator), the JSON errors inside it
/// (they read the body before it is compressed), the keys and rates before any work, CORS
/// outermost (its preflight answered before anything else, and a 429 readable by a page).
pub(super) fn layers(router: Router, site: &Site, access: &Arc<Access>) -> Router {
    let api = site.url("/api/");
    let api_prefix: Arc<str> = Arc::from(api.as_str());
    let base: Arc<str> = Arc::from(site.base.as_str());
    let max_age = max_age(site.interval_secs);
    let (p1, p2, acc) = (api_prefix.clone(), api_prefix, access.clone());
    let router = router
        // A page or answer not ready within ANSWER_TIMEOUT (the database busy) is a 503,
        // before the HTTP guard's request timeout would close the connection unanswered.
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            ANSWER_TIMEOUT,
        ))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let base = base.clone();
                async move { super::params::known_only(base, req, next).await }
            },
        ))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let api = p1.clone();
                async move { json_errors(&api, req, next).await }
            },
        ))
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let (acc, api) = (acc.clone(), p2.clone());
                async move { super::access::limit(acc, api, req, next).await }
            },
        ))
        .layer(CompressionLayer::new())
        .layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let api = api.clone();
                async move { etag(&api, max_age, req, next).await }
            },
        ));
    let router = match cors(&site.cors_origins) {
        Some(c) => router.layer(c),
        None => router,
    };
    // Outermost: every answer of the router, its errors and CORS preflights included.
    router.layer(axum::middleware::from_fn(security_headers))
}

/// The headers every answer carries besides the [`content_security_policy`]: no MIME
/// sniffing, no framing (for browsers older than CSP's `frame-ancestors`), and the page's
/// address sent only to this site.
pub const SECURITY_HEADERS: [(&str, &str); 3] = [
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "same-origin"),
];

/// The `Content-Security-Policy` of every answer: nothing but the pages' own script (by its
/// SHA-256: it is inline), their inline styles (the names' colours are `style` attributes),
/// `fetch`/`EventSource` to this site, forms to this site, and no framing by any site.
pub fn content_security_policy() -> &'static str {
    static CSP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        use base64::Engine;
        let script = Sha256::digest(super::pages::BROWSER_JS.as_bytes());
        let script = base64::engine::general_purpose::STANDARD.encode(script);
        format!(
            "default-src 'none'; script-src 'sha256-{script}'; style-src 'unsafe-inline'; \
             img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; \
             frame-ancestors 'none'"
        )
    });
    &CSP
}

async fn security_headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let headers = res.headers_mut();
    for (name, value) in SECURITY_HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if let Ok(v) = HeaderValue::from_str(content_security_policy()) {
        headers.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    res
}

/// How long a handler may take before it is answered 503: under the HTTP guard's default
/// request timeout (10 s), so a busy tracker says so rather than dropping the connection.
/// (Streams, `/api/events`, are timed only until their first bytes.)
pub const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(8);

/// Seconds an API answer may be cached: half a round interval (a cached answer is at most
/// that much older than the newest round), at most 30.
pub fn max_age(interval_secs: f64) -> u64 {
    let half = (interval_secs / 2.0).floor();
    if half.is_finite() && half > 0.0 {
        half.min(30.0) as u64
    } else {
        0
    }
}

/// The CORS layer for these origins; `None` (no CORS headers at all) when there are none.
fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(
            origins
                .iter()
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect::<Vec<_>>(),
        )
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::HEAD])
            .allow_headers([
                header::IF_NONE_MATCH,
                header::AUTHORIZATION,
                header::HeaderName::from_static("x-api-key"),
                header::HeaderName::from_static("last-event-id"),
            ])
            .expose_headers([header::ETAG, header::RETRY_AFTER]),
    )
}

/// Error answers under `api` (4xx, 5xx) that are not JSON already become
/// `{"error": text, "status": code}` (the router's 404 and 405, an extractor's 400, a
/// timeout's 503, a handler's text): a client reads every API error the same way. A 500 says
/// only [`super::INTERNAL_ERROR`]. Headers (`Retry-After`, `WWW-Authenticate`) are kept.
pub(super) async fn json_errors(api: &str, req: Request, next: Next) -> Response {
    let wanted = req.uri().path().starts_with(api);
    let res = next.run(req).await;
    let status = res.status();
    let json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if !wanted || json || !(status.is_client_error() || status.is_server_error()) {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    // Error texts are short; a longer one is cut (never buffered without bound).
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let message = if status == StatusCode::INTERNAL_SERVER_ERROR {
        super::INTERNAL_ERROR.to_string()
    } else if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_lowercase()
    } else {
        text
    };
    for h in [header::CONTENT_LENGTH, header::CONTENT_ENCODING] {
        parts.headers.remove(h);
    }
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let body = serde_json::json!({ "error": message, "status": status.as_u16() });
    Response::from_parts(parts, Body::from(body.to_string()))
}

/// A strong ETag: the first 128 bits of the body's SHA-256, in hex.
pub fn etag_of(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// Whether an `If-None-Match` value matches `tag` (`*`, or any listed tag; the weak
/// comparison RFC 9110 asks for here, so `W/"x"` matches `"x"`).
fn none_match(header: &str, tag: &str) -> bool {
    header
        .split(',')
        .map(str::trim)
        .any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == tag)
}

async fn etag(api: &str, max_age: u64, req: Request, next: Next) -> Response {
    let wanted =
        matches!(*req.method(), Method::GET | Method::HEAD) && req.uri().path().starts_with(api);
    let inm = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let res = next.run(req).await;
    let json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    // Only whole JSON answers: a stream (Server-Sent Events) is never buffered here.
    if !wanted || !json || res.status() != StatusCode::OK {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    // The body is the API's own answer, bounded by its parameters' limits.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            let e = format!("reading an answer's body: {e}");
            return super::WebError(StatusCode::INTERNAL_SERVER_ERROR, e).into_response();
        }
    };
    let tag = etag_of(&bytes);
    if let Ok(v) = HeaderValue::from_str(&tag) {
        parts.headers.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!("public, max-age={max_age}")) {
        parts.headers.insert(header::CACHE_CONTROL, v);
    }
    if inm.as_deref().is_some_and(|h| none_match(h, &tag)) {
        parts.status = StatusCode::NOT_MODIFIED;
        for h in [
            header::CONTENT_LENGTH,
            header::CONTENT_TYPE,
            header::CONTENT_ENCODING,
        ] {
            parts.headers.remove(h);
        }
        return Response::from_parts(parts, Body::empty());
    }
    Response::from_parts(parts, Body::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_and_ages() {
        let t = etag_of(b"{}");
        assert_eq!(t.len(), 34);
        assert_ne!(t, etag_of(b"{ }"));
        assert!(none_match(&t, &t));
        assert!(none_match(&format!("\"x\", W/{t}"), &t));
        assert!(none_match("*", &t));
        assert!(!none_match("\"x\"", &t));
        assert_eq!(max_age(60.0), 30);
        assert_eq!(max_age(10.0), 5);
        assert_eq!(max_age(0.2), 0);
        assert_eq!(max_age(f64::NAN), 0);
    }
}
