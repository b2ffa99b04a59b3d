//! `fragstat master-server` with real game servers registering: OpenArena (ioquake3,
//! `QuakeArena-1` heartbeats) and Nexuiz (DarkPlaces, `DarkPlaces` heartbeats), listed by
//! `fragstat master` and by qstat, removed when they shut down, kept across a restart with
//! `--state`. Under CI these fail, never skip, when a package is missing.

use std::io::BufRead;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fragstat_testkit::{free_udp_port, in_ci, qstat_json, OpenArena, OpenArenaConfig};
use serde_json::Value;

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_fragstat"))
}

/// A running `fragstat master-server`, stopped (SIGTERM, so it saves its state) on drop.
struct MasterServer {
    child: Child,
    addr: SocketAddr,
    metrics: Option<String>,
}

impl MasterServer {
    fn start(port: u16, state: &Path, metrics: bool) -> MasterServer {
        let mut args = vec![
            "master-server".to_string(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--allow-loopback".into(),
            "--state".into(),
            state.display().to_string(),
        ];
        if metrics {
            args.extend(["--metrics".into(), "127.0.0.1:0".into()]);
        }
        let mut child = Command::new(bin())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn master-server");
        let stdout = child.stdout.take().unwrap();
        let mut addr = None;
        let mut metrics = None;
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if let Some(a) = line.strip_prefix("master ") {
                addr = Some(a.parse().unwrap());
            } else if let Some(m) = line.strip_prefix("metrics ") {
                metrics = Some(m.to_string());
            } else if line == "ready" {
                break;
            }
        }
        MasterServer {
            child,
            addr: addr.expect("master address"),
            metrics,
        }
    }

    fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for MasterServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A real Nexuiz (DarkPlaces) server, public, heartbeating to `master`.
struct Nexuiz {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Nexuiz {
    fn start(master: SocketAddr) -> Option<Nexuiz> {
        let bin = PathBuf::from("/usr/games/nexuiz-server");
        if !bin.exists() {
            assert!(
                !in_ci(),
                "nexuiz-server is not installed (apt-get install -y nexuiz-server)"
            );
            eprintln!("SKIPPED: nexuiz-server is not installed");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let port = free_udp_port();
        let child = Command::new(bin)
            .args(["-userdir", &dir.path().display().to_string()])
            .args(["+net_address", "127.0.0.1", "+port", &port.to_string()])
            .args(["+hostname", "^1Nex ^7Registered", "+maxplayers", "8"])
            .args(["+sv_public", "1", "+sv_master1", &master.to_string()])
            .args(["+sv_master2", "", "+sv_master3", "", "+sv_master4", ""])
            .args(["+map", "nexdm01"])
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nexuiz-server");
        Some(Nexuiz {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            _dir: dir,
        })
    }
}

impl Drop for Nexuiz {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        std::thread::sleep(Duration::from_millis(300));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The addresses `fragstat master GAME MASTER [ARGS]` lists.
fn listed(game: &str, master: SocketAddr, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["master", game, &master.to_string(), "--format", "json"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = Command::new(bin()).args(&args).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let mut list: Vec<String> = v["servers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["address"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    list.sort();
    list
}

fn wait_until(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "{what}: not within {secs} s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn real_servers_register_flatline_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("master-state.json");
    let port = free_udp_port();
    let mut master = MasterServer::start(port, &state, true);
    let m = master.addr;
    let Some(oa) = OpenArena::start(OpenArenaConfig {
        hostname: "Registered OA".into(),
        bots: vec!["sarge".into()],
        master: Some(m),
        ..OpenArenaConfig::default()
    }) else {
        return;
    };
    let Some(nex) = Nexuiz::start(m) else { return };
    let oa_addr = oa.addr.to_string();
    let nex_addr = nex.addr.to_string();

    wait_until("OpenArena listed", 20, || {
        listed("openarena", m, &[]) == vec![oa_addr.clone()]
    });
    wait_until("Nexuiz listed", 40, || {
        listed("oob:3", m, &["--ext", "--gamename", "Nexuiz"]) == vec![nex_addr.clone()]
    });
    // The anonymous Q3 dialect and the Ext one both list OpenArena; other games do not see it.
    assert_eq!(listed("openarena", m, &["--ext"]), vec![oa_addr.clone()]);
    assert!(listed("q3", m, &[]).is_empty());
    // qstat, a real client, lists it too.
    if let Some(q) = qstat_json(&["-q3m,71", &m.to_string()]) {
        let servers: Vec<&str> = q
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["protocol"] != "q3m")
            .filter_map(|s| s["address"].as_str())
            .collect();
        assert_eq!(servers, vec![oa_addr.as_str()], "{q}");
    }
    // Metrics count both.
    let metrics = master.metrics.clone().expect("metrics address");
    let text = reqwest_get(&metrics);
    assert!(
        text.contains("fragstat_master_servers{game=\"Quake3Arena\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("fragstat_master_servers{game=\"Nexuiz\"} 1"),
        "{text}"
    );

    // OpenArena shuts down (two last heartbeats, then silence): removed within seconds.
    drop(oa);
    wait_until("OpenArena removed after shutdown", 15, || {
        listed("openarena", m, &[]).is_empty()
    });

    // Restart the master with its state: Nexuiz is listed at once, and again after
    // re-verification.
    master.stop();
    let saved: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(saved["servers"].as_array().unwrap().len(), 1, "{saved}");
    let master = MasterServer::start(port, &state, false);
    assert_eq!(
        listed("oob:3", master.addr, &["--ext", "--gamename", "Nexuiz"]),
        vec![nex_addr.clone()],
        "served at once from the state file"
    );
    std::thread::sleep(Duration::from_secs(8));
    assert_eq!(
        listed("oob:3", master.addr, &["--ext", "--gamename", "Nexuiz"]),
        vec![nex_addr],
        "still listed after re-verification"
    );
}

/// A plain HTTP GET (the metrics endpoint) without pulling an HTTP client into the tests.
fn reqwest_get(url: &str) -> String {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    // Metrics are refreshed once a second.
    std::thread::sleep(Duration::from_millis(1200));
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(s, "GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
}

#[test]
fn bad_options_are_usage_errors() {
    for (args, needle) in [
        (&["master-server", "--listen", "nowhere"][..], "--listen"),
        (&["master-server", "--metrics", "x"], "--metrics"),
        (&["master-server", "--max-servers", "0"], "max-servers"),
        (&["master-server", "--expiry-s", "0"], "expiry-s"),
    ] {
        let out = Command::new(bin()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(needle),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("state.json");
    std::fs::write(&bad, "not json").unwrap();
    let out = Command::new(bin())
        .args(["master-server", "--state", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
