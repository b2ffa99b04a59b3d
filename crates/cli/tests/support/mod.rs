//! What every CLI integration test needs, in one place: the binary, running it, reading its
//! output, a running `fragstat` process with its lines and log, and a local HTTP server.
//! Each test file includes it with `mod support;` (so not every binary uses every helper).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use fragstat_testkit::{Lines, Process};
use serde_json::Value;

/// The `fragstat` binary under test: cargo's, or `$FRAGSTAT_TEST_BIN` where set (a target
/// directory shared by several worktrees uplifts whichever built last to cargo's path).
pub fn bin() -> &'static Path {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os("FRAGSTAT_TEST_BIN") {
        Some(p) if !p.is_empty() => p.into(),
        _ => env!("CARGO_BIN_EXE_fragstat").into(),
    })
}

/// `fragstat ARGS`, to the end.
pub fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("run fragstat")
}

/// `fragstat ARGS` with `input` on standard input.
pub fn run_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run fragstat");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Standard output of a successful run.
///
/// # Panics
/// When the run failed, with its stderr.
pub fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Standard error, as text.
pub fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The JSON a successful run printed.
pub fn json(out: &Output) -> Value {
    let text = stdout(out);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The NDJSON lines a successful run printed.
pub fn ndjson(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A running `fragstat` (stopped with SIGTERM, then SIGKILL, on drop): its stdout line by
/// line, its stderr in a log file.
#[derive(Debug)]
pub struct Running {
    /// The process.
    pub process: Process,
    /// Its standard output.
    pub lines: Lines,
    _dir: tempfile::TempDir,
}

impl Running {
    /// Starts `fragstat ARGS` with `env` added to its environment.
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> Running {
        let mut cmd = Command::new(bin());
        cmd.args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Self::start_cmd(cmd)
    }

    /// Starts `cmd` (made with [`bin`]) with stdout piped and stderr to a log file.
    pub fn start_cmd(mut cmd: Command) -> Running {
        let dir = tempfile::Builder::new()
            .prefix("fragstat-cli-")
            .tempdir()
            .expect("temp dir");
        let log = dir.path().join("stderr.log");
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("log"));
        let mut child = cmd.spawn().expect("spawn fragstat");
        let lines = Lines::new(child.stdout.take().expect("stdout"));
        Running {
            process: Process::new(child, log),
            lines,
            _dir: dir,
        }
    }

    /// The next stdout line that passes `pred` (60 s cap).
    pub fn wait_line(&mut self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        self.lines.wait(what, fragstat_testkit::wait::SETTLE, pred)
    }

    /// The URL a `fragstat track` printed (`browse http://127.0.0.1:…`).
    #[allow(dead_code)]
    pub fn tracker_url(&mut self) -> String {
        let line = self.wait_line("the tracker's URL", |l| l.contains("browse http://"));
        let url = line
            .split("browse ")
            .nth(1)
            .expect("url")
            .trim()
            .to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        url
    }

    /// Waits for `n` more round lines of a `fragstat track`; the lines.
    #[allow(dead_code)]
    pub fn rounds(&mut self, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| self.wait_line("a round", |l| l.starts_with("round ")))
            .collect()
    }

    /// Waits until stderr has a line that passes `pred` (60 s cap), and returns it.
    pub fn wait_stderr(&mut self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let process = &mut self.process;
        fragstat_testkit::wait::until(what, fragstat_testkit::wait::SETTLE, || {
            process.log().lines().find(|l| pred(l)).map(String::from)
        })
    }

    /// For `fragstat master-server`: the UDP address it prints (`master ADDR`), once it has
    /// printed `ready`.
    pub fn master_ready(&mut self) -> SocketAddr {
        let line = self.wait_line("the master's address", |l| l.starts_with("master "));
        let addr = line["master ".len()..].parse().expect("master ADDR");
        self.wait_line("master-server ready", |l| l == "ready");
        addr
    }

    /// SIGKILL, and waits for the exit.
    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Sends `signal` (`-INT`, `-TERM`…).
    pub fn signal(&mut self, signal: &str) {
        self.process.signal(signal);
    }

    /// Waits for the exit (60 s cap) and returns its status.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let process = &mut self.process;
        fragstat_testkit::wait::until("the process exits", fragstat_testkit::wait::SETTLE, || {
            process.try_wait()
        })
    }
}

/// GET `url` over HTTP/1.1: status and body.
pub fn http_get(url: &str) -> (u16, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let r = reqwest::get(url)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = r.status().as_u16();
        (status, r.text().await.expect("body"))
    })
}

/// GET `url` and parse the 200 answer as JSON.
pub fn http_json(url: &str) -> Value {
    let (status, body) = http_get(url);
    assert_eq!(status, 200, "{url}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{url}: {e}: {body}"))
}

/// A local HTTP server on 127.0.0.1 (port 0) serving one body at one path, stopped on drop.
#[derive(Debug)]
pub struct HttpFile {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HttpFile {
    /// Serves `body` as `content_type` at `path` (e.g. `/servers.json`).
    pub fn serve(path: &str, content_type: &'static str, body: Vec<u8>) -> HttpFile {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let path = path.to_string();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let app = axum::Router::new().route(
                    &path,
                    axum::routing::get(move || {
                        let body = body.clone();
                        async move { ([("content-type", content_type)], body) }
                    }),
                );
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        let addr = addr_rx
            .recv_timeout(fragstat_testkit::wait::SETTLE)
            .expect("the HTTP server's address");
        HttpFile {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://ADDR` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for HttpFile {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A temp file with `text` in it.
pub fn temp_file(text: &[u8]) -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(f.path(), text).expect("write temp file");
    f
}

/// Where end-to-end artifacts (screenshots) are kept: `target/<what>`.
pub fn artifacts(what: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| fragstat_testkit::repo_root().join("target"));
    target.join(what)
}

/// A pause that is not synchronisation: a short wait before an action whose timing is the
/// point of the test (kill a process at some moment of its work).
pub fn jitter(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}
