//! `cargo xtask completions`: shell completions and the man page.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Result;

use crate::{flag, root};

/// `cargo xtask completions [--out DIR]`: shell completions for bash, zsh, fish, elvish and
/// PowerShell and the man page, generated from the CLI's clap definitions (`fragstat generate`),
/// written under DIR (default `target/dist`): `completions/…` and `man/fragstat.1`.
pub(crate) fn completions(args: &[String]) -> Result<()> {
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
