//! Tests that need addresses of their own run in a private network namespace (`unshare -n`):
//! the test binary runs the same test again inside one, where the only interface is a fresh
//! loopback, so nothing it sends can leave the machine and no other program listens there.

use std::process::Command;

use crate::in_ci;

/// Set in the environment of the copy that runs inside the namespace.
const INSIDE: &str = "FRAGSTAT_IN_PRIVATE_NETNS";

/// Whether this process runs as root (a namespace, a bind mount…).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Where the calling test is.
#[derive(Debug)]
pub enum Netns {
    /// Inside the namespace, loopback up: run the test's body.
    Inside,
    /// Outside: the copy inside ran and passed; its stdout and stderr.
    Ran(String),
    /// Not root, and not under `CI` (where this fails instead): the test prints `SKIPPED`.
    Skipped,
}

/// Runs test `name` of the current test binary again in a private network namespace, or,
/// in that copy, brings its loopback up and says so.
///
/// # Panics
/// When the copy inside fails (with its output), or under `CI` without root.
pub fn private_netns(name: &str) -> Netns {
    if std::env::var_os(INSIDE).is_some() {
        // Nothing but loopback here (/proc/self/net is this process's namespace).
        let ifaces: Vec<String> = std::fs::read_to_string("/proc/self/net/dev")
            .expect("/proc/self/net/dev")
            .lines()
            .skip(2)
            .filter_map(|l| l.split(':').next())
            .map(|n| n.trim().to_string())
            .collect();
        assert_eq!(ifaces, ["lo"], "not a fresh network namespace");
        let up = Command::new("ip")
            .args(["link", "set", "lo", "up"])
            .status()
            .expect("ip link");
        assert!(up.success(), "ip link set lo up");
        return Netns::Inside;
    }
    if !is_root() {
        let msg = "needs root for a private network namespace (unshare -n)";
        assert!(!in_ci(), "{msg}");
        eprintln!("SKIPPED (not in CI): {msg}");
        return Netns::Skipped;
    }
    let out = Command::new("unshare")
        .arg("-n")
        .arg("--")
        .arg(std::env::current_exe().expect("the test binary"))
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1")
        .output()
        .expect("unshare -n");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    Netns::Ran(text)
}
