//! `fragstat track` in operation: SIGHUP reloads the MMDB file (a bad one keeps the table in
//! use), `/healthz` answers, and `--web-only` serves without polling or writing.

use std::path::PathBuf;

mod support;
use support::{http_get, Running};

/// The MMDB the tests use: `$FRAGSTAT_GEOIP_MMDB`, else where `cargo xtask test` installs
/// the CC0 package (`target/geoip`).
fn mmdb() -> Option<PathBuf> {
    let path = std::env::var_os("FRAGSTAT_GEOIP_MMDB")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
                "../../target/geoip/node_modules/@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb",
            )
        });
    if path.is_file() {
        return Some(path);
    }
    let msg = format!(
        "GeoIP test database not at {} (run `cargo xtask test`, or set FRAGSTAT_GEOIP_MMDB)",
        path.display()
    );
    assert!(!fragstat_testkit::in_ci(), "{msg}");
    eprintln!("SKIPPED (not in CI): {msg}");
    None
}

/// Starts `fragstat track --config CONFIG [extra]`; its URL (ending in `/`).
fn track(config: &std::path::Path, extra: &[&str]) -> (Running, String) {
    let mut args = vec!["track", "--config", config.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut t = Running::start(&args, &[]);
    let url = t.tracker_url();
    (t, url)
}

/// The value of the metric line starting with `name ` on `/metrics`.
fn metric(url: &str, name: &str) -> String {
    let (status, body) = http_get(&format!("{url}metrics"));
    assert_eq!(status, 200);
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name}: {body}"))
        .to_string()
}

#[test]
fn sighup_reloads_the_mmdb_and_a_bad_file_keeps_the_table() {
    let Some(real) = mmdb() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let geoip = dir.path().join("countries.mmdb");
    std::fs::copy(&real, &geoip).unwrap();
    let config = dir.path().join("track.toml");
    std::fs::write(
        &config,
        format!(
            "database = {:?}\ngeoip = {geoip:?}\nlisten = \"127.0.0.1:0\"\ninterval_secs = 1\n\
             [[source]]\ngame = \"q3\"\nservers = [\"127.0.0.1:9\"]\n",
            dir.path().join("t.db")
        ),
    )
    .unwrap();
    let (mut t, url) = track(&config, &[]);
    t.wait_line("a round", |l| l.starts_with("round "));

    // A new file renamed over the old one, then SIGHUP: reloaded.
    let new = dir.path().join("countries.mmdb.new");
    std::fs::copy(&real, &new).unwrap();
    std::fs::rename(&new, &geoip).unwrap();
    t.signal("-HUP");
    t.wait_stderr("the reload", |l| l.contains("GeoIP reloaded from"));
    assert_eq!(metric(&url, "fragstat_tracker_geoip_reloads_total"), "1");

    // A bad file: the table in use stays, the tracker goes on.
    std::fs::write(&geoip, b"not an mmdb").unwrap();
    t.signal("-HUP");
    let line = t.wait_stderr("the refusal", |l| l.contains("GeoIP not reloaded"));
    assert!(line.contains("countries.mmdb"), "{line}");
    assert_eq!(
        metric(&url, "fragstat_tracker_geoip_reload_failures_total"),
        "1"
    );
    t.wait_line("a round after", |l| l.starts_with("round "));
    let (status, body) = http_get(&format!("{url}healthz"));
    assert_eq!(status, 200, "{body}");
    assert!(
        t.process.try_wait().is_none(),
        "SIGHUP must not end the tracker"
    );

    t.signal("-TERM");
    assert!(t.wait_exit().success());
}

/// A tracker config on `db` probing `server` every 0.2 s.
fn config_file(dir: &std::path::Path, name: &str, db: &std::path::Path, server: &str) -> PathBuf {
    let config = dir.join(name);
    std::fs::write(
        &config,
        format!(
            "database = {db:?}\nlisten = \"127.0.0.1:0\"\ninterval_secs = 0.2\n\
             [[source]]\ngame = \"q3\"\nservers = [\"{server}\"]\n"
        ),
    )
    .unwrap();
    config
}

#[test]
fn web_only_serves_the_database_and_never_polls_or_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    // The UDP sockets each tracker probes, kept by the test.
    let probe_w = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let probe_r = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    probe_r.set_nonblocking(true).unwrap();
    let writer = config_file(
        dir.path(),
        "w.toml",
        &db,
        &probe_w.local_addr().unwrap().to_string(),
    );
    let replica = config_file(
        dir.path(),
        "r.toml",
        &db,
        &probe_r.local_addr().unwrap().to_string(),
    );
    let (mut w, _) = track(&writer, &[]);
    w.wait_line("a round", |l| l.starts_with("round "));
    let (mut r, url) = track(&replica, &["--web-only"]);
    r.wait_stderr("web only", |l| l.contains("web only"));
    assert_eq!(metric(&url, "fragstat_tracker_writer"), "0");
    // The writer goes on writing; the replica takes no part.
    let mut last = String::new();
    for _ in 0..5 {
        last = w.wait_line("a round", |l| l.starts_with("round "));
    }
    let written: usize = last["round ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    w.signal("-TERM");
    assert!(w.wait_exit().success());
    // The replica serves the writer's rounds, and is well.
    let (status, body) = http_get(&format!("{url}api/rounds?limit=1000"));
    assert_eq!(status, 200, "{body}");
    let j: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(j["rounds"].as_array().unwrap().len(), written, "{body}");
    let (status, body) = http_get(&format!("{url}healthz"));
    assert_eq!(status, 200, "{body}");
    let j: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (j["role"].as_str(), j["writer"].as_bool()),
        (Some("web-only"), Some(false))
    );
    assert!(j["last_round_at_ms"].is_i64(), "{j}");
    // Not one probe from the replica, and no round line.
    let mut buf = [0u8; 64];
    assert!(
        probe_r.recv_from(&mut buf).is_err(),
        "a web-only tracker probed"
    );
    r.signal("-TERM");
    assert!(r.wait_exit().success());
    assert!(!r.lines.seen().iter().any(|l| l.starts_with("round ")));
}
