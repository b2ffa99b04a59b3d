//! `cargo xtask bench attack [--dpmaster PATH]`: the attacks of the November 2026 security
//! review run against a real `fragstat master-server` (and, given its binary, dpmaster 2.2 in
//! the same run), in a network namespace the benchmark makes itself (`unshare -n`): its only
//! interface is its own loopback, on which 127.0.0.0/8 and 2001:db8::/32 are local, so not one
//! datagram can leave the machine. "Spoofed" sources are sockets bound to the victims'
//! addresses, which also count what the victims receive.
//!
//! 1. Reflection: 1,200 servers listed (40 hosts × 30), then one list request from each of
//!    10,240 victims in 10 s: 5,120 in 20 IPv4 /24s, 2,560 in one IPv6 /64, 2,560 in ten
//!    /64s. Bytes in and out per victim network and in all, payload and on the wire.
//! 2. Heartbeat flood: 2,500 spoofed heartbeats a second from 8,192 addresses; during it five
//!    real servers (`fragstat serve q3`, which heartbeats and answers challenges like ioq3)
//!    start one after another: how long each takes to be listed.
//! 3. Spoofed delisting: a server heartbeating every 10 s (expiry 20 s where the master has
//!    the option), a spoofer heartbeating twice a second from another port of its host and
//!    spending its host's list budget: is the server ever missing from the list in 60 s?
//! 4. HTTP floods (fragstat only; needs `DDNet-Server`): idle connections and slow register
//!    bodies against `--ddnet-listen` (HTTPS) and idle ones against `--metrics`, reopened as
//!    soon as the master closes them, while a real DDNet 16.4 server registers: how long it
//!    takes with and without the floods, and what the listener counted.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::bench_master::{start, Proc};

mod http;
mod report;
mod udp;

use http::http_floods;
use report::{print_http, print_reports};
use udp::{delisting, farm, heartbeat_flood, reflection, FloodResult, Tally};

/// The dpmaster port inside the namespace (nothing else runs there).
const DP_PORT: u16 = 27950;

const GETSERVERS: &[u8] = b"\xff\xff\xff\xffgetservers 68 empty full\n";
const GETSERVERS_EXT: &[u8] = b"\xff\xff\xff\xffgetserversExt Quake3Arena 68 empty full\n";
const HEARTBEAT: &[u8] = b"\xff\xff\xff\xffheartbeat QuakeArena-1\n";

/// Entry point: outside the namespace, builds and re-runs itself under `unshare -n`.
pub fn bench_attack(args: &[String], fragstat: &Path) -> Result<()> {
    if args.iter().any(|a| a == "--inside-netns") {
        return inside(args, fragstat);
    }
    let me = std::env::current_exe()?;
    let status = Command::new("unshare")
        .arg("-n")
        .arg("--")
        .arg(me)
        .args(["bench", "attack", "--inside-netns"])
        .args(args)
        .status()
        .context("unshare -n (needs root and util-linux)")?;
    if !status.success() {
        bail!("the benchmark failed inside its namespace: {status}");
    }
    Ok(())
}

fn sh(cmd: &[&str]) -> Result<()> {
    let status = Command::new(cmd[0]).args(&cmd[1..]).status()?;
    if !status.success() {
        bail!("{cmd:?}: {status}");
    }
    Ok(())
}

/// The namespace's loopback up, 2001:db8::/32 local on it, binding to any address there
/// allowed, and room for ten thousand sockets.
fn setup_namespace() -> Result<()> {
    sh(&["ip", "link", "set", "lo", "up"])?;
    sh(&["ip", "-6", "addr", "add", "2001:db8::1/128", "dev", "lo"])?;
    sh(&[
        "ip",
        "-6",
        "route",
        "add",
        "local",
        "2001:db8::/32",
        "dev",
        "lo",
    ])?;
    std::fs::write("/proc/sys/net/ipv6/ip_nonlocal_bind", "1")?;
    // Nothing in here but loopback: check it.
    let links = Command::new("ip").args(["-o", "link"]).output()?;
    let text = String::from_utf8_lossy(&links.stdout);
    if text.lines().count() != 1 || !text.contains(": lo:") {
        bail!("the namespace has interfaces besides lo:\n{text}");
    }
    let (_, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)?;
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, hard, hard)?;
    Ok(())
}

/// A master under attack: fragstat or dpmaster.
struct Target {
    name: &'static str,
    v4: SocketAddr,
    v6: SocketAddr,
    _proc: Proc,
}

fn start_fragstat(bin: &Path, extra: &[&str]) -> Result<Target> {
    let mut args = vec![
        "master-server",
        "--listen",
        "127.0.0.1:0",
        "--listen",
        "[2001:db8::1]:0",
        "--allow-loopback",
        // The farm is 1,200 servers in 127.10.0.0/16, over the default 1,024 per /16.
        "--max-per-ipv4-16",
        "4096",
    ];
    args.extend_from_slice(extra);
    let (p, addrs) = start(bin, &args, "master ", false)?;
    let v4 = *addrs.iter().find(|a| a.is_ipv4()).context("v4")?;
    let v6 = *addrs.iter().find(|a| a.is_ipv6()).context("v6")?;
    Ok(Target {
        name: "fragstat",
        v4,
        v6,
        _proc: p,
    })
}

fn start_dpmaster(dp: &Path) -> Result<Target> {
    std::fs::create_dir_all("/var/empty")?;
    let child = Command::new(dp)
        .args([
            "-l",
            "127.0.0.1",
            "-l",
            "2001:db8::1",
            "-p",
            &DP_PORT.to_string(),
        ])
        .arg("--allow-loopback")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", dp.display()))?;
    let p = Proc(child);
    let v4 = SocketAddr::from(([127, 0, 0, 1], DP_PORT));
    let t = Target {
        name: "dpmaster 2.2",
        v4,
        v6: SocketAddr::new(IpAddr::V6("2001:db8::1".parse()?), DP_PORT),
        _proc: p,
    };
    // Ready when it answers a list request.
    let probe = UdpSocket::bind("127.0.0.99:0")?;
    probe.set_read_timeout(Some(Duration::from_millis(200)))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if list_addrs(&probe, v4).is_some() {
            return Ok(t);
        }
    }
    bail!("dpmaster did not answer")
}

/// Asks `master` for the full list from `sock`: the addresses listed, or None on timeout.
fn list_addrs(sock: &UdpSocket, master: SocketAddr) -> Option<Vec<SocketAddr>> {
    let _ = sock.send_to(GETSERVERS, master);
    let mut buf = [0u8; 2048];
    let mut out = Vec::new();
    loop {
        let (n, _) = sock.recv_from(&mut buf).ok()?;
        let d = buf.get(..n)?;
        let body = d.get(22..)?;
        let mut i = 0;
        while let Some(e) = body.get(i..i + 7) {
            if e.first() != Some(&b'\\') || e.starts_with(b"\\EOT") {
                break;
            }
            out.push(SocketAddr::from((
                [e[1], e[2], e[3], e[4]],
                u16::from_be_bytes([e[5], e[6]]),
            )));
            i += 7;
        }
        if body.ends_with(b"\\EOT\0\0\0") {
            return Some(out);
        }
    }
}

/// A client that asks from a new loopback address each time (masters limit requests per
/// address).
struct Asker {
    next: u32,
}

impl Asker {
    fn ask(&mut self, master: SocketAddr) -> Option<Vec<SocketAddr>> {
        self.next += 1;
        let ip = [
            127,
            0,
            60 + (self.next / 250 % 100) as u8,
            (self.next % 250 + 1) as u8,
        ];
        let s = UdpSocket::bind(SocketAddr::from((ip, 0))).ok()?;
        s.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
        list_addrs(&s, master)
    }
}

/// Everything measured against one master.
struct Report {
    name: &'static str,
    registered_in: f64,
    reflection: BTreeMap<String, Tally>,
    flood: FloodResult,
    delisted: (bool, u32),
}

fn run_all(bin: &Path, make: &dyn Fn(&[&str]) -> Result<Target>) -> Result<Report> {
    let t = make(&[])?;
    let (farm_procs, registered_in) = farm(bin, t.v4, 1200)?;
    let reflection = reflection(&t)?;
    drop(farm_procs);
    drop(t);
    let t = make(&[])?;
    let flood = heartbeat_flood(bin, &t)?;
    drop(t);
    let t = make(&["--expiry-s", "20"])?;
    let delisted = delisting(&t)?;
    Ok(Report {
        name: t.name,
        registered_in: registered_in.as_secs_f64(),
        reflection,
        flood,
        delisted,
    })
}

fn inside(args: &[String], bin: &Path) -> Result<()> {
    setup_namespace()?;
    let dp = crate::flag(args, "--dpmaster").map(PathBuf::from);
    let mut reports = vec![run_all(bin, &|extra| start_fragstat(bin, extra))?];
    if let Some(dp) = &dp {
        reports.push(run_all(bin, &|_| start_dpmaster(dp))?);
    }
    print_reports(&reports);
    if !args.iter().any(|a| a == "--no-http") {
        if let Some(h) = http_floods(bin)? {
            print_http(&h);
        }
    }
    Ok(())
}
