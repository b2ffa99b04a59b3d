//! L7 (security review 2026-11-b): a 500 carries no database error text (the detail goes to
//! the log), and every answer — pages, API, metrics, 4xx and 5xx — carries the security
//! headers: `nosniff`, a Content-Security-Policy with `frame-ancestors 'none'` under which
//! the pages' own inline script runs (its SHA-256 is the policy's), `X-Frame-Options` and a
//! `Referrer-Policy`.

mod support;

use base64::Engine;
use fragstat::core::model::{Dialect, ServerInfo, Text};
use fragstat::core::record::Record;
use fragstat_tracker::store::RoundData;
use fragstat_tracker::Tracker;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

struct Site {
    base: String,
    db: std::path::PathBuf,
    stop: watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

impl Drop for Site {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// A tracker with one round of one server, its web side on loopback.
async fn site() -> Site {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("web.db");
    let config = support::quiet_config(db.as_ref(), "");
    let tracker = Tracker::open(config).await.unwrap();
    let mut info = ServerInfo::default();
    info.name = Text::new(b"^1Alpha".to_vec(), Dialect::Ioq3);
    info.num_players = 0;
    let at = fragstat_tracker::round::now_ms();
    let record = Record::online(Some("127.0.0.1:27960".into()), "q3", info, None);
    let round = RoundData {
        at,
        finished: at + 5,
        records: vec![record],
        ..RoundData::default()
    };
    tracker.store().write_round(&round).await.unwrap();
    let support::Web {
        base,
        stop,
        task: _,
    } = support::serve(tracker.state()).await;
    Site {
        base,
        db,
        stop,
        _dir: dir,
    }
}

async fn get(site: &Site, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let r = reqwest::get(format!("{}{path}", site.base))
        .await
        .expect(path);
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, headers, r.text().await.unwrap())
}

fn assert_security_headers(path: &str, headers: &reqwest::header::HeaderMap) {
    let h = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("{path}: no {name} in {headers:?}"))
            .to_string()
    };
    assert_eq!(h("x-content-type-options"), "nosniff", "{path}");
    assert_eq!(h("x-frame-options"), "DENY", "{path}");
    assert_eq!(h("referrer-policy"), "same-origin", "{path}");
    let csp = h("content-security-policy");
    assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
    assert!(csp.contains("default-src 'none'"), "{path}: {csp}");
    assert_eq!(
        csp,
        fragstat_tracker::web::content_security_policy(),
        "{path}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_answer_carries_the_security_headers_and_the_script_is_allowed() {
    let site = site().await;
    for (path, want) in [
        ("/", 200),
        ("/server/127.0.0.1:27960", 200),
        ("/players", 200),
        ("/api/servers", 200),
        ("/api/servers/127.0.0.1:27960", 200),
        ("/api/openapi.json", 200),
        ("/metrics", 200),
        ("/api/servers/127.0.0.1:1", 404),
        ("/no/such/page", 404),
        ("/api/servers?per_page=100000", 400),
    ] {
        let (status, headers, _) = get(&site, path).await;
        assert_eq!(status, want, "{path}");
        assert_security_headers(path, &headers);
    }
    // The page's inline script is the one the policy names by its SHA-256 (else a browser
    // would not run it), and it is the page's only script.
    let (_, headers, page) = get(&site, "/").await;
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert_eq!(page.matches("<script").count(), 1, "{page}");
    let script = page
        .split_once("<script>")
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .map(|(s, _)| s)
        .unwrap();
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(script));
    assert!(
        csp.contains(&format!("script-src 'sha256-{hash}'")),
        "{csp}"
    );
    // No inline event handler (CSP would block it).
    for attr in [
        " onclick=",
        " onchange=",
        " oninput=",
        " onsubmit=",
        " onload=",
        " onerror=",
    ] {
        assert!(!page.contains(attr), "{attr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_error_is_a_generic_500_with_the_headers() {
    let site = site().await;
    assert_eq!(get(&site, "/api/servers").await.0, 200);
    // The table the pages read is gone (renamed behind the tracker's back).
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", site.db.display()))
        .await
        .unwrap();
    sqlx::query("ALTER TABLE servers RENAME TO servers_gone")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    for path in ["/api/servers", "/", "/api/servers/127.0.0.1:27960"] {
        let (status, headers, body) = get(&site, path).await;
        assert_eq!(status, 500, "{path}: {body}");
        // The API's errors are JSON, the pages' text: the same words either way.
        let said = match path.starts_with("/api/") {
            true => serde_json::from_str::<serde_json::Value>(&body).unwrap()["error"]
                .as_str()
                .unwrap()
                .to_string(),
            false => body.clone(),
        };
        assert_eq!(said, fragstat_tracker::web::INTERNAL_ERROR, "{path}");
        let lower = body.to_lowercase();
        for sql in [
            "no such table",
            "sqlite",
            "select",
            "servers",
            "error returned",
        ] {
            assert!(!lower.contains(sql), "{path}: {body}");
        }
        assert_security_headers(path, &headers);
    }
}
