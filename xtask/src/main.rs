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
//!   [--lossless-only] [--no-qstat] [--baseline PATH] [-- FRAGSTAT-ARGS]` — N emulated
//!   servers on loopback (one `serve` process per address 127.0.0.1…A), a full `--players`
//!   scan timed with fragstat (default settings plus FRAGSTAT-ARGS) and with qstat, lossless
//!   and lossy, interleaved: wall, CPU, CPU per server answered, peak RSS, and the farm's floor
//!   (a minimal blaster). `--baseline PATH` times another fragstat binary (an earlier build)
//!   in the same rounds, taking turns with this one, and prints the ratios.
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
//! - `bench track [--rounds N] [--servers N] [--players N] [--search-days D]
//!   [--prefill-hours H] [--prefill-days D] [--postgres URL]` — the tracker's storage under a
//!   churn model (`crates/tracker/examples/track_bench.rs`, docs/tracker.md "Scale"): rounds
//!   of 10,000 servers written through the real store into a temp SQLite file (or the
//!   PostgreSQL database named) on top of a bulk-loaded steady state (a day of per-round
//!   series, a week of sessions and buckets, 30 days of players), the bytes each table grows
//!   by, each round's write and upkeep, and a 30-day player search; prints `projected
//!   storage: X GB/day`, `round write: median X s, 90th percentile Y s, max Z s` and `player
//!   search (30 days): X ms`.
//! - `bench node [--runs N] [--servers N] [--players K] [--clients LIST] [--pool N]` — the
//!   Node.js binding against node-gamedig (`bindings/node/bench/scan.js`): N emulated Quake III
//!   servers on loopback (default 1,000 with 5 players) queried from one Node process per run,
//!   the clients taking turns: wall, CPU, peak RSS, min/median/max (docs/benchmarks.md).
//! - `fuzz [--seconds N]` — runs every cargo-fuzz target (`fuzz/fuzz_targets/*.rs`, needs
//!   `cargo install cargo-fuzz`), its corpus seeded from every `tests/fixtures/*/{ok,err}`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

mod bench_attack;
mod bench_decode;
mod bench_master;
mod bench_node;
mod bench_scan;
mod capture;
mod completions;
mod copies;
mod fuzz;
mod test;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test::test(),
        Some("test-copies") => copies::test_copies(&args[1..]),
        Some("capture") => capture::capture(&args[1..]),
        Some("bench") => match args.get(1).map(String::as_str) {
            Some("scan") => bench_scan::bench_scan(&args[2..]),
            Some("master") => bench_master_cmd(&args[2..]),
            Some("attack") => bench_attack_cmd(&args[2..]),
            Some("decode") => bench_decode::bench_decode(),
            Some("track") => bench_track(&args[2..]),
            Some("node") => bench_node::bench_node(&args[2..]),
            _ => Err(anyhow::anyhow!(
                "usage: cargo xtask bench scan|master|attack|decode|track|node"
            )),
        },
        Some("fuzz") => fuzz::fuzz(&args[1..]),
        Some("completions") => completions::completions(&args[1..]),
        _ => {
            eprintln!("usage: cargo xtask test | test-copies [--copies N] [--rounds R] | capture GAME ADDR NAME | bench scan|master|attack|decode|track|node | fuzz [--seconds N] | completions [--out DIR]");
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

/// `bench track`: the storage bench, an example of the tracker crate run in release.
fn bench_track(args: &[String]) -> Result<()> {
    run(Command::new("cargo")
        .args([
            "run",
            "--release",
            "-q",
            "-p",
            "fragstat-tracker",
            "--example",
            "track_bench",
            "--",
        ])
        .args(args))
}

fn bench_attack_cmd(args: &[String]) -> Result<()> {
    if !args.iter().any(|a| a == "--inside-netns") {
        run(Command::new("cargo").args(["build", "--release", "-q", "-p", "fragstat-cli"]))?;
    }
    bench_attack::bench_attack(args, &root().join("target/release/fragstat"))
}
