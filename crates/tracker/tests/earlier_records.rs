//! Records stored before `score_kind` and `location` were the model's (a DDNet server's, with
//! both in its Teeworlds `extra`) still give race times on the server and player pages: the
//! tracker reads the old form and the new.

mod support;

use fragstat::core::model::{Dialect, Player, ScoreKind, ServerInfo, Text};
use fragstat::core::record::Record;
use fragstat_tracker::store::RoundData;
use fragstat_tracker::Tracker;

/// A DDNet server whose game type is no race, so only its record can say its scores are
/// times; one player, `racer`, with `score`.
fn ddnet(addr: &str, score: i32, kind: Option<ScoreKind>) -> Record {
    let mut info = ServerInfo::default();
    info.name = Text::new(addr.as_bytes().to_vec(), Dialect::Plain);
    info.map = Text::new(b"Gores1".to_vec(), Dialect::Plain);
    info.gametype = Some("Gores".into());
    info.num_players = 1;
    info.max_players = 16;
    info.score_kind = kind;
    let mut p = Player::new(Text::new(b"racer".to_vec(), Dialect::Plain));
    p.score = Some(score);
    info.players = Some(vec![p]);
    let rtt = Some(std::time::Duration::from_millis(10));
    Record::online(Some(addr.into()), "ddnet", info, rtt)
}

/// Rewrites the stored record of `addr` as a tracker before this change stored it: no
/// `score_kind` or `location` of its own, both in its `extra` (`extra_kind`).
async fn store_as_before(database: &str, addr: &str, stored: &str, extra_kind: &str) {
    let mut v: serde_json::Value = serde_json::from_str(stored).unwrap();
    let o = v.as_object_mut().unwrap();
    assert!(o.remove("score_kind").is_some() && o.remove("location").is_some());
    o.insert(
        "extra".into(),
        serde_json::json!({"protocol": "http", "num_players": 1, "max_players": 16,
                           "score_kind": extra_kind, "location": "eu:de"}),
    );
    sqlx::any::install_default_drivers();
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&fragstat_tracker::store::database_url(database))
        .await
        .unwrap();
    sqlx::query("UPDATE servers SET record = $1 WHERE addr = $2")
        .bind(v.to_string())
        .bind(addr)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

/// The text of `path` on the site at `base`.
async fn page(base: &str, path: &str) -> String {
    let r = reqwest::get(format!("{base}{path}")).await.expect(path);
    assert_eq!(r.status(), 200, "{path}");
    r.text().await.unwrap()
}

/// The last score the player page of each `racer` identity shows on the server at `addr`.
async fn last_score(base: &str, ids: &[i64], addr: &str) -> String {
    for id in ids {
        let body = page(base, &format!("/player/{id}")).await;
        for row in body.split("<tr class=\"session\">").skip(1) {
            if row.contains(&format!("/server/{}\"", addr.replace(':', "%3A"))) {
                let score = row.split("<td class=\"num opt\">").nth(1).unwrap();
                return score[..score.find("</td>").unwrap()].to_string();
            }
        }
    }
    panic!("no session on {addr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn race_times_of_records_stored_before_score_kind_was_the_models() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("earlier.db").display().to_string();
    let config = support::quiet_config(db.as_ref(), "retention_hours = 48\n");
    let tracker = Tracker::open(config).await.unwrap();
    let now = fragstat_tracker::round::now_ms();
    let (old_time, old_points, new_time) = ("127.0.0.1:8304", "127.0.0.1:8305", "127.0.0.1:8306");
    let records = vec![
        ddnet(old_time, 125, None),
        ddnet(old_points, 42, None),
        ddnet(new_time, 65, Some(ScoreKind::Time)),
    ];
    let round = RoundData {
        at: now - 10_000,
        finished: now - 9_995,
        records,
        ..RoundData::default()
    };
    tracker.store().write_round(&round).await.unwrap();
    for (addr, kind) in [(old_time, "time"), (old_points, "points")] {
        let stored = tracker.store().server_record(addr).await.unwrap().unwrap();
        store_as_before(&db, addr, &stored, kind).await;
    }

    let support::Web {
        base,
        stop,
        task: web,
    } = support::serve(tracker.state()).await;
    let time_head = "<th class=\"num\">Time</th>";
    let server = page(&base, "/server/127.0.0.1%3A8304").await;
    assert!(server.contains(time_head), "{server}");
    assert!(server.contains("<td class=\"num\">2:05</td>"), "{server}");
    let server = page(&base, "/server/127.0.0.1%3A8305").await;
    assert!(!server.contains(time_head), "{server}");
    assert!(server.contains("<td class=\"num\">42</td>"), "{server}");
    let server = page(&base, "/server/127.0.0.1%3A8306").await;
    assert!(server.contains("<td class=\"num\">1:05</td>"), "{server}");

    let found: serde_json::Value =
        serde_json::from_str(&page(&base, "/api/players?q=racer").await).unwrap();
    let ids: Vec<i64> = found["players"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["player_id"].as_i64().unwrap())
        .collect();
    assert_eq!(last_score(&base, &ids, old_time).await, "2:05");
    assert_eq!(last_score(&base, &ids, old_points).await, "42");
    assert_eq!(last_score(&base, &ids, new_time).await, "1:05");
    let _ = stop.send(true);
    web.await.unwrap().unwrap();
    tracker.store().close().await;
}
