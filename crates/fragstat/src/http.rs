//! HTTP master lists (feature `http`): DDNet's `servers.json`, the ETQW feed. A GET with a
//! timeout, no redirects (a list that moved is an error naming where to), and a size cap
//! enforced while the body arrives.

use std::time::Duration;

use crate::error::{Error, HttpSource, Limit, LimitKind};

/// The HTTP client a [`crate::Client`] keeps.
pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client, HttpSource> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("fragstat/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| -> HttpSource { std::sync::Arc::new(e) })
}

/// GETs `url` and returns the body, at most `max` bytes.
pub(crate) async fn fetch(
    client: &reqwest::Client,
    url: &str,
    max: usize,
) -> Result<Vec<u8>, Error> {
    // The client's error, when there is one, stays the source: `reason` is its one line.
    let http_err = |status: Option<u16>, reason: String, e: Option<reqwest::Error>| Error::Http {
        url: url.to_string(),
        status,
        reason,
        source: e.map(|e| -> HttpSource { std::sync::Arc::new(e) }),
    };
    let mut resp = client.get(url).send().await.map_err(|e| {
        let reason = if e.is_timeout() {
            "timed out".into()
        } else if e.is_builder() {
            "not a URL fragstat can fetch (http:// or https://)".into()
        } else {
            let mut reason = error_chain(&e);
            // A TLS handshake answered in plain text: the list is plain HTTP.
            if url.starts_with("https://")
                && (reason.contains("InvalidContentType") || reason.contains("corrupt message"))
            {
                let plain = url.replacen("https://", "http://", 1);
                reason.push_str(&format!(
                    " (the server does not speak TLS: if it serves plain HTTP, give {plain})"
                ));
            }
            reason
        };
        http_err(None, reason, Some(e))
    })?;
    let status = resp.status();
    if status.is_redirection() {
        let to = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .unwrap_or("?");
        return Err(http_err(
            Some(status.as_u16()),
            format!("redirected to {to} (redirects are not followed: give that URL)"),
            None,
        ));
    }
    if !status.is_success() {
        return Err(http_err(Some(status.as_u16()), status.to_string(), None));
    }
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Err(Error::Exceeded(Limit {
            kind: LimitKind::HttpBody,
            max: max as u64,
        }));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| {
        let reason = if e.is_timeout() {
            "timed out reading the body".into()
        } else {
            error_chain(&e)
        };
        http_err(Some(status.as_u16()), reason, Some(e))
    })? {
        if body.len() + chunk.len() > max {
            return Err(Error::Exceeded(Limit {
                kind: LimitKind::HttpBody,
                max: max as u64,
            }));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An error and its causes, one line (reqwest's own message is often just "error sending
/// request").
fn error_chain(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    // reqwest's own line repeats the URL, which the error already names: start below it.
    let (mut out, mut cur) = match e.source() {
        Some(s) if e.url().is_some() => (s.to_string(), s.source()),
        _ => (e.to_string(), e.source()),
    };
    while let Some(s) = cur {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cur = s.source();
    }
    out
}
