//! The writer's lease between two stores on one database (two trackers): one leads, the
//! other is refused writes until the first gives it up; then it takes over. SQLite (the
//! lock file) and PostgreSQL (the advisory lock on the writer's connection).

use fragstat_tracker::store::{RoundData, Store, StoreError};

fn round(at: i64) -> RoundData {
    RoundData {
        at,
        finished: at + 1,
        ..RoundData::default()
    }
}

async fn one_writer_at_a_time(database: &str) {
    let a = Store::open(database).await.unwrap();
    let b = Store::open(database).await.unwrap();
    assert!(a.lead().await.unwrap(), "the first takes the lease");
    assert!(!b.lead().await.unwrap(), "the second is a standby");
    assert!(a.is_writer().await && !b.is_writer().await);
    // Asked for the lease without it: writes are refused.
    a.write_round(&round(1_000)).await.unwrap();
    let refused = b.write_round(&round(2_000)).await.unwrap_err();
    assert!(matches!(refused, StoreError::NotWriter), "{refused}");
    // Kept while held, asked again each round.
    assert!(a.lead().await.unwrap());
    assert!(!b.lead().await.unwrap());
    // The writer gives it up (it stops): the standby takes over and writes.
    a.release().await;
    assert!(b.lead().await.unwrap(), "the standby takes over");
    b.write_round(&round(3_000)).await.unwrap();
    assert!(
        !a.lead().await.unwrap(),
        "the old writer is now the standby"
    );
    assert!(matches!(
        a.write_round(&round(4_000)).await.unwrap_err(),
        StoreError::NotWriter
    ));
    let ats: Vec<i64> = b.rounds(10).await.unwrap().iter().map(|r| r.at).collect();
    assert_eq!(ats, vec![3_000, 1_000]);
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_one_writer_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lease.db").display().to_string();
    one_writer_at_a_time(&db).await;
    assert!(dir.path().join("lease.db-writer.lock").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_one_writer_at_a_time() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    one_writer_at_a_time(&pg.url).await;
}
