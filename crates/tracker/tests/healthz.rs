//! `/healthz` over real HTTP: 200 with the writer's role and the last round's age, 503 when
//! the writer's last round is older than three intervals or the database cannot be read.

mod support;

use fragstat_tracker::engine::RoleKind;
use fragstat_tracker::store::RoundData;
use fragstat_tracker::Tracker;
use serde_json::Value;

async fn get(base: &str) -> (u16, Value) {
    let r = reqwest::get(format!("{base}/healthz")).await.unwrap();
    let status = r.status().as_u16();
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    (status, r.json().await.unwrap())
}

fn round(at: i64) -> RoundData {
    RoundData {
        at,
        finished: at + 5,
        ..RoundData::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_says_writer_age_and_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h.db");
    let config = support::quiet_config(db.as_ref(), "");
    let tracker = Tracker::open(config).await.unwrap();
    let now = fragstat_tracker::round::now_ms();
    // The writer for 20 minutes; its last round 10 minutes ago (60 intervals).
    tracker
        .store()
        .write_round(&round(now - 600_000))
        .await
        .unwrap();
    tracker.role().set(RoleKind::Writer, now - 1_200_000);
    let support::Web {
        base,
        stop,
        task: web,
    } = support::serve(tracker.state()).await;

    let (status, j) = get(&base).await;
    assert_eq!(status, 503, "{j}");
    assert_eq!(j["status"], "unhealthy");
    assert_eq!(j["writer"], true);
    assert_eq!(j["database"], "reachable");
    assert!(
        j["reason"]
            .as_str()
            .unwrap()
            .contains("older than 3 intervals"),
        "{j}"
    );
    assert!(j["last_round_age_secs"].as_f64().unwrap() >= 600.0, "{j}");

    // A standby with the same old round is well: it does not write.
    tracker.role().set(RoleKind::Standby, now);
    let (status, j) = get(&base).await;
    assert_eq!(status, 200, "{j}");
    assert_eq!(
        (j["role"].as_str(), j["writer"].as_bool()),
        (Some("standby"), Some(false))
    );

    // The writer again, with a fresh round: well.
    tracker.role().set(RoleKind::Writer, now - 1_200_000);
    let fresh = fragstat_tracker::round::now_ms();
    tracker.store().write_round(&round(fresh)).await.unwrap();
    let (status, j) = get(&base).await;
    assert_eq!(status, 200, "{j}");
    assert_eq!(j["status"], "ok");
    assert_eq!(j["role"], "writer");
    assert_eq!(j["last_round_at_ms"], fresh);
    assert!(j["last_round_age_secs"].as_f64().unwrap() < 30.0, "{j}");
    assert_eq!(j["interval_secs"], 10.0);

    // The database gone (its pool closed): 503 for any role, no database text.
    tracker.store().close().await;
    for role in [RoleKind::Writer, RoleKind::Standby] {
        tracker.role().set(role, now);
        let (status, j) = get(&base).await;
        assert_eq!(status, 503, "{j}");
        assert_eq!(j["database"], "unreachable");
        assert_eq!(j["last_round_at"], Value::Null);
    }
    let _ = stop.send(true);
    web.await.unwrap().unwrap();
}
