//! `cargo xtask bench node`: the Node.js binding against node-gamedig, 1,000 emulated
//! Quake III servers on loopback queried from one Node process
//! (`bindings/node/bench/scan.js`, which does the measuring; this builds what it needs).

use std::process::Command;

use anyhow::{Context, Result};

use crate::{root, run};

/// Builds the release CLI (the emulator: a debug one would be what the bench times) and the
/// addon, installs gamedig when it is missing, then runs the bench with `args` passed on
/// (`--runs N`, `--servers N`, `--clients …`: see scan.js).
pub fn bench_node(args: &[String]) -> Result<()> {
    let node_dir = root().join("bindings/node");
    run(Command::new("cargo").args(["build", "--release", "-q", "-p", "fragstat-cli"]))?;
    // Always: cargo makes it a no-op when the addon is up to date, and a stale addon would
    // be timed otherwise. (`run` works in the workspace root; the script finds its crate.)
    run(Command::new("node").arg("bindings/node/scripts/build.js"))
        .context("building the addon")?;
    if !node_dir.join("node_modules/gamedig").exists() {
        // The lock file's versions (gamedig 5.3.3), and no change to it; no scripts: the
        // package's own `install` would rebuild the addon.
        run(Command::new("npm").args(["ci", "--ignore-scripts", "--prefix", "bindings/node"]))
            .context("installing the dev dependencies")?;
    }
    let bin = std::env::var_os("FRAGSTAT_BIN")
        .unwrap_or_else(|| root().join("target/release/fragstat").into_os_string());
    run(Command::new("node")
        .arg("bindings/node/bench/scan.js")
        .args(args)
        .env("FRAGSTAT_BIN", bin))
}
