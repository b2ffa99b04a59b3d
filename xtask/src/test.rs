//! `cargo xtask test`: the Debian packages and the fake DDNet clients the real-server tests
//! need, `cargo test --workspace`, the check that the core and every codec stay free of tokio,
//! and the fuzz targets' build.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use fragstat_testkit::{in_ci, which};

use crate::{root, run};

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
    npm_install(&prefix, TWBOTS_PACKAGE, &modules.join("teeworlds"))?;
    Ok(modules.join("teeworlds").is_dir().then_some(modules))
}

/// `npm install PACKAGE` into `prefix` unless `installed` (a path the package brings) is
/// there already; nothing when npm is missing (the callers say what that means).
fn npm_install(prefix: &Path, package: &str, installed: &Path) -> Result<()> {
    if installed.exists() || which("npm").is_none() {
        return Ok(());
    }
    std::fs::create_dir_all(prefix)?;
    run(Command::new("npm")
        .args(["install", "--no-save", "--prefix"])
        .arg(prefix)
        .arg(package))
}

/// The GeoIP database the tracker's country tests read: the CC0 npm package of
/// ip-location-db (country by IP, from the RIRs' data), installed under `target/geoip` and
/// passed to the tests as `FRAGSTAT_GEOIP_MMDB`.
const GEOIP_PACKAGE: &str = "@ip-location-db/geo-whois-asn-country-mmdb@2.3.2026061719";

/// Installs the GeoIP test database when it is missing; the `.mmdb` file, or `None` when
/// npm is not there.
pub(crate) fn ensure_geoip() -> Result<Option<PathBuf>> {
    let prefix = root().join("target/geoip");
    let file = prefix
        .join("node_modules/@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb");
    npm_install(&prefix, GEOIP_PACKAGE, &file)?;
    Ok(file.is_file().then_some(file))
}

/// The file Debian's `fonts-noto-color-emoji` installs.
const EMOJI_FONT: &str = "/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf";

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
    // The tracker's pages show country flags as emoji: without a colour emoji font,
    // Chromium's screenshots draw them as letter pairs (a package with no program to find).
    if !Path::new(EMOJI_FONT).is_file() {
        missing.push("fonts-noto-color-emoji");
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
pub(crate) struct Package {
    pub(crate) name: String,
    pub(crate) features: Vec<String>,
    /// What its `default` feature turns on.
    pub(crate) default_features: Vec<String>,
    /// `(kind, name)` of each target (`lib`, `bench`…).
    pub(crate) targets: Vec<(String, String)>,
}

/// The workspace's packages (`cargo metadata --no-deps`).
pub(crate) fn workspace_packages() -> Result<Vec<Package>> {
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
            default_features: strings(&p["features"]["default"]),
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

/// The family codec crates: workspace members named `fragstat-*` with an `emulate` feature
/// (their emulators; the codec alone is sans-IO).
pub(crate) fn codec_crates(packages: &[Package]) -> Vec<&Package> {
    packages
        .iter()
        .filter(|p| p.name.starts_with("fragstat-") && p.features.iter().any(|f| f == "emulate"))
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

/// Fails when `package`'s default features turn anything on (its emulators are opt-in,
/// issue 32), or it does not build without its default features: the codec alone (no
/// emulators) must stay a crate of its own.
fn check_codec_alone(package: &Package) -> Result<()> {
    if let Some(on) = package.default_features.iter().find(|f| !f.is_empty()) {
        bail!(
            "{}: a family crate turns nothing on by default (found {on:?}): emulators are opt-in",
            package.name
        );
    }
    run(Command::new("cargo")
        .args(["check", "--quiet", "--lib", "--no-default-features", "-p"])
        .arg(&package.name)
        .current_dir(root()))?;
    eprintln!("xtask: {} builds without its emulators", package.name);
    Ok(())
}

pub(crate) fn test() -> Result<()> {
    ensure_packages()?;
    let mut cargo = Command::new("cargo");
    cargo.args(["test", "--workspace"]);
    if let Some(modules) = ensure_twbots()? {
        cargo.env("FRAGSTAT_TWBOTS", modules);
    }
    if let Some(mmdb) = ensure_geoip()? {
        cargo.env("FRAGSTAT_GEOIP_MMDB", mmdb);
    }
    run(&mut cargo)?;
    // The core and every codec must stay sans-IO: no tokio in their normal dependency tree.
    let packages = workspace_packages()?;
    let codecs = codec_crates(&packages);
    if codecs.is_empty() {
        bail!("no family codec crates found (workspace fragstat-* crates with an emulate feature)");
    }
    check_no_tokio("fragstat-core")?;
    for p in codecs {
        check_no_tokio(&p.name)?;
        check_codec_alone(p)?;
    }
    // The facade without its default features (no HTTP, no emulators: a query-only library)
    // must build, warnings refused: its feature gates are checked nowhere else.
    run(Command::new("cargo")
        .args([
            "clippy",
            "--quiet",
            "--lib",
            "--no-default-features",
            "-p",
            "fragstat",
        ])
        .args(["--", "-D", "warnings"])
        .current_dir(root()))?;
    eprintln!("xtask: fragstat builds without its default features");
    node_tests()?;
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

/// The Node.js binding's suite (bindings/node): `npm install` (the lockfile's versions; its
/// install script builds the addon with cargo; not `npm ci`, which would delete the
/// `node_modules` a second copy of the suite is using) and `npm test`, against the CLI `cargo test` built (its emulators).
/// Without Node.js it is skipped, loudly; under CI that fails (`ensure_packages` installs it).
fn node_tests() -> Result<()> {
    if which("npm").is_none() || which("node").is_none() {
        if in_ci() {
            bail!("the Node.js binding's tests need node and npm");
        }
        eprintln!("xtask: WARNING: node/npm missing: the Node.js binding's tests are SKIPPED");
        return Ok(());
    }
    // The package needs Node.js 20 (`engines`; `node --test --test-concurrency`); Debian
    // bookworm's own `nodejs` is 18.
    let version = Command::new("node")
        .arg("--version")
        .output()
        .context("node --version")?;
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let major: u32 = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major < 20 {
        let msg = format!("the Node.js binding's tests need Node.js 20 or later, found {version}");
        if in_ci() {
            bail!("{msg}");
        }
        eprintln!("xtask: WARNING: {msg}: they are SKIPPED");
        return Ok(());
    }
    let dir = root().join("bindings/node");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    let in_dir = |args: &[&str]| -> Result<()> {
        eprintln!("xtask: running npm {} in bindings/node", args.join(" "));
        let status = Command::new("npm")
            .args(args)
            .current_dir(&dir)
            .env("FRAGSTAT_BIN", target.join("debug/fragstat"))
            .status()
            .context("starting npm")?;
        if !status.success() {
            bail!("npm {} (bindings/node) failed: {status}", args.join(" "));
        }
        Ok(())
    };
    in_dir(&["install", "--no-audit", "--no-fund"])?;
    in_dir(&["test"])?;
    eprintln!("xtask: the Node.js binding's tests passed");
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
        // The check can fail: the core with its default `runtime` pulls in tokio.
        assert!(tokio_in_tree("fragstat-core", true).unwrap().0);
        assert!(!tokio_in_tree("fragstat-core", false).unwrap().0);
        // A family crate has none by default (nothing on by default, issue 32).
        assert!(!tokio_in_tree("fragstat-quake3-oob", true).unwrap().0);
        for p in codec_crates(&packages) {
            assert!(p.default_features.is_empty(), "{}", p.name);
        }
    }
}
