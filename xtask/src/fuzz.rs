//! `cargo xtask fuzz`: every cargo-fuzz target run with its corpus seeded from the fixtures.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::{flag, root, run};

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

pub(crate) fn fuzz(args: &[String]) -> Result<()> {
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
