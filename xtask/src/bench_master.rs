//! `cargo xtask bench master`: a real `fragstat master-server` with a farm of emulated servers
//! heartbeating to it. Reports registration CPU and memory per server, full-list latency,
//! lists per second with 32 requests in flight, what a burst of 1,000 requests from one socket
//! gets, and the amplification a flood sees with the default limits — beside dpmaster 2.2's
//! figures measured on this kind of machine.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// A child process killed on drop.
pub(crate) struct Proc(pub(crate) Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn clk_tck() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// CPU seconds (user + system) of a running process.
fn cpu_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .map(|(_, r)| r.split(' ').collect())
        .unwrap_or_default();
    let t = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (t(11) + t(12)) / clk_tck()
}

/// Resident memory of a running process, bytes.
fn rss_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Starts `fragstat ARGS` and collects the `PREFIX ADDR` lines it prints before `ready`; its
/// log goes to this process's stderr when `log`, else nowhere (a master logs every
/// registration at info: writing them costs what dpmaster's log costs it, sent to /dev/null
/// too).
pub(crate) fn start(
    bin: &Path,
    args: &[&str],
    prefix: &str,
    log: bool,
) -> Result<(Proc, Vec<SocketAddr>)> {
    let mut child = Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(if log { Stdio::inherit() } else { Stdio::null() })
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let proc_ = Proc(child);
    let mut addrs = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if line == "ready" {
            return Ok((proc_, addrs));
        }
        if let Some(a) = line.strip_prefix(prefix) {
            addrs.push(a.trim().parse()?);
        }
    }
    bail!("fragstat {} exited before it was ready", args.join(" "))
}

const REQUEST: &[u8] = b"\xff\xff\xff\xffgetservers 68 empty full\n";

/// Asks for the full list once; returns (servers listed, datagrams, bytes) or None on timeout.
fn full_list(sock: &UdpSocket, master: SocketAddr) -> Option<(usize, usize, usize)> {
    sock.send_to(REQUEST, master).ok()?;
    let mut buf = [0u8; 2048];
    let (mut servers, mut datagrams, mut bytes) = (0, 0, 0);
    loop {
        let (n, _) = sock.recv_from(&mut buf).ok()?;
        let d = buf.get(..n)?;
        datagrams += 1;
        bytes += n;
        let body = d.get(22..)?;
        let last = body.ends_with(b"\\EOT\0\0\0");
        servers += body.len().saturating_sub(if last { 7 } else { 0 }) / 7;
        if last {
            return Some((servers, datagrams, bytes));
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// What one master did in the benchmark.
struct Figures {
    registered: usize,
    registered_in: f64,
    cpu_per_registration: f64,
    rss_per_server: f64,
    shape: (usize, usize, usize),
    latency_ms: f64,
    lists_per_sec: f64,
    burst: usize,
}

/// Registers a farm of `servers` with the running master `pid` at `master`, then times lists.
fn measure(bin: &Path, servers: usize, pid: u32, master: SocketAddr) -> Result<Figures> {
    std::thread::sleep(Duration::from_millis(300));
    let (cpu0, rss0) = (cpu_of(pid), rss_of(pid));
    let t0 = Instant::now();
    let (_farm, farm) = start(
        bin,
        &[
            "serve",
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            &servers.to_string(),
            "--heartbeat",
            &master.to_string(),
        ],
        "server ",
        false,
    )?;
    if farm.len() != servers {
        bail!("the farm started {} of {servers} servers", farm.len());
    }
    let sock = UdpSocket::bind("127.0.0.1:0")?;
    sock.set_read_timeout(Some(Duration::from_secs(2)))?;
    // Until every server is listed, or the count has not grown for 5 s (a master that lost
    // heartbeats: the farm sends each one once).
    let (mut listed, mut grown) = (0, Instant::now());
    while t0.elapsed() < Duration::from_secs(60) && grown.elapsed() < Duration::from_secs(5) {
        if let Some((n, _, _)) = full_list(&sock, master) {
            if n > listed {
                (listed, grown) = (n, Instant::now());
            }
            if n >= servers {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let registered_in = if listed >= servers {
        t0.elapsed().as_secs_f64()
    } else {
        grown.saturating_duration_since(t0).as_secs_f64()
    };
    // Let the master settle (timers, allocator) before reading its counters.
    std::thread::sleep(Duration::from_millis(500));
    let cpu = cpu_of(pid) - cpu0;
    let rss = rss_of(pid).saturating_sub(rss0);
    if listed == 0 {
        bail!("no server registered");
    }

    let mut lat = Vec::new();
    let mut shape = (0, 0, 0);
    for _ in 0..30 {
        let t = Instant::now();
        if let Some(s) = full_list(&sock, master) {
            lat.push(t.elapsed().as_secs_f64() * 1e3);
            shape = s;
        }
    }

    // 32 clients, each asking again as soon as its list is complete.
    let stop = Instant::now() + Duration::from_secs(3);
    let lists: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..32)
            .map(|_| {
                s.spawn(move || {
                    let Ok(sock) = UdpSocket::bind("127.0.0.1:0") else {
                        return 0;
                    };
                    let _ = sock.set_read_timeout(Some(Duration::from_millis(500)));
                    let mut n = 0;
                    while Instant::now() < stop {
                        if full_list(&sock, master).is_some_and(|(k, _, _)| k >= listed) {
                            n += 1;
                        }
                    }
                    n
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    });

    // A burst of 1,000 requests from one socket: how many complete lists come back.
    let burst = UdpSocket::bind("127.0.0.1:0")?;
    burst.set_read_timeout(Some(Duration::from_millis(500)))?;
    for _ in 0..1000 {
        burst.send_to(REQUEST, master)?;
    }
    let mut buf = [0u8; 2048];
    let mut complete = 0;
    while let Ok((n, _)) = burst.recv_from(&mut buf) {
        if buf.get(..n).is_some_and(|d| d.ends_with(b"\\EOT\0\0\0")) {
            complete += 1;
        }
    }
    Ok(Figures {
        registered: listed,
        registered_in,
        cpu_per_registration: cpu / listed as f64 * 1e6,
        rss_per_server: rss as f64 / listed as f64,
        shape,
        latency_ms: median(lat),
        lists_per_sec: lists as f64 / 3.0,
        burst: complete,
    })
}

/// dpmaster (a binary built beside the project, never part of it) on 127.0.0.1, its limits
/// lifted as far as its options go, measured the same way.
fn measure_dpmaster(bin: &Path, dpmaster: &Path, servers: usize) -> Result<Figures> {
    let port = UdpSocket::bind("127.0.0.1:0")?.local_addr()?.port();
    let room = (servers * 2).to_string();
    let child = Command::new(dpmaster)
        .args([
            "-l",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "--allow-loopback",
        ])
        .args(["-n", &room, "-N", &room, "-H", "16", "--hash-ports"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", dpmaster.display()))?;
    let proc_ = Proc(child);
    measure(
        bin,
        servers,
        proc_.0.id(),
        SocketAddr::from(([127, 0, 0, 1], port)),
    )
}

/// The benchmark; with `dpmaster`, the same measurement of that binary in the same run.
pub fn bench_master(bin: &Path, servers: usize, dpmaster: Option<&Path>) -> Result<()> {
    let (master_proc, maddrs) = start(
        bin,
        &[
            "master-server",
            "--listen",
            "127.0.0.1:0",
            "--allow-loopback",
            "--no-limits",
            "--max-per-address",
            "1000000",
            "--max-servers",
            "1000000",
        ],
        "master ",
        false,
    )?;
    let master = *maddrs.first().context("master address")?;
    let ours = measure(bin, servers, master_proc.0.id(), master)?;
    drop(master_proc);
    let theirs = dpmaster
        .map(|d| measure_dpmaster(bin, d, servers))
        .transpose()?;
    let mut buf = [0u8; 2048];

    // Amplification with the default limits: one source floods requests for 10 s.
    let (limited, laddrs) = start(
        bin,
        &[
            "master-server",
            "--listen",
            "127.0.0.1:0",
            "--allow-loopback",
            "--max-per-address",
            "1000000",
            // Only the farm's registrations are let through faster; list requests keep the
            // default rate and byte budget.
            "--heartbeat-rate",
            "1000000",
            "--heartbeat-burst",
            "1000000",
            "--net-challenge-rate",
            "1000000",
            "--challenge-rate",
            "1000000",
        ],
        "master ",
        false,
    )?;
    let lmaster = *laddrs.first().context("master address")?;
    let (_farm2, _) = start(
        bin,
        &[
            "serve",
            "q3",
            "--listen",
            "127.0.0.1:0",
            "--count",
            &servers.min(10_000).to_string(),
            "--heartbeat",
            &lmaster.to_string(),
        ],
        "server ",
        false,
    )?;
    std::thread::sleep(Duration::from_secs(3));
    let probe = UdpSocket::bind("127.0.0.2:0")?;
    probe.set_read_timeout(Some(Duration::from_secs(2)))?;
    let flood_list = full_list(&probe, lmaster).map_or(0, |(n, _, _)| n);
    let flood = UdpSocket::bind("127.0.0.1:0")?;
    flood.set_nonblocking(true)?;
    let (mut sent, mut got) = (0usize, 0usize);
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        for _ in 0..10 {
            if flood.send_to(REQUEST, lmaster).is_ok() {
                sent += REQUEST.len();
            }
        }
        while let Ok((n, _)) = flood.recv_from(&mut buf) {
            got += n;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(limited);

    println!("{servers} emulated servers heartbeating on loopback:");
    println!("| measure | fragstat master-server | dpmaster, this run | dpmaster 2.2 (issue 8) |");
    println!("| --- | --- | --- | --- |");
    let col = |f: &dyn Fn(&Figures) -> String| theirs.as_ref().map_or("–".to_string(), f);
    println!(
        "| registered | {} in {:.2} s | {} | – |",
        ours.registered,
        ours.registered_in,
        col(&|t| format!("{} in {:.2} s", t.registered, t.registered_in))
    );
    println!(
        "| CPU per registration | {:.1} µs | {} | 12 µs |",
        ours.cpu_per_registration,
        col(&|t| format!("{:.1} µs", t.cpu_per_registration))
    );
    println!(
        "| memory per server (RSS growth) | {:.0} B | {} | 312 B |",
        ours.rss_per_server,
        col(&|t| format!("{:.0} B", t.rss_per_server))
    );
    let list = |f: &Figures| {
        format!(
            "{} servers, {} datagrams, {:.0} KB, median {:.2} ms",
            f.shape.0,
            f.shape.1,
            f.shape.2 as f64 / 1e3,
            f.latency_ms
        )
    };
    println!(
        "| full list | {} | {} | 52 datagrams / 71 KB, 0.5-0.9 ms |",
        list(&ours),
        col(&list)
    );
    println!(
        "| full lists/s, 32 in flight | {:.0} | {} | 2,700-3,600 |",
        ours.lists_per_sec,
        col(&|t| format!("{:.0}", t.lists_per_sec))
    );
    println!(
        "| burst of 1,000 requests, one socket | {} full lists | {} | ~260 |",
        ours.burst,
        col(&|t| format!("{} full lists", t.burst))
    );
    println!(
        "| 10 s flood of 10,000 requests/s from one source, default limits, {flood_list}-server list | {:.0} KB sent for {:.0} KB of requests (× {:.2}) | – | ≈ × 2,500 (throttle off) |",
        got as f64 / 1e3,
        sent as f64 / 1e3,
        got as f64 / sent.max(1) as f64
    );
    Ok(())
}
