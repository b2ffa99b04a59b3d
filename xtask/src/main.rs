//! Project tasks, run as `cargo xtask <task>`:
//!
//! - `test` — every test: installs the Debian packages the real-server tests need when they
//!   are missing and this runs as root (otherwise says what to install, and fails under `CI`),
//!   runs `cargo test --workspace`, checks that the codec alone has no tokio in its tree, and
//!   checks that the fuzz targets build.
//! - `capture GAME ADDR --kind info|status|master --name NAME` — sends one request to a live
//!   server and writes `tests/fixtures/<family>/<NAME>.bin` plus `<NAME>.json` metadata.
//! - `bench scan [--servers N] [--players K] [--loss F] [--repeat R]` — N emulated servers on
//!   loopback, a full `--players` scan timed with fragstat and with qstat, lossless and lossy.
//! - `bench master [--servers N]` — `fragstat master-server` with N emulated servers
//!   heartbeating to it: registration CPU and memory per server, list latency and throughput,
//!   a request burst, and a flood against the default limits.
//! - `bench decode` — the criterion decoder benchmarks.
//! - `fuzz [--seconds N]` — runs every cargo-fuzz target (needs `cargo install cargo-fuzz`).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context, Result};
use fragstat_quake3_oob::{decode, Game, Packet};
use fragstat_testkit::{in_ci, which};
use sha2::{Digest, Sha256};

mod bench_master;

/// Programs the real-server tests need, and the Debian packages that provide them.
const PACKAGES: &[(&str, &str)] = &[
    ("quakestat", "qstat"),
    ("openarena-server", "openarena-server"),
];

/// The fuzz targets (`fuzz/fuzz_targets/<name>.rs`).
const FUZZ_TARGETS: &[&str] = &["quake3_decode", "quake3_infostring"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(),
        Some("capture") => capture(&args[1..]),
        Some("bench") => match args.get(1).map(String::as_str) {
            Some("scan") => bench_scan(&args[2..]),
            Some("master") => bench_master_cmd(&args[2..]),
            Some("decode") => run(Command::new("cargo").args([
                "bench",
                "-p",
                "fragstat-quake3-oob",
                "--bench",
                "decode",
            ])),
            _ => Err(anyhow::anyhow!(
                "usage: cargo xtask bench scan|master|decode"
            )),
        },
        Some("fuzz") => fuzz(&args[1..]),
        _ => {
            eprintln!("usage: cargo xtask test | capture GAME ADDR --kind info|status|master --name NAME | bench scan|decode | fuzz [--seconds N]");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd
        .current_dir(root())
        .status()
        .with_context(|| format!("starting {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Installs missing Debian packages when root; otherwise says exactly what to install.
fn ensure_packages() -> Result<()> {
    let missing: Vec<&str> = PACKAGES
        .iter()
        .filter(|(p, _)| which(p).is_none())
        .map(|(_, pkg)| *pkg)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if is_root() && which("apt-get").is_some() {
        eprintln!("xtask: installing {}", missing.join(" "));
        run(Command::new("apt-get").arg("update").arg("-qq"))?;
        run(Command::new("apt-get")
            .args(["install", "-y", "-qq"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"))?;
        return Ok(());
    }
    let msg = format!(
        "real-server tests need: sudo apt-get update && sudo apt-get install -y {}",
        missing.join(" ")
    );
    if in_ci() {
        bail!("{msg}");
    }
    eprintln!("xtask: WARNING: {msg}\nxtask: those tests will print SKIPPED until then");
    Ok(())
}

fn test() -> Result<()> {
    ensure_packages()?;
    run(Command::new("cargo").args(["test", "--workspace"]))?;
    // The codec alone must stay sans-IO: no tokio in its normal dependency tree.
    let out = Command::new("cargo")
        .args([
            "tree",
            "-p",
            "fragstat-quake3-oob",
            "--no-default-features",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .current_dir(root())
        .output()?;
    let tree = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || tree.lines().any(|l| l.starts_with("tokio ")) {
        bail!("fragstat-quake3-oob --no-default-features must not depend on tokio:\n{tree}");
    }
    eprintln!(
        "xtask: codec tree has no tokio ({} crates)",
        tree.lines().count()
    );
    // The fuzz targets must keep building (they are outside the workspace).
    run(Command::new("cargo").args([
        "check",
        "--manifest-path",
        "fuzz/Cargo.toml",
        "--bins",
        "--quiet",
    ]))?;
    eprintln!("xtask: all tests passed");
    Ok(())
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn capture(args: &[String]) -> Result<()> {
    let (Some(game), Some(addr)) = (args.first(), args.get(1)) else {
        bail!("usage: cargo xtask capture GAME ADDR --kind info|status|master --name NAME");
    };
    let game: Game = game.parse()?;
    let kind = flag(args, "--kind").unwrap_or_else(|| "status".into());
    let name = flag(args, "--name").context("--name NAME is required")?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        bail!("--name must be letters, digits, '-', '_' or '.'");
    }
    let default_port = if kind == "master" {
        game.master_port()
    } else {
        game.default_port()
    };
    let with_port = if addr.contains(':') {
        addr.clone()
    } else {
        format!("{addr}:{default_port}")
    };
    let target: SocketAddr = with_port
        .to_socket_addrs()?
        .next()
        .context("address did not resolve")?;
    let challenge = format!(
        "xtask{}",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)?
            .as_millis()
            % 1_000_000_000
    );
    let request = match kind.as_str() {
        "info" => Packet::GetInfo {
            challenge: Some(challenge.into_bytes()),
        },
        "status" => Packet::GetStatus {
            challenge: Some(challenge.into_bytes()),
        },
        "master" => Packet::GetServers(game.getservers()),
        other => bail!("--kind must be info, status or master, not {other:?}"),
    }
    .to_bytes()?;
    let socket = UdpSocket::bind(if target.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    })?;
    socket.connect(target)?;
    let mut datagrams = Vec::new();
    let mut buf = vec![0u8; 65536];
    for attempt in 0..3 {
        socket.send(&request)?;
        // Masters send many datagrams: read until quiet for a second.
        socket.set_read_timeout(Some(Duration::from_millis(if attempt == 0 {
            1000
        } else {
            2000
        })))?;
        while let Ok(n) = socket.recv(&mut buf) {
            datagrams.push(buf[..n].to_vec());
            if kind != "master" {
                break;
            }
        }
        if !datagrams.is_empty() {
            break;
        }
    }
    if datagrams.is_empty() {
        bail!("no reply from {target} after 3 attempts");
    }
    let dir = root().join("tests/fixtures/quake3");
    std::fs::create_dir_all(&dir)?;
    let when = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    for (i, d) in datagrams.iter().enumerate() {
        let stem = if datagrams.len() == 1 {
            name.clone()
        } else {
            format!("{name}-{}", i + 1)
        };
        let decoded = decode(d);
        let version = match &decoded {
            Ok(Packet::StatusResponse(s)) => s
                .info
                .get("version")
                .map(|v| String::from_utf8_lossy(v).into_owned()),
            _ => None,
        };
        let meta = serde_json::json!({
            "id": stem,
            "family": "quake3",
            "game": game.id(),
            "provenance": "captured with `cargo xtask capture`",
            "server": target.to_string(),
            "request": request.escape_ascii().to_string(),
            "captured_at": when,
            "server_version": version,
            "datagram": i + 1,
            "datagrams": datagrams.len(),
            "payload_bytes": d.len(),
            "payload_sha256": sha256_hex(d),
            "decodes": decoded.as_ref().map(|_| "ok".to_string()).unwrap_or_else(|e| e.to_string()),
        });
        std::fs::write(dir.join(format!("{stem}.bin")), d)?;
        std::fs::write(
            dir.join(format!("{stem}.json")),
            serde_json::to_string_pretty(&meta)? + "\n",
        )?;
        println!(
            "wrote tests/fixtures/quake3/{stem}.bin ({} bytes, decodes: {})",
            d.len(),
            meta["decodes"]
        );
    }
    Ok(())
}

/// A running `fragstat serve`, killed on drop.
struct Serve {
    child: Child,
    servers: Vec<SocketAddr>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_serve(bin: &Path, count: usize, players: usize, loss: f64) -> Result<Serve> {
    let mut child = Command::new(bin)
        .args([
            "serve",
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            &count.to_string(),
            "--players",
            &players.to_string(),
        ])
        .args(["--drop", &loss.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let stdout = child.stdout.take().context("serve stdout")?;
    let mut servers = Vec::with_capacity(count);
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if line == "ready" {
            break;
        }
        if let Some(a) = line.strip_prefix("server ") {
            servers.push(a.parse()?);
        }
    }
    if servers.len() != count {
        bail!(
            "fragstat serve started {} of {count} servers",
            servers.len()
        );
    }
    Ok(Serve { child, servers })
}

/// CPU seconds (user + system) used by this process's waited-for children so far
/// (`/proc/self/stat` cutime + cstime).
fn children_cpu() -> f64 {
    let tck = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<f64>()
                .ok()
        })
        .unwrap_or(100.0);
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .map(|(_, r)| r.split(' ').collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(13) + ticks(14)) / tck
}

struct Run {
    seconds: f64,
    /// CPU seconds the client used.
    cpu: f64,
    answered: usize,
    /// Answered with a player list (fragstat reports servers whose getstatus was lost on
    /// every attempt as online without players).
    with_players: Option<usize>,
}

/// Runs `cmd` to completion; returns its wall time, the CPU it used and its standard output.
fn run_timed(cmd: &mut Command) -> Result<(f64, f64, String, bool)> {
    let cpu0 = children_cpu();
    let start = Instant::now();
    let out = cmd.output()?;
    let seconds = start.elapsed().as_secs_f64();
    let cpu = children_cpu() - cpu0;
    Ok((
        seconds,
        cpu,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.success(),
    ))
}

fn time_fragstat(bin: &Path, list: &Path) -> Result<Run> {
    let (seconds, cpu, text, ok) = run_timed(
        Command::new(bin)
            .args(["query", "q3", "-f"])
            .arg(list)
            .args([
                "--players",
                "--format",
                "ndjson",
                "--timeout-ms",
                "500",
                "--retries",
                "3",
                "--concurrency",
                "2000",
            ])
            .stderr(Stdio::inherit()),
    )?;
    if !ok {
        bail!("fragstat query failed");
    }
    let answered = text
        .lines()
        .filter(|l| l.contains("\"status\":\"online\""))
        .count();
    let with_players = text.lines().filter(|l| l.contains("\"players\":[")).count();
    Ok(Run {
        seconds,
        cpu,
        answered,
        with_players: Some(with_players),
    })
}

fn time_qstat(qstat: &Path, list: &Path) -> Result<Run> {
    let (seconds, cpu, text, _) = run_timed(
        Command::new(qstat)
            .args(["-default", "q3s", "-f"])
            .arg(list)
            .args(["-P", "-maxsim", "2000", "-sendinterval", "0", "-raw", ","])
            .stderr(Stdio::null()),
    )?;
    // Server lines are "Q3S,addr,name,…"; unanswered ones "Q3S,addr,TIMEOUT" (or DOWN/ERROR).
    let answered = text
        .lines()
        .filter(|l| l.starts_with("Q3S,"))
        .filter(|l| {
            !matches!(
                l.split(',').nth(2),
                Some("TIMEOUT" | "DOWN" | "ERROR" | "HOSTNOTFOUND") | None
            )
        })
        .count();
    Ok(Run {
        seconds,
        cpu,
        answered,
        with_players: None,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bench_scan(args: &[String]) -> Result<()> {
    let servers: usize = flag(args, "--servers").map_or(Ok(10_000), |s| s.parse())?;
    let players: usize = flag(args, "--players").map_or(Ok(4), |s| s.parse())?;
    let loss: f64 = flag(args, "--loss").map_or(Ok(0.2), |s| s.parse())?;
    let repeat: usize = flag(args, "--repeat").map_or(Ok(3), |s| s.parse())?;
    run(Command::new("cargo").args(["build", "--release", "-q", "-p", "fragstat-cli"]))?;
    let bin = root().join("target/release/fragstat");
    let qstat = which("quakestat");
    if qstat.is_none() {
        eprintln!("xtask: quakestat not installed (apt-get install qstat): timing fragstat only");
    }
    let tmp = std::env::temp_dir().join(format!("fragstat-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let mut rows = Vec::new();
    for (label, rate) in [("lossless", 0.0), ("loss", loss)] {
        let serve = start_serve(&bin, servers, players, rate)?;
        let list = tmp.join(format!("{label}.txt"));
        let mut f = std::fs::File::create(&list)?;
        for s in &serve.servers {
            writeln!(f, "{s}")?;
        }
        drop(f);
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for _ in 0..repeat.max(1) {
            ours.push(time_fragstat(&bin, &list)?);
            if let Some(q) = &qstat {
                theirs.push(time_qstat(q, &list)?);
            }
        }
        let condition = if rate > 0.0 {
            format!("{:.0} % of requests dropped", rate * 100.0)
        } else {
            "lossless".into()
        };
        rows.push((condition, ours, theirs));
    }
    let _ = std::fs::remove_dir_all(&tmp);
    println!("\nScan of {servers} emulated Quake III servers on loopback, {players} players each, --players / -P; median of {repeat} runs\n");
    println!("| condition | tool | wall s (median) | CPU s (median) | answered (min) | with players (min) |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (cond, ours, theirs) in &rows {
        for (tool, runs) in [("fragstat", ours), ("qstat", theirs)] {
            if runs.is_empty() {
                continue;
            }
            let wall = median(runs.iter().map(|r| r.seconds).collect());
            let cpu = median(runs.iter().map(|r| r.cpu).collect());
            let answered = runs.iter().map(|r| r.answered).min().unwrap_or(0);
            let players = runs
                .iter()
                .filter_map(|r| r.with_players)
                .min()
                .map_or("-".to_string(), |p| p.to_string());
            println!("| {cond} | {tool} | {wall:.2} | {cpu:.2} | {answered} | {players} |");
        }
        if !theirs.is_empty() {
            let o = median(ours.iter().map(|r| r.seconds).collect());
            let t = median(theirs.iter().map(|r| r.seconds).collect());
            println!(
                "| {cond} | qstat ÷ fragstat wall time | {:.2} | | | |",
                t / o
            );
        }
    }
    Ok(())
}

fn bench_master_cmd(args: &[String]) -> Result<()> {
    let servers: usize = flag(args, "--servers").map_or(Ok(10_000), |s| s.parse())?;
    run(Command::new("cargo").args(["build", "--release", "-q", "-p", "fragstat-cli"]))?;
    bench_master::bench_master(&root().join("target/release/fragstat"), servers)
}

fn fuzz(args: &[String]) -> Result<()> {
    let seconds = flag(args, "--seconds").unwrap_or_else(|| "30".into());
    let has_cargo_fuzz = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_cargo_fuzz {
        bail!("cargo-fuzz is not installed: cargo install cargo-fuzz");
    }
    // Seed every target's corpus with the real captures.
    for t in FUZZ_TARGETS {
        let corpus = root().join("fuzz/corpus").join(t);
        std::fs::create_dir_all(&corpus)?;
        for dir in [
            "tests/fixtures/quake3",
            "tests/fixtures/quake3/ok",
            "tests/fixtures/quake3/err",
        ] {
            for e in std::fs::read_dir(root().join(dir))? {
                let p = e?.path();
                if p.extension().is_some_and(|x| x == "bin") {
                    std::fs::copy(&p, corpus.join(p.file_name().context("file name")?))?;
                }
            }
        }
        run(Command::new("cargo")
            .args(["fuzz", "run", "--sanitizer", "none", t])
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .env("RUSTC_BOOTSTRAP", "1"))?;
    }
    Ok(())
}
