//! What the tracker's integration tests share: a configuration whose tracker never polls
//! (the tests write its rounds), and a tracker's web side served on loopback.
// Each test file uses part of it.
#![allow(dead_code)]

pub mod switch;

use std::path::Path;

use fragstat_tracker::config::{Config, Source};
use fragstat_tracker::web::AppState;
use serde_json::Value;
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

/// Generous: the point where a test gives up on an event, not how long one takes.
pub const SSE_SETTLE: std::time::Duration = std::time::Duration::from_secs(60);

/// An `/api/events` client: the response, and the frames read so far.
pub struct Sse {
    resp: reqwest::Response,
    buf: String,
}

impl Sse {
    pub async fn open(url: &str) -> Sse {
        let resp = reqwest::get(url).await.expect("GET /api/events");
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Sse {
            resp,
            buf: String::new(),
        }
    }

    /// The next frame with an `event:` line: (event, data).
    pub async fn next(&mut self) -> (String, String) {
        let (_, event, data) = self.next_frame().await;
        (event, data)
    }

    /// The next frame with an `event:` line: (its `id:`, event, data).
    pub async fn next_frame(&mut self) -> (Option<String>, String, String) {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                let mut event = None;
                let mut id = None;
                let mut data = String::new();
                for l in frame.lines() {
                    if let Some(e) = l.strip_prefix("event: ") {
                        event = Some(e.to_string());
                    } else if let Some(d) = l.strip_prefix("data: ") {
                        data.push_str(d);
                    } else if let Some(i) = l.strip_prefix("id: ") {
                        id = Some(i.to_string());
                    }
                }
                match event {
                    Some(e) => return (id, e, data),
                    None => continue, // a keep-alive comment, the retry hint
                }
            }
            let chunk = tokio::time::timeout(SSE_SETTLE, self.resp.chunk())
                .await
                .expect("an event in time")
                .expect("stream readable")
                .expect("stream open");
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Opens a stream with a request of `client`'s (headers set by the caller).
    pub async fn send(req: reqwest::RequestBuilder) -> Sse {
        let resp = req.send().await.expect("GET /api/events");
        assert_eq!(resp.status(), 200);
        Sse {
            resp,
            buf: String::new(),
        }
    }

    /// Everything read so far that is not a whole frame yet, and the raw start (for the
    /// `retry:` line).
    pub fn pending(&self) -> &str {
        &self.buf
    }

    /// Reads until `pred` holds of the raw text read (bounded by [`SSE_SETTLE`]).
    pub async fn read_until(&mut self, pred: impl Fn(&str) -> bool) {
        while !pred(&self.buf) {
            let chunk = tokio::time::timeout(SSE_SETTLE, self.resp.chunk())
                .await
                .expect("bytes in time")
                .expect("stream readable")
                .expect("stream open");
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// The next `n` events' JSON.
    pub async fn take(&mut self, n: usize) -> Vec<Value> {
        let mut out = Vec::new();
        while out.len() < n {
            let (kind, data) = self.next().await;
            let v: Value = serde_json::from_str(&data).unwrap();
            assert_eq!(v["event"], kind.as_str());
            out.push(v);
        }
        out
    }
}

pub fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect()
}
