//! Headless Chromium (Debian `chromium`) for end-to-end tests of pages served on loopback:
//! the DOM after the page's scripts ran, and a screenshot. Each run gets a fresh profile and
//! the flags that keep Chromium off the network (no background requests, no updates, no
//! sync, no QUIC).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::require;

/// Headless Chromium.
#[derive(Debug)]
pub struct Chromium {
    bin: PathBuf,
}

impl Chromium {
    /// `None` when chromium is not installed (and not in CI, where this fails instead).
    pub fn find() -> Option<Chromium> {
        let bin = require("chromium", "chromium")?;
        Some(Chromium { bin })
    }

    fn run(&self, args: &[String], url: &str) -> std::process::Output {
        let profile = tempfile::Builder::new()
            .prefix("fragstat-chromium-")
            .tempdir()
            .expect("temp dir");
        let out = Command::new(&self.bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(args)
            .arg(url)
            .output()
            .expect("run chromium");
        assert!(
            out.status.success(),
            "chromium failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// The DOM of `url` after `budget_ms` of virtual time (timers and fetches run).
    pub fn dump_dom(&self, url: &str, budget_ms: u32) -> String {
        let out = self.run(
            &[
                format!("--virtual-time-budget={budget_ms}"),
                "--dump-dom".to_string(),
            ],
            url,
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Writes a PNG screenshot of `url` (after `budget_ms` of virtual time) to `file`
    /// (written beside it first and renamed, so two suites writing the same file never see
    /// half of one).
    pub fn screenshot(&self, url: &str, file: &Path, width: u32, height: u32, budget_ms: u32) {
        self.screenshot_with(url, file, (width, height), budget_ms, &[]);
    }

    /// [`Chromium::screenshot`] with more flags (`--blink-settings=preferredColorScheme=1`
    /// for a page's light theme).
    pub fn screenshot_with(
        &self,
        url: &str,
        file: &Path,
        (width, height): (u32, u32),
        budget_ms: u32,
        flags: &[&str],
    ) {
        if let Some(d) = file.parent() {
            std::fs::create_dir_all(d).expect("screenshot dir");
        }
        let part = file.with_extension(format!("{}.part.png", std::process::id()));
        let mut args = vec![
            format!("--virtual-time-budget={budget_ms}"),
            format!("--window-size={width},{height}"),
            format!("--screenshot={}", part.display()),
            "--hide-scrollbars".to_string(),
        ];
        args.extend(flags.iter().map(|f| f.to_string()));
        self.run(&args, url);
        let meta = std::fs::metadata(&part).expect("screenshot written");
        assert!(
            meta.len() > 1000,
            "screenshot too small: {} bytes",
            meta.len()
        );
        std::fs::rename(&part, file).expect("screenshot renamed into place");
    }
}
