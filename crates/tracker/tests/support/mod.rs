//! What the tracker's integration tests share: a configuration whose tracker never polls
//! (the tests write its rounds), and a tracker's web side served on loopback.
// Each test file uses part of it.
#![allow(dead_code)]

use std::path::Path;

use fragstat_tracker::config::{Config, Source};
use fragstat_tracker::web::AppState;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// `database = db`, `interval_secs = 10`, then the TOML `extra` (a `[web]` table goes
/// last), and one Quake III source naming only 127.0.0.1:9 (never polled: the tests write
/// the rounds).
pub fn quiet_config(db: &Path, extra: &str) -> Config {
    let mut config =
        Config::parse(&format!("database = {db:?}\ninterval_secs = 10\n{extra}")).unwrap();
    config.sources.push(Source {
        game: "q3".into(),
        masters: Vec::new(),
        servers: vec!["127.0.0.1:9".into()],
        ext: false,
    });
    config
}

/// A web side served on loopback: its base URL; sending `true` on `stop` ends it.
pub struct Web {
    pub base: String,
    pub stop: watch::Sender<bool>,
    pub task: JoinHandle<std::io::Result<()>>,
}

/// Serves `state` on a new loopback listener with the default guard limits.
pub async fn serve(state: AppState) -> Web {
    let listener = fragstat_tracker::web::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, mut rx) = watch::channel(false);
    let task = tokio::spawn(fragstat_tracker::web::serve(listener, state, async move {
        let _ = rx.wait_for(|s| *s).await;
    }));
    Web { base, stop, task }
}
