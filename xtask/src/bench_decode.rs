//! `cargo xtask bench decode`: the criterion `decode` benchmarks.

use std::process::Command;

use anyhow::{bail, Result};

use crate::run;
use crate::test::{codec_crates, workspace_packages};

/// The criterion `decode` bench of every codec crate that has one.
pub(crate) fn bench_decode() -> Result<()> {
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
