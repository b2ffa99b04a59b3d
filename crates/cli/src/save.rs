//! `fragstat query --save-dir DIR`: every datagram the servers send is written to DIR
//! (`ADDRESS-N.bin`, in the order received), for `fragstat decode` or a bug report. The
//! servers are asked with the game's own query on an [`Engine`], each exchange wrapped so
//! that it keeps what the engine hands it; the results print as any query's.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use fragstat::core::model::ServerInfo;
use fragstat::core::record::{addr_text, Record};
use fragstat::core::registry::Ask;
use fragstat::core::{DecodeError, EncodeError, Exchange, Verdict};
use fragstat::{Engine, GameRef, Options};

use crate::output::{Output, Stop};

/// An exchange that keeps every datagram the engine passes it, then lets `inner` decide.
struct Recording {
    inner: Box<dyn Exchange<Output = ServerInfo>>,
    received: Received,
}

impl Exchange for Recording {
    type Output = ServerInfo;

    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        self.inner.requests(attempt)
    }

    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<ServerInfo> {
        if let Ok(mut r) = self.received.lock() {
            r.push(datagram.to_vec());
        }
        self.inner.on_datagram(datagram)
    }

    fn on_timeout(&mut self, exhausted: bool) -> Option<Result<ServerInfo, DecodeError>> {
        self.inner.on_timeout(exhausted)
    }
}

/// A server asked: its position in the input, game, address and what it sent.
type Asked = (usize, GameRef, SocketAddr, Received);

/// The datagrams a [`Recording`] kept.
type Received = Arc<Mutex<Vec<Vec<u8>>>>;

/// A file name for `addr`'s `n`th datagram: `127.0.0.1_27960-1.bin`, `__1_27960-1.bin`.
pub fn file_name(addr: SocketAddr, n: usize) -> String {
    let text: String = addr_text(addr)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}-{n}.bin", text.trim_matches('_'))
}

/// How the servers are asked: what, and the wait and retries of `--timeout-ms`,
/// `--retries`.
pub struct Asking {
    /// What is asked.
    pub ask: Ask,
    /// Per attempt.
    pub timeout: Duration,
    /// After the first attempt.
    pub retries: u32,
}

/// Asks `targets` (resolved ones; the rest are printed as they are), writes what each sent
/// to `dir` and prints the records through `out`. Exit status as a query's.
pub async fn run(
    dir: &Path,
    targets: Vec<crate::scan::Target>,
    asking: Asking,
    mut out: Output,
) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let engine = Engine::bind().await.context("binding UDP sockets")?;
    let mut jobs = Vec::new();
    let mut logs: Vec<Asked> = Vec::new();
    for (i, (game, text, addr)) in targets.into_iter().enumerate() {
        match addr {
            Ok(a) => {
                let received = Arc::new(Mutex::new(Vec::new()));
                jobs.push((
                    a,
                    Recording {
                        inner: game.server_query(asking.ask),
                        received: Arc::clone(&received),
                    },
                ));
                logs.push((i, game, a, received));
            }
            Err(e) => out.record(
                i,
                Record::failed(
                    Some(text),
                    game.id(),
                    fragstat::core::record::Status::Error,
                    e,
                ),
            ),
        }
    }
    let options = Options::default()
        .with_timeout(asking.timeout)
        .with_retries(asking.retries);
    let mut batch = engine.run_lazy(jobs, options);
    let mut online = 0usize;
    let mut saved = 0usize;
    while let Some(o) = batch.next().await {
        let Some((pos, game, addr, received)) = logs.get(o.index) else {
            continue;
        };
        let datagrams = received.lock().map(|r| r.clone()).unwrap_or_default();
        for (n, d) in datagrams.iter().enumerate() {
            let path = dir.join(file_name(*addr, n + 1));
            std::fs::write(&path, d).with_context(|| format!("writing {}", path.display()))?;
            saved += 1;
        }
        let record = match o.result {
            Ok(mut info) => {
                online += 1;
                if game.family() == "teeworlds" {
                    fragstat::no_time(&mut info, game.id() == "teeworlds07");
                }
                Record::online(Some(addr_text(*addr)), game.id(), info, o.rtt)
            }
            Err(e) => fragstat::record(game, *addr, Err(fragstat::Error::from(e))),
        };
        out.record(*pos, record);
    }
    eprintln!(
        "{} saved in {}",
        crate::scan::count(saved, "datagram"),
        dir.display()
    );
    match out.finish() {
        Ok(()) | Err(Stop::BrokenPipe) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(if online == 0 {
        ExitCode::from(crate::EXIT_NO_ANSWER)
    } else {
        ExitCode::SUCCESS
    })
}
