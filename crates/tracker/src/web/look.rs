//! The site's small files: its icon (`/favicon.svg`, cached for a long time) and
//! `/robots.txt`, which keeps crawlers on the pages (the browser, server and player pages)
//! and off what only multiplies them or is not for them: every address with a query string
//! (the browser's sorts and filters, `/players?q=`, `?hours=`), the API, the metrics, the
//! feeds, banners and widgets.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::{AppState, Site};

/// The site's icon (`assets/favicon.svg`).
pub const FAVICON: &str = include_str!("../../assets/favicon.svg");

/// How long a browser may keep the icon: 30 days (it changes with a release, if ever).
pub const FAVICON_MAX_AGE: u64 = 30 * 24 * 3600;

/// `/favicon.svg`.
pub(super) async fn favicon() -> Response {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml".to_string()),
            (
                header::CACHE_CONTROL,
                format!("public, max-age={FAVICON_MAX_AGE}"),
            ),
            (header::ETAG, super::etag_of(FAVICON.as_bytes())),
        ],
        FAVICON,
    )
        .into_response()
}

/// The `robots.txt` of a site under its base path. (Crawlers read `/robots.txt` at the
/// host's root only: under a base path, the proxy's root should serve these lines.)
pub fn robots(site: &Site) -> String {
    let b = &site.base;
    format!(
        "User-agent: *\n\
         Disallow: {b}/*?\n\
         Disallow: {b}/api/\n\
         Disallow: {b}/metrics\n\
         Disallow: {b}/healthz\n\
         Disallow: {b}/*/feed.atom\n\
         Disallow: {b}/*/banner.\n\
         Disallow: {b}/*/widget\n\
         Allow: {b}/\n"
    )
}

/// `/robots.txt`.
pub(super) async fn robots_txt(State(st): State<AppState>) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                "text/plain; charset=utf-8".to_string(),
            ),
            (header::CACHE_CONTROL, "public, max-age=86400".to_string()),
        ],
        robots(&st.site),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under RFC 9309's matching (the longest rule wins, `*` any characters): query
    /// variants, the API and the embeds are off limits; the pages are not.
    #[test]
    fn robots_keep_crawlers_off_query_variants() {
        let site = Site::default();
        let txt = robots(&site);
        let rules: Vec<(bool, String)> = txt
            .lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(": ")?;
                match k {
                    "Allow" => Some((true, v.to_string())),
                    "Disallow" => Some((false, v.to_string())),
                    _ => None,
                }
            })
            .collect();
        let matches = |pat: &str, path: &str| {
            // `*` as any run of characters; a rule matches a prefix of the path.
            let parts: Vec<&str> = pat.split('*').collect();
            let mut at = 0;
            for (i, p) in parts.iter().enumerate() {
                match path[at..].find(p) {
                    Some(0) => at += p.len(),
                    Some(n) if i > 0 => at += n + p.len(),
                    _ => return false,
                }
            }
            true
        };
        let allowed = |path: &str| {
            rules
                .iter()
                .filter(|(_, p)| matches(p, path))
                .max_by_key(|(allow, p)| (p.len(), *allow))
                .is_none_or(|(allow, _)| *allow)
        };
        for path in ["/", "/players", "/server/127.0.0.1%3A27960", "/player/3"] {
            assert!(allowed(path), "{path}\n{txt}");
        }
        for path in [
            "/players?q=abc",
            "/server/127.0.0.1%3A27960?hours=168",
            "/?sort=name&order=desc",
            "/api/servers",
            "/metrics",
            "/server/127.0.0.1%3A27960/feed.atom",
            "/server/127.0.0.1%3A27960/banner.png",
            "/server/127.0.0.1%3A27960/widget",
        ] {
            assert!(!allowed(path), "{path}\n{txt}");
        }
        let based = robots(&Site {
            base: "/servers".into(),
            ..Site::default()
        });
        assert!(based.contains("Disallow: /servers/*?\n"), "{based}");
    }
}
