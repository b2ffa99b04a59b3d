//! Unknown query parameters refused: on every path the OpenAPI document ([`super::OPENAPI`])
//! describes, a parameter it does not list for that path is answered 400 naming it (a typo
//! such as `?gmae=q3` would otherwise return everything, unfiltered). The document is the
//! one list: an endpoint's parameters must be described there to be taken. Pages are checked
//! by their query structs (`deny_unknown_fields`).

use std::collections::HashMap;
use std::sync::LazyLock;

use axum::extract::{MatchedPath, Request};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::WebError;

/// Each documented path's query parameters (its `GET`'s and the path item's, `$ref`s
/// resolved).
static DOCUMENTED: LazyLock<HashMap<String, Vec<String>>> = LazyLock::new(|| {
    let doc: Value = serde_json::from_str(super::OPENAPI).unwrap_or_default();
    documented(&doc)
});

/// The query parameters of every path of an OpenAPI document.
pub fn documented(doc: &Value) -> HashMap<String, Vec<String>> {
    let resolve = |p: &Value| -> Option<Value> {
        match p.get("$ref").and_then(Value::as_str) {
            Some(r) => doc.pointer(r.strip_prefix('#')?).cloned(),
            None => Some(p.clone()),
        }
    };
    let mut out = HashMap::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return out;
    };
    for (path, item) in paths {
        let lists = [item.get("parameters"), item.pointer("/get/parameters")];
        let names = lists
            .into_iter()
            .flatten()
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(resolve)
            .filter(|p| p.get("in").and_then(Value::as_str) == Some("query"))
            .filter_map(|p| p.get("name").and_then(Value::as_str).map(str::to_string))
            .collect();
        out.insert(path.clone(), names);
    }
    out
}

/// The middleware: on a documented path (the route's, less the base path `base`), every
/// query parameter must be one the document lists.
pub(super) async fn known_only(base: std::sync::Arc<str>, req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map(|m| {
        m.as_str()
            .strip_prefix(&*base)
            .unwrap_or(m.as_str())
            .to_string()
    });
    let allowed = route
        .as_deref()
        .and_then(|r| DOCUMENTED.get(r).map(|a| (r, a)));
    if let (Some((route, allowed)), Some(query)) = (allowed, req.uri().query()) {
        for (k, _) in url::form_urlencoded::parse(query.as_bytes()) {
            if !allowed.iter().any(|a| *a == k) {
                let takes = if allowed.is_empty() {
                    "no parameters".to_string()
                } else {
                    allowed.join(", ")
                };
                let shown: String = k.chars().take(64).collect();
                return WebError(
                    StatusCode::BAD_REQUEST,
                    format!("unknown parameter {shown:?}: {route} takes {takes}"),
                )
                .into_response();
            }
        }
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_documents_parameters_are_read() {
        let d = &*super::DOCUMENTED;
        let servers = &d["/api/servers"];
        assert!(servers.contains(&"game".to_string()) && servers.contains(&"per_page".to_string()));
        assert!(
            d["/api/servers/{addr}"].is_empty(),
            "the path parameter is not a query one"
        );
        assert_eq!(d["/api/servers/{addr}/history"], ["since", "hours"]);
        assert!(d["/api/events"].contains(&"last_event_id".to_string()));
    }
}
