//! `cargo xtask test-copies [--copies N] [--rounds R]`: every integration test binary (the
//! testkit's real-server tests, the CLI's, the tracker's pipeline) run as N copies of the
//! suite at the same time on this machine, R rounds, `CI=true` — the proof that tests take
//! their ports and wait for their servers without racing each other (docs/testing.md).
//! Each copy runs the binaries one after another, as `cargo test` does; the second copy
//! runs them in reverse order, so different tests meet in each round. Logs go to
//! `target/test-copies/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::test::{ensure_packages, ensure_twbots};
use crate::{flag, root};

/// The packages whose integration tests start real servers and processes.
const PACKAGES: [&str; 3] = ["fragstat-testkit", "fragstat-cli", "fragstat-tracker"];

/// One integration test binary: its name, executable and package directory.
struct TestBin {
    name: String,
    exe: PathBuf,
    dir: PathBuf,
}

/// Builds the integration tests of [`PACKAGES`] and returns their binaries.
fn build() -> Result<Vec<TestBin>> {
    let mut cmd = Command::new("cargo");
    cmd.args(["test", "--no-run", "--message-format=json"]);
    for p in PACKAGES {
        cmd.args(["-p", p]);
    }
    let out = cmd
        .current_dir(root())
        .stderr(Stdio::inherit())
        .output()
        .context("cargo test --no-run")?;
    if !out.status.success() {
        bail!("building the tests failed");
    }
    let mut bins = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(m) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if m["reason"] != "compiler-artifact" || m["target"]["kind"] != serde_json::json!(["test"])
        {
            continue;
        }
        let (Some(exe), Some(name), Some(manifest)) = (
            m["executable"].as_str(),
            m["target"]["name"].as_str(),
            m["manifest_path"].as_str(),
        ) else {
            continue;
        };
        bins.push(TestBin {
            name: name.to_string(),
            exe: exe.into(),
            dir: Path::new(manifest)
                .parent()
                .context("manifest dir")?
                .to_path_buf(),
        });
    }
    bins.sort_by(|a, b| a.name.cmp(&b.name));
    if bins.is_empty() {
        bail!("no integration test binaries found");
    }
    Ok(bins)
}

/// What one copy of the suite did in one round.
struct CopyRun {
    copy: usize,
    seconds: f64,
    failed: Vec<String>,
}

fn run_copy(
    bins: &[TestBin],
    copy: usize,
    round: usize,
    logs: &Path,
    twbots: Option<&Path>,
) -> Result<CopyRun> {
    let start = Instant::now();
    let mut failed = Vec::new();
    let order: Vec<&TestBin> = if copy % 2 == 1 {
        bins.iter().rev().collect()
    } else {
        bins.iter().collect()
    };
    for b in order {
        let log = logs.join(format!("round{round}-copy{copy}-{}.log", b.name));
        let file = std::fs::File::create(&log)?;
        let mut cmd = Command::new(&b.exe);
        cmd.current_dir(&b.dir)
            .env("CI", "true")
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file);
        if let Some(m) = twbots {
            cmd.env("FRAGSTAT_TWBOTS", m);
        }
        let status = cmd
            .status()
            .with_context(|| format!("running {}", b.exe.display()))?;
        if !status.success() {
            failed.push(format!("{} ({})", b.name, log.display()));
        }
    }
    Ok(CopyRun {
        copy,
        seconds: start.elapsed().as_secs_f64(),
        failed,
    })
}

/// The command.
pub fn test_copies(args: &[String]) -> Result<()> {
    let copies: usize = flag(args, "--copies").map_or(Ok(2), |v| v.parse())?;
    let rounds: usize = flag(args, "--rounds").map_or(Ok(1), |v| v.parse())?;
    if copies == 0 || rounds == 0 {
        bail!("--copies and --rounds take a positive number");
    }
    ensure_packages()?;
    let twbots = ensure_twbots()?;
    let bins = build()?;
    let logs = root().join("target/test-copies");
    std::fs::create_dir_all(&logs)?;
    eprintln!(
        "xtask: {} integration test binaries ({}), {copies} copies at once, {rounds} rounds",
        bins.len(),
        bins.iter()
            .map(|b| b.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut any_failed = false;
    for round in 1..=rounds {
        let start = Instant::now();
        let runs: Vec<Result<CopyRun>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..copies)
                .map(|c| {
                    let (bins, logs, twbots) = (&bins, &logs, twbots.as_deref());
                    s.spawn(move || run_copy(bins, c, round, logs, twbots))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| bail!("a copy's thread panicked"))
                })
                .collect()
        });
        let wall = start.elapsed().as_secs_f64();
        for r in runs {
            let r = r?;
            let verdict = if r.failed.is_empty() {
                "all passed".to_string()
            } else {
                any_failed = true;
                format!("FAILED: {}", r.failed.join(", "))
            };
            eprintln!(
                "xtask: round {round}, copy {}: {:.1} s, {verdict}",
                r.copy + 1,
                r.seconds
            );
        }
        eprintln!("xtask: round {round}: {wall:.1} s wall for {copies} copies at once");
    }
    if any_failed {
        bail!("a copy of the suite failed (logs in {})", logs.display());
    }
    eprintln!("xtask: every copy of every round passed");
    Ok(())
}
