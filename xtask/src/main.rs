//! Project tasks, run as `cargo xtask <task>`:
//!
//! - `test` — every test: installs the Debian packages the real-server tests need when they
//!   are missing and this runs as root (otherwise says what to install, and fails under `CI`),
//!   runs `cargo test --workspace`, checks that `fragstat-core` and every family codec crate
//!   (the workspace's `fragstat-*` crates with a `client` feature) have no tokio in their tree
//!   without default features, and checks that the fuzz targets build.
//! - `test-copies [--copies N] [--rounds R]` — every integration test binary run as N
//!   copies of the suite at once (default 2), R rounds, `CI=true`: tests must take their
//!   ports and wait for their servers without racing (docs/testing.md).
//! - `capture GAME ADDR NAME` — queries a live server through the registry (the game's server
//!   query asking for everything, on the engine), records every datagram the server sent, and
//!   writes each as `tests/fixtures/<family>/ok/<NAME>-<n>.bin` with a `.json` (game, source,
//!   sha256, and an `expect` block generated from the decode, marked `unchecked` until a
//!   person has checked it) and its `.decoded` snapshot.
//! - `bench scan [--servers N] [--players K] [--loss F] [--repeat R] [--addresses A]
//!   [--lossless-only] [--no-qstat] [-- FRAGSTAT-ARGS]` — N emulated servers on loopback (one
//!   `serve` process per address 127.0.0.1…A), a full `--players` scan timed with fragstat
//!   (default settings plus FRAGSTAT-ARGS) and with qstat, lossless and lossy, interleaved:
//!   wall, CPU, CPU per server answered, peak RSS, and the farm's floor (a minimal blaster).
//! - `bench master [--servers N] [--dpmaster PATH]` — `fragstat master-server` (and, given
//!   its binary, dpmaster measured the same way in the same run) with N emulated servers
//!   heartbeating to it: registration CPU and memory per server, list latency and throughput,
//!   a request burst, and a flood against the default limits.
//! - `bench attack [--dpmaster PATH]` — the security review's attacks on the master server
//!   (and on dpmaster, given its binary, in the same run), inside a network namespace of its
//!   own (`unshare -n`, loopback only): reflection from 10,240 spoofed victims (bytes per
//!   victim network and in all), registration during a heartbeat flood, spoofed delisting.
//! - `bench decode` — the criterion `decode` benchmarks of every family codec crate, then
//!   every family's whole fixture corpus through the registry (`tests/benches/decode.rs`).
//! - `fuzz [--seconds N]` — runs every cargo-fuzz target (`fuzz/fuzz_targets/*.rs`, needs
//!   `cargo install cargo-fuzz`), its corpus seeded from every `tests/fixtures/*/{ok,err}`.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use fragstat_testkit::{in_ci, which};
use sha2::{Digest, Sha256};

mod bench_attack;
mod bench_master;
mod capture;
mod copies;

/// Programs the real-server tests need, and the Debian packages that provide them.
const PACKAGES: &[(&str, &str)] = &[
    ("quakestat", "qstat"),
    ("openarena-server", "openarena-server"),
    ("DDNet-Server", "ddnet-server"),
    ("teeworlds-server", "teeworlds-server"),
    ("nexuiz-server", "nexuiz-server"),
    // Fake DDNet clients (tests/bots/ddnet-clients.js) run on node with an npm package.
    ("node", "nodejs"),
    ("npm", "npm"),
    // The tracker's end-to-end test renders its pages in headless Chromium.
    ("chromium", "chromium"),
];

/// The npm package the fake DDNet clients use, and where `cargo xtask test` installs it
/// (passed to the tests as `FRAGSTAT_TWBOTS`).
const TWBOTS_PACKAGE: &str = "teeworlds@2.6.1";

/// Installs the fake clients' npm package under `target/twbots` when it is missing; the
/// `node_modules` folder to give the tests, or `None` when npm is not there.
pub(crate) fn ensure_twbots() -> Result<Option<PathBuf>> {
    let prefix = root().join("target/twbots");
    let modules = prefix.join("node_modules");
    if modules.join("teeworlds").is_dir() {
        return Ok(Some(modules));
    }
    if which("npm").is_none() {
        return Ok(None);
    }
    std::fs::create_dir_all(&prefix)?;
    run(Command::new("npm")
        .args(["install", "--no-save", "--prefix"])
        .arg(&prefix)
        .arg(TWBOTS_PACKAGE))?;
    Ok(Some(modules))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(),
        Some("test-copies") => copies::test_copies(&args[1..]),
        Some("capture") => capture::capture(&args[1..]),
        Some("bench") => match args.get(1).map(String::as_str) {
            Some("scan") => bench_scan(&args[2..]),
            Some("master") => bench_master_cmd(&args[2..]),
            Some("attack") => bench_attack_cmd(&args[2..]),
            Some("decode") => bench_decode(),
            _ => Err(anyhow::anyhow!(
                "usage: cargo xtask bench scan|master|attack|decode"
            )),
        },
        Some("fuzz") => fuzz(&args[1..]),
        Some("completions") => completions(&args[1..]),
        _ => {
            eprintln!("usage: cargo xtask test | test-copies [--copies N] [--rounds R] | capture GAME ADDR NAME | bench scan|master|attack|decode | fuzz [--seconds N] | completions [--out DIR]");
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

/// `cargo xtask completions [--out DIR]`: shell completions for bash, zsh, fish, elvish and
/// PowerShell and the man page, generated from the CLI's clap definitions (`fragstat generate`),
/// written under DIR (default `target/dist`): `completions/…` and `man/fragstat.1`.
fn completions(args: &[String]) -> Result<()> {
    let out = match flag(args, "--out") {
        Some(d) => PathBuf::from(d),
        None => std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| root().join("target"), PathBuf::from)
            .join("dist"),
    };
    let files = [
        ("bash", "completions/fragstat.bash"),
        ("zsh", "completions/_fragstat"),
        ("fish", "completions/fragstat.fish"),
        ("elvish", "completions/fragstat.elv"),
        ("powershell", "completions/_fragstat.ps1"),
        ("man", "man/fragstat.1"),
    ];
    for (what, name) in files {
        let output = Command::new("cargo")
            .args(["run", "-q", "-p", "fragstat-cli", "--", "generate", what])
            .current_dir(root())
            .output()?;
        anyhow::ensure!(
            output.status.success() && !output.stdout.is_empty(),
            "fragstat generate {what}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let path = out.join(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, &output.stdout)?;
        println!("{}", path.display());
    }
    Ok(())
}

pub(crate) fn root() -> PathBuf {
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
pub(crate) fn ensure_packages() -> Result<()> {
    let mut missing: Vec<&str> = PACKAGES
        .iter()
        .filter(|(p, _)| which(p).is_none())
        .map(|(_, pkg)| *pkg)
        .collect();
    // The tracker's tests start a PostgreSQL server (its programs are not on PATH).
    if fragstat_testkit::postgres::bin_dir().is_none() {
        missing.push("postgresql");
    }
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

/// A workspace package as `cargo metadata` describes it.
struct Package {
    name: String,
    features: Vec<String>,
    /// `(kind, name)` of each target (`lib`, `bench`…).
    targets: Vec<(String, String)>,
}

/// The workspace's packages (`cargo metadata --no-deps`).
fn workspace_packages() -> Result<Vec<Package>> {
    let out = Command::new("cargo")
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(root())
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let packages = meta["packages"].as_array().context("no packages")?;
    Ok(packages
        .iter()
        .map(|p| Package {
            name: p["name"].as_str().unwrap_or_default().to_string(),
            features: p["features"]
                .as_object()
                .map(|f| f.keys().cloned().collect())
                .unwrap_or_default(),
            targets: p["targets"]
                .as_array()
                .map(|ts| {
                    ts.iter()
                        .flat_map(|t| {
                            let name = t["name"].as_str().unwrap_or_default().to_string();
                            strings(&t["kind"])
                                .into_iter()
                                .map(move |k| (k, name.clone()))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect())
}

/// The family codec crates: workspace members named `fragstat-*` with a `client` feature
/// (the codec is sans-IO without it).
fn codec_crates(packages: &[Package]) -> Vec<&Package> {
    packages
        .iter()
        .filter(|p| p.name.starts_with("fragstat-") && p.features.iter().any(|f| f == "client"))
        .collect()
}

/// Whether tokio is in `package`'s normal dependency tree (with or without its default
/// features), and how many crates the tree has.
fn tokio_in_tree(package: &str, default_features: bool) -> Result<(bool, usize)> {
    let mut cmd = Command::new("cargo");
    cmd.args(["tree", "-e", "normal", "-p", package, "--prefix", "none"]);
    if !default_features {
        cmd.arg("--no-default-features");
    }
    let out = cmd.current_dir(root()).output()?;
    if !out.status.success() {
        bail!(
            "cargo tree -p {package} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let tree = String::from_utf8_lossy(&out.stdout);
    Ok((
        tree.lines().any(|l| l.starts_with("tokio ")),
        tree.lines().count(),
    ))
}

/// Fails when `package` without its default features has tokio in its normal dependencies.
fn check_no_tokio(package: &str) -> Result<()> {
    let (tokio, crates) = tokio_in_tree(package, false)?;
    if tokio {
        bail!(
            "{package} --no-default-features must not depend on tokio (see `cargo tree -e normal --no-default-features -p {package} -i tokio`)"
        );
    }
    eprintln!("xtask: {package} (no default features) has no tokio ({crates} crates)");
    Ok(())
}

fn test() -> Result<()> {
    ensure_packages()?;
    let mut cargo = Command::new("cargo");
    cargo.args(["test", "--workspace"]);
    if let Some(modules) = ensure_twbots()? {
        cargo.env("FRAGSTAT_TWBOTS", modules);
    }
    run(&mut cargo)?;
    // The core and every codec must stay sans-IO: no tokio in their normal dependency tree.
    let packages = workspace_packages()?;
    let codecs = codec_crates(&packages);
    if codecs.is_empty() {
        bail!("no family codec crates found (workspace fragstat-* crates with a client feature)");
    }
    check_no_tokio("fragstat-core")?;
    for p in codecs {
        check_no_tokio(&p.name)?;
    }
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

/// The criterion `decode` bench of every codec crate that has one.
fn bench_decode() -> Result<()> {
    let packages = workspace_packages()?;
    let mut ran = 0;
    for p in codec_crates(&packages) {
        if p.targets.iter().any(|(k, n)| k == "bench" && n == "decode") {
            run(Command::new("cargo").args(["bench", "-p", &p.name, "--bench", "decode"]))?;
            ran += 1;
        }
    }
    if ran == 0 {
        bail!("no codec crate has a `decode` bench");
    }
    // Every family over its whole fixture corpus, through the registry.
    run(Command::new("cargo").args(["bench", "-p", "fragstat-testkit", "--bench", "decode"]))?;
    Ok(())
}

pub(crate) fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A running `fragstat serve`, killed on drop.
struct Serve {
    child: Child,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An emulated server farm: one `fragstat serve` process per loopback address
/// (127.0.0.1, 127.0.0.2…), the servers shared out evenly (a process may hold about 20,000
/// sockets under this machine's file limit).
struct Farm {
    _serves: Vec<Serve>,
    servers: Vec<SocketAddr>,
}

fn start_farm(
    bin: &Path,
    count: usize,
    players: usize,
    loss: f64,
    addresses: usize,
) -> Result<Farm> {
    let addresses = addresses.clamp(1, 250);
    let mut serves = Vec::new();
    for a in 0..addresses {
        let n = count / addresses + usize::from(a < count % addresses);
        if n == 0 {
            continue;
        }
        let child = Command::new(bin)
            .args([
                "serve",
                "q3",
                "--listen",
                &format!("127.0.0.{}:0", a + 1),
                "--count",
                &n.to_string(),
                "--players",
                &players.to_string(),
            ])
            .args(["--drop", &loss.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        serves.push((Serve { child }, n));
    }
    let mut servers = Vec::with_capacity(count);
    let mut kept = Vec::new();
    for (mut serve, n) in serves {
        let stdout = serve.child.stdout.take().context("serve stdout")?;
        let mut got = 0;
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            if line == "ready" {
                break;
            }
            if let Some(a) = line.strip_prefix("server ") {
                servers.push(a.parse()?);
                got += 1;
            }
        }
        if got != n {
            bail!("fragstat serve started {got} of {n} servers");
        }
        kept.push(serve);
    }
    Ok(Farm {
        _serves: kept,
        servers,
    })
}

/// CPU seconds (user + system) used by this process's waited-for children so far, and their
/// descendants (`getrusage(RUSAGE_CHILDREN)`: microseconds, where GNU time and
/// `/proc/self/stat` round to 10 ms, 7 % of a 0.15 s scan).
fn children_cpu() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| {
        let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        secs(u.user_time()) + secs(u.system_time())
    })
}

struct Run {
    seconds: f64,
    /// CPU seconds the client used.
    cpu: f64,
    /// The client's peak resident set, KiB (from GNU time; 0 when it is not installed).
    rss_kib: u64,
    answered: usize,
    /// Answered with a player list (fragstat reports servers whose getstatus was lost on
    /// every attempt as online without players).
    with_players: Option<usize>,
}

/// Runs `program args` to completion under GNU time when it is installed; returns wall
/// time, CPU (user + system), peak RSS in KiB and standard output. The CPU includes GNU
/// time's own (about 2 ms with the exec of a trivial program), the same for every tool.
fn run_timed(program: &Path, args: &[std::ffi::OsString]) -> Result<(f64, f64, u64, String, bool)> {
    let gnu_time = Path::new("/usr/bin/time");
    let report = std::env::temp_dir().join(format!("fragstat-time-{}", std::process::id()));
    let mut cmd = if gnu_time.exists() {
        let mut c = Command::new(gnu_time);
        c.args(["-f", "%M", "-o"]).arg(&report).arg(program);
        c
    } else {
        Command::new(program)
    };
    cmd.args(args).stderr(Stdio::null());
    let cpu0 = children_cpu();
    let start = Instant::now();
    let out = cmd.output()?;
    let seconds = start.elapsed().as_secs_f64();
    let cpu = children_cpu() - cpu0;
    let mut rss = 0;
    if gnu_time.exists() {
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        // The last line holds the figures (earlier ones: "Command exited with non-zero status").
        let f: Vec<&str> = text
            .lines()
            .last()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        // Only the peak RSS: CPU comes from getrusage (above), GNU time prints it to 10 ms.
        if let [m] = f[..] {
            rss = m.parse().unwrap_or(0);
        }
        let _ = std::fs::remove_file(&report);
    }
    Ok((
        seconds,
        cpu,
        rss,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.success(),
    ))
}

fn os(args: &[&str]) -> Vec<std::ffi::OsString> {
    args.iter().map(Into::into).collect()
}

/// fragstat with its default settings (timeout, retries, concurrency, adaptive timeouts).
fn time_fragstat(bin: &Path, list: &Path, extra: &[String]) -> Result<Run> {
    let mut args = os(&["query", "q3", "-f"]);
    args.push(list.into());
    args.extend(os(&["--players", "--format", "ndjson"]));
    args.extend(extra.iter().map(Into::into));
    let (seconds, cpu, rss_kib, text, ok) = run_timed(bin, &args)?;
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
        rss_kib,
        answered,
        with_players: Some(with_players),
    })
}

fn time_qstat(qstat: &Path, list: &Path) -> Result<Run> {
    let mut args = os(&["-default", "q3s", "-f"]);
    args.push(list.into());
    args.extend(os(&[
        "-P",
        "-maxsim",
        "2000",
        "-sendinterval",
        "0",
        "-raw",
        ",",
    ]));
    let (seconds, cpu, rss_kib, text, _) = run_timed(qstat, &args)?;
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
        rss_kib,
        answered,
        with_players: None,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The farm's floor: a minimal client (no decoding, no retries, no output) that sends each
/// server `requests` (with `window` servers in flight, as fragstat's default concurrency)
/// and counts replies. Returns (seconds until the last reply, replies, CPU seconds of this
/// thread are not measured: the blaster runs in this process).
fn blast(servers: &[SocketAddr], requests: &[&[u8]], window: usize) -> Result<(f64, usize)> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    let _ = socket.set_recv_buffer_size(8 << 20);
    let _ = socket.set_send_buffer_size(8 << 20);
    socket.bind(&SocketAddr::from(([0, 0, 0, 0], 0)).into())?;
    let socket: std::net::UdpSocket = socket.into();
    socket.set_read_timeout(Some(std::time::Duration::from_millis(300)))?;
    let index: std::collections::HashMap<SocketAddr, usize> =
        servers.iter().enumerate().map(|(i, a)| (*a, i)).collect();
    let mut missing = vec![requests.len(); servers.len()];
    let mut buf = vec![0u8; 65_536];
    let (mut next, mut in_flight, mut replies, mut done) = (0usize, 0usize, 0usize, 0usize);
    let start = Instant::now();
    let mut last = start;
    while done < servers.len() {
        while in_flight < window.max(1) && next < servers.len() {
            for r in requests {
                socket.send_to(r, servers[next])?;
            }
            next += 1;
            in_flight += 1;
        }
        match socket.recv_from(&mut buf) {
            Ok((_, from)) => {
                last = Instant::now();
                replies += 1;
                if let Some(m) = index.get(&from).and_then(|&i| missing.get_mut(i)) {
                    if *m > 0 {
                        *m -= 1;
                        if *m == 0 {
                            done += 1;
                            in_flight -= 1;
                        }
                    }
                }
            }
            // Nothing for 300 ms: what is missing was lost.
            Err(_) => break,
        }
    }
    Ok(((last - start).as_secs_f64(), replies))
}

fn bench_scan(args: &[String]) -> Result<()> {
    let servers: usize = flag(args, "--servers").map_or(Ok(10_000), |s| s.parse())?;
    let players: usize = flag(args, "--players").map_or(Ok(4), |s| s.parse())?;
    let loss: f64 = flag(args, "--loss").map_or(Ok(0.2), |s| s.parse())?;
    let repeat: usize = flag(args, "--repeat").map_or(Ok(3), |s| s.parse())?;
    // One address per 10,000 servers (a serve process per address), at most 10.
    let addresses: usize = flag(args, "--addresses")
        .map_or(Ok(servers.div_ceil(10_000).clamp(1, 10)), |s| s.parse())?;
    let lossless_only = args.iter().any(|a| a == "--lossless-only");
    let no_qstat = args.iter().any(|a| a == "--no-qstat");
    // Extra fragstat arguments (after `--`), e.g. to measure a lever switched off.
    let extra: Vec<String> = args
        .iter()
        .position(|a| a == "--")
        .map(|i| args[i + 1..].to_vec())
        .unwrap_or_default();
    run(Command::new("cargo").args(["build", "--release", "-q", "-p", "fragstat-cli"]))?;
    let bin = root().join("target/release/fragstat");
    let qstat = if no_qstat { None } else { which("quakestat") };
    if qstat.is_none() && !no_qstat {
        eprintln!("xtask: quakestat not installed (apt-get install qstat): timing fragstat only");
    }
    let tmp = std::env::temp_dir().join(format!("fragstat-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let mut rows = Vec::new();
    let mut floors = Vec::new();
    let conditions: &[(&str, f64)] = if lossless_only {
        &[("lossless", 0.0)]
    } else {
        &[("lossless", 0.0), ("loss", loss)]
    };
    for &(label, rate) in conditions {
        let farm = start_farm(&bin, servers, players, rate, addresses)?;
        let list = tmp.join(format!("{label}.txt"));
        let mut f = std::fs::File::create(&list)?;
        for s in &farm.servers {
            writeln!(f, "{s}")?;
        }
        drop(f);
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let mut floor_status = Vec::new();
        let mut floor_both = Vec::new();
        for _ in 0..repeat.max(1) {
            ours.push(time_fragstat(&bin, &list, &extra)?);
            if let Some(q) = &qstat {
                theirs.push(time_qstat(q, &list)?);
            }
            if rate == 0.0 {
                let status: &[&[u8]] = &[b"\xff\xff\xff\xffgetstatus fsbench\n"];
                let both: &[&[u8]] = &[
                    b"\xff\xff\xff\xffgetinfo fsbench\n",
                    b"\xff\xff\xff\xffgetstatus fsbench\n",
                ];
                floor_status.push(blast(&farm.servers, status, 1024)?);
                floor_both.push(blast(&farm.servers, both, 1024)?);
            }
        }
        let condition = if rate > 0.0 {
            format!("{:.0} % of requests dropped", rate * 100.0)
        } else {
            "lossless".into()
        };
        if rate == 0.0 {
            floors.push(("getstatus", floor_status));
            floors.push(("getinfo + getstatus", floor_both));
        }
        rows.push((condition, ours, theirs));
    }
    let _ = std::fs::remove_dir_all(&tmp);
    println!("\nScan of {servers} emulated Quake III servers on loopback ({addresses} address(es), one `serve` process each), {players} players each, --players / -P; fragstat with default settings{}; median of {repeat} interleaved runs\n",
        if extra.is_empty() { String::new() } else { format!(" plus {}", extra.join(" ")) });
    println!("| condition | tool | wall s | CPU s | CPU µs / server answered | peak RSS MiB | answered (min) | with players (min) |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let floor_wall = floors
        .iter()
        .find(|(k, _)| *k == "getstatus")
        .map(|(_, r)| median(r.iter().map(|x| x.0).collect()));
    for (cond, ours, theirs) in &rows {
        for (tool, runs) in [("fragstat", ours), ("qstat", theirs)] {
            if runs.is_empty() {
                continue;
            }
            let wall = median(runs.iter().map(|r| r.seconds).collect());
            let cpu = median(runs.iter().map(|r| r.cpu).collect());
            let rss = median(runs.iter().map(|r| r.rss_kib as f64).collect()) / 1024.0;
            let answered = runs.iter().map(|r| r.answered).min().unwrap_or(0);
            let per = cpu / answered.max(1) as f64 * 1e6;
            let players = runs
                .iter()
                .filter_map(|r| r.with_players)
                .min()
                .map_or("-".to_string(), |p| p.to_string());
            println!("| {cond} | {tool} | {wall:.3} | {cpu:.3} | {per:.1} | {rss:.1} | {answered} | {players} |");
        }
        if !theirs.is_empty() {
            let o = median(ours.iter().map(|r| r.seconds).collect());
            let t = median(theirs.iter().map(|r| r.seconds).collect());
            let oc = median(ours.iter().map(|r| r.cpu).collect());
            let tc = median(theirs.iter().map(|r| r.cpu).collect());
            println!(
                "| {cond} | fragstat ÷ qstat | wall {:.2} | CPU {:.2} | | | | |",
                o / t,
                oc / tc
            );
        }
        if let (Some(fw), true) = (floor_wall, cond == "lossless") {
            for (tool, runs) in [("fragstat", ours), ("qstat", theirs)] {
                if !runs.is_empty() {
                    let w = median(runs.iter().map(|r| r.seconds).collect());
                    println!(
                        "| {cond} | {tool} ÷ farm floor (getstatus) | wall {:.2} | | | | | |",
                        w / fw
                    );
                }
            }
        }
    }
    for (kind, runs) in &floors {
        let wall = median(runs.iter().map(|r| r.0).collect());
        let replies = runs.iter().map(|r| r.1).min().unwrap_or(0);
        println!("| lossless | farm floor: minimal blaster, {kind}, 1,024 servers in flight | {wall:.3} | | | | {replies} replies | |");
    }
    Ok(())
}

fn bench_master_cmd(args: &[String]) -> Result<()> {
    let servers: usize = flag(args, "--servers").map_or(Ok(10_000), |s| s.parse())?;
    run(Command::new("cargo").args(["build", "--release", "-q", "-p", "fragstat-cli"]))?;
    let dpmaster = flag(args, "--dpmaster").map(PathBuf::from);
    bench_master::bench_master(
        &root().join("target/release/fragstat"),
        servers,
        dpmaster.as_deref(),
    )
}

fn bench_attack_cmd(args: &[String]) -> Result<()> {
    if !args.iter().any(|a| a == "--inside-netns") {
        run(Command::new("cargo").args(["build", "--release", "-q", "-p", "fragstat-cli"]))?;
    }
    bench_attack::bench_attack(args, &root().join("target/release/fragstat"))
}

/// The cargo-fuzz targets: `fuzz/fuzz_targets/<name>.rs`, sorted.
fn fuzz_targets() -> Result<Vec<String>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root().join("fuzz/fuzz_targets"))? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "rs") {
            if let Some(stem) = p.file_stem() {
                out.push(stem.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Copies the fixtures `target` is seeded with into `corpus`: a target named `<family>_…`
/// gets that family's `ok/` and `err/` datagrams, any other target every family's. Returns
/// how many.
fn seed_corpus(
    target: &str,
    dirs: &[(String, fragstat_testkit::fixtures::Kind, PathBuf)],
    corpus: &Path,
) -> Result<usize> {
    let own: Vec<_> = dirs
        .iter()
        .filter(|(family, _, _)| target.starts_with(&format!("{family}_")))
        .collect();
    let seeds = if own.is_empty() {
        dirs.iter().collect()
    } else {
        own
    };
    std::fs::create_dir_all(corpus)?;
    let mut copied = 0;
    for (family, kind, dir) in seeds {
        for e in std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "bin") {
                let name = p.file_name().context("file name")?.to_string_lossy();
                std::fs::copy(&p, corpus.join(format!("{family}-{}-{name}", kind.dir())))?;
                copied += 1;
            }
        }
    }
    Ok(copied)
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
    let dirs = fragstat_testkit::fixtures::case_dirs(&fragstat_testkit::fixtures::root())
        .map_err(anyhow::Error::msg)?;
    let targets = fuzz_targets()?;
    if targets.is_empty() {
        bail!("no fuzz targets in fuzz/fuzz_targets");
    }
    for t in &targets {
        let corpus = root().join("fuzz/corpus").join(t);
        let copied = seed_corpus(t, &dirs, &corpus)?;
        eprintln!("xtask: {t}: {copied} fixtures seeded into fuzz/corpus/{t}");
        run(Command::new("cargo")
            .args(["fuzz", "run", "--sanitizer", "none", t])
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .env("RUSTC_BOOTSTRAP", "1"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_codec_crates_and_sees_tokio_where_it_is() {
        let packages = workspace_packages().unwrap();
        let codecs: Vec<&str> = codec_crates(&packages)
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert!(codecs.contains(&"fragstat-quake3-oob"), "{codecs:?}");
        assert!(!codecs.contains(&"fragstat-core") && !codecs.contains(&"fragstat"));
        // The check can fail: with its client feature, the codec pulls in tokio.
        assert!(tokio_in_tree("fragstat-quake3-oob", true).unwrap().0);
        assert!(!tokio_in_tree("fragstat-quake3-oob", false).unwrap().0);
    }

    #[test]
    fn fuzz_corpora_come_from_every_fixture_folder() {
        let tree = tempfile::tempdir().unwrap();
        for f in [
            "quake3/ok/a.bin",
            "quake3/err/b.bin",
            "quake3/ok/a.json",
            "idtech4/ok/c.bin",
            "idtech4/err/d.bin",
        ] {
            let p = tree.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, f).unwrap();
        }
        let dirs = fragstat_testkit::fixtures::case_dirs(tree.path()).unwrap();
        let seeded = |t: &str| {
            let corpus = tempfile::tempdir().unwrap();
            let n = seed_corpus(t, &dirs, corpus.path()).unwrap();
            let mut names: Vec<String> = std::fs::read_dir(corpus.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            assert_eq!(n, names.len());
            names
        };
        assert_eq!(
            seeded("quake3_decode"),
            ["quake3-err-b.bin", "quake3-ok-a.bin"]
        );
        assert_eq!(
            seeded("idtech4_decode"),
            ["idtech4-err-d.bin", "idtech4-ok-c.bin"]
        );
        assert_eq!(seeded("anything").len(), 4);
        // The real tree seeds the quake3 targets.
        let real =
            fragstat_testkit::fixtures::case_dirs(&fragstat_testkit::fixtures::root()).unwrap();
        let corpus = tempfile::tempdir().unwrap();
        assert!(seed_corpus("quake3_decode", &real, corpus.path()).unwrap() >= 20);
    }
}
