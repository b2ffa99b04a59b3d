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
use std::net::{IpAddr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::bench_master::{start, Proc};

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

/// 40 hosts × 30 emulated servers heartbeating to `master`; waits until `want` are listed.
fn farm(bin: &Path, master: SocketAddr, want: usize) -> Result<(Vec<Proc>, Duration)> {
    let t0 = Instant::now();
    let mut procs = Vec::new();
    for h in 0..40u8 {
        let listen = format!("127.10.{h}.1:0");
        let (p, _) = start(
            bin,
            &[
                "serve",
                "q3",
                "--listen",
                &listen,
                "--count",
                "30",
                "--heartbeat",
                &master.to_string(),
            ],
            "server ",
            false,
        )?;
        procs.push(p);
    }
    let mut asker = Asker { next: 0 };
    let mut best = 0;
    while t0.elapsed() < Duration::from_secs(120) {
        let n = asker.ask(master).map_or(0, |l| l.len());
        best = best.max(n);
        if n >= want {
            return Ok((procs, t0.elapsed()));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    bail!("only {best} of {want} servers listed")
}

/// What the victims of one network got.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    victims: u64,
    requests: u64,
    bytes_in: u64,
    wire_in: u64,
    datagrams_out: u64,
    bytes_out: u64,
    wire_out: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.victims += o.victims;
        self.requests += o.requests;
        self.bytes_in += o.bytes_in;
        self.wire_in += o.wire_in;
        self.datagrams_out += o.datagrams_out;
        self.bytes_out += o.bytes_out;
        self.wire_out += o.wire_out;
    }
}

/// IP + UDP header bytes of one datagram.
fn header(ip: &IpAddr) -> u64 {
    if ip.is_ipv4() {
        28
    } else {
        48
    }
}

/// One request from each victim, spread evenly over 10 s; what each network got back.
fn reflection(t: &Target) -> Result<BTreeMap<String, Tally>> {
    let mut victims: Vec<(String, SocketAddr)> = Vec::new();
    for net in 0..20u8 {
        for host in 0..=255u8 {
            victims.push((
                format!("127.1.{net}.0/24"),
                SocketAddr::from(([127, 1, net, host], 40_000)),
            ));
        }
    }
    for i in 0..2560u128 {
        let ip = Ipv6Addr::from((0x2001_0db8_0001_0000u128 << 64) | (i + 1));
        victims.push((
            "2001:db8:1::/64".into(),
            SocketAddr::new(IpAddr::V6(ip), 40_000),
        ));
    }
    for net in 0..10u128 {
        for i in 0..256u128 {
            let ip = Ipv6Addr::from(((0x2001_0db8_0002_0000u128 | net) << 64) | (i + 1));
            victims.push((
                format!("2001:db8:2:{net:x}::/64"),
                SocketAddr::new(IpAddr::V6(ip), 40_000),
            ));
        }
    }
    // Interleave the networks so every one is asked for over the whole 10 s.
    let n = victims.len();
    let order: Vec<usize> = {
        let mut o: Vec<usize> = (0..n).collect();
        let mut rng = fastrand_lite(7);
        for i in (1..n).rev() {
            o.swap(i, (rng() % (i as u64 + 1)) as usize);
        }
        o
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (v4, v6) = (t.v4, t.v6);
    let tallies = rt.block_on(async move {
        let start = tokio::time::Instant::now() + Duration::from_millis(500);
        let end = start + Duration::from_secs(13);
        let mut tasks = Vec::new();
        for (slot, &i) in order.iter().enumerate() {
            let (net, addr) = victims[i].clone();
            let sock = match tokio::net::UdpSocket::bind(addr).await {
                Ok(s) => s,
                Err(e) => return Err(anyhow::anyhow!("binding {addr}: {e}")),
            };
            let at = start + Duration::from_secs(10) * slot as u32 / n as u32;
            tasks.push(tokio::spawn(async move {
                let mut t = Tally {
                    victims: 1,
                    ..Tally::default()
                };
                tokio::time::sleep_until(at).await;
                let (req, to) = if addr.is_ipv4() {
                    (GETSERVERS, v4)
                } else {
                    (GETSERVERS_EXT, v6)
                };
                if sock.send_to(req, to).await.is_ok() {
                    t.requests += 1;
                    t.bytes_in += req.len() as u64;
                    t.wire_in += req.len() as u64 + header(&addr.ip());
                }
                let mut buf = vec![0u8; 2048];
                loop {
                    tokio::select! {
                        r = sock.recv_from(&mut buf) => if let Ok((k, _)) = r {
                            t.datagrams_out += 1;
                            t.bytes_out += k as u64;
                            t.wire_out += k as u64 + header(&addr.ip());
                        },
                        () = tokio::time::sleep_until(end) => break,
                    }
                }
                (net, t)
            }));
        }
        let mut by_net: BTreeMap<String, Tally> = BTreeMap::new();
        for task in tasks {
            let (net, t) = task.await?;
            by_net.entry(net).or_default().add(&t);
        }
        Ok::<_, anyhow::Error>(by_net)
    })?;
    Ok(tallies)
}

/// A small deterministic generator (the order of the victims).
fn fastrand_lite(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Starts `fragstat serve q3 --count 1` on `ip` heartbeating to `master`: the process, its
/// address and when it was ready (it heartbeats then).
fn real_server(bin: &Path, ip: [u8; 4], master: SocketAddr) -> Result<(Proc, SocketAddr, Instant)> {
    let listen = format!("{}:0", IpAddr::from(ip));
    let (p, addrs) = start(
        bin,
        &[
            "serve",
            "q3",
            "--listen",
            &listen,
            "--count",
            "1",
            "--heartbeat",
            &master.to_string(),
        ],
        "server ",
        false,
    )?;
    Ok((p, *addrs.first().context("server address")?, Instant::now()))
}

/// Seconds until `addr` is listed (None past `cap`).
fn time_to_list(
    asker: &mut Asker,
    master: SocketAddr,
    addr: SocketAddr,
    since: Instant,
    cap: Duration,
) -> Option<f64> {
    while since.elapsed() < cap {
        if asker.ask(master).is_some_and(|l| l.contains(&addr)) {
            return Some(since.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// What the heartbeat flood did.
struct FloodResult {
    baseline: Option<f64>,
    under_flood: Vec<Option<f64>>,
    sent: u64,
}

fn heartbeat_flood(bin: &Path, t: &Target) -> Result<FloodResult> {
    let mut asker = Asker { next: 10_000 };
    // Without a flood first.
    let (p, addr, at) = real_server(bin, [127, 0, 49, 1], t.v4)?;
    let baseline = time_to_list(&mut asker, t.v4, addr, at, Duration::from_secs(30));
    drop(p);
    let mut socks = Vec::new();
    for i in 0..8192u32 {
        let ip = [
            127,
            20 + (i / 65_536) as u8,
            (i / 256 % 256) as u8,
            (i % 256) as u8,
        ];
        let s = UdpSocket::bind(SocketAddr::from((ip, 50_000)))?;
        s.set_nonblocking(true)?;
        socks.push(s);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let (stop2, sent2, master) = (Arc::clone(&stop), Arc::clone(&sent), t.v4);
    let flooder = std::thread::spawn(move || {
        let t0 = Instant::now();
        let mut k = 0u64;
        while !stop2.load(Ordering::Relaxed) {
            // 2,500 a second, in bursts of 25 every 10 ms.
            let due = (t0.elapsed().as_secs_f64() * 2500.0) as u64;
            while k < due {
                let s = &socks[(k % socks.len() as u64) as usize];
                if s.send_to(HEARTBEAT, master).is_ok() {
                    sent2.fetch_add(1, Ordering::Relaxed);
                }
                // Drain what the master answered (challenges) so the buffers stay small.
                let mut b = [0u8; 64];
                while s.recv_from(&mut b).is_ok() {}
                k += 1;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    std::thread::sleep(Duration::from_secs(5));
    let mut under_flood = Vec::new();
    for k in 0..5u8 {
        let (p, addr, at) = real_server(bin, [127, 0, 50, k + 1], t.v4)?;
        under_flood.push(time_to_list(
            &mut asker,
            t.v4,
            addr,
            at,
            Duration::from_secs(30),
        ));
        drop(p);
        std::thread::sleep(Duration::from_secs(1));
    }
    stop.store(true, Ordering::Relaxed);
    let _ = flooder.join();
    Ok(FloodResult {
        baseline,
        under_flood,
        sent: sent.load(Ordering::Relaxed),
    })
}

/// A server like ioq3's: heartbeats every `every`, answers every `getinfo` with its info.
fn mini_server(
    addr: SocketAddr,
    master: SocketAddr,
    every: Duration,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>> {
    let s = UdpSocket::bind(addr)?;
    s.set_read_timeout(Some(Duration::from_millis(100)))?;
    Ok(std::thread::spawn(move || {
        let mut next = Instant::now();
        let mut buf = [0u8; 512];
        while !stop.load(Ordering::Relaxed) {
            if Instant::now() >= next {
                let _ = s.send_to(HEARTBEAT, master);
                next += every;
            }
            if let Ok((n, from)) = s.recv_from(&mut buf) {
                let d = &buf[..n];
                if let Some(ch) = d.strip_prefix(b"\xff\xff\xff\xffgetinfo ") {
                    let ch: Vec<u8> = ch
                        .iter()
                        .copied()
                        .take_while(|b| !b.is_ascii_whitespace())
                        .collect();
                    let mut r = b"\xff\xff\xff\xffinfoResponse\n\\protocol\\68\\sv_maxclients\\8\\clients\\1\\hostname\\victim\\challenge\\".to_vec();
                    r.extend_from_slice(&ch);
                    let _ = s.send_to(&r, from);
                }
            }
        }
    }))
}

/// Whether the spoofer ever got the server delisted: seconds it was missing from the list.
fn delisting(t: &Target) -> Result<(bool, u32)> {
    let server = SocketAddr::from(([127, 0, 70, 7], 27960));
    let stop = Arc::new(AtomicBool::new(false));
    let srv = mini_server(server, t.v4, Duration::from_secs(10), Arc::clone(&stop))?;
    let mut asker = Asker { next: 20_000 };
    if time_to_list(
        &mut asker,
        t.v4,
        server,
        Instant::now(),
        Duration::from_secs(30),
    )
    .is_none()
    {
        stop.store(true, Ordering::Relaxed);
        let _ = srv.join();
        bail!("{}: the server never registered", t.name);
    }
    let spoof = UdpSocket::bind("127.0.70.7:1")?;
    spoof.set_nonblocking(true)?;
    let drain = UdpSocket::bind("127.0.70.7:5555")?;
    drain.set_nonblocking(true)?;
    // The host's list budget spent (18 requests), then heartbeats from another port of the
    // host twice a second for 60 s.
    for _ in 0..18 {
        let _ = drain.send_to(GETSERVERS, t.v4);
    }
    let t0 = Instant::now();
    let mut missing = 0;
    let mut next_check = t0;
    while t0.elapsed() < Duration::from_secs(60) {
        let _ = spoof.send_to(HEARTBEAT, t.v4);
        let mut b = [0u8; 2048];
        while spoof.recv_from(&mut b).is_ok() {}
        while drain.recv_from(&mut b).is_ok() {}
        if Instant::now() >= next_check {
            if !asker.ask(t.v4).is_some_and(|l| l.contains(&server)) {
                missing += 1;
            }
            next_check += Duration::from_secs(1);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let still = asker.ask(t.v4).is_some_and(|l| l.contains(&server));
    stop.store(true, Ordering::Relaxed);
    let _ = srv.join();
    Ok((still, missing))
}

/// What the HTTP floods did.
struct HttpResult {
    baseline: Option<f64>,
    under_flood: Option<f64>,
    idle: (u64, u64),
    slow: (u64, u64),
    counters: Vec<(String, String)>,
}

/// Starts `fragstat ARGS`: the process and the lines it printed before `ready`.
fn start_lines(bin: &Path, args: &[&str]) -> Result<(Proc, Vec<String>)> {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let p = Proc(child);
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if line == "ready" {
            return Ok((p, lines));
        }
        lines.push(line);
    }
    bail!("fragstat {} exited before it was ready", args.join(" "))
}

/// GET over plain HTTP (the metrics): the body.
fn http_get(addr: SocketAddr, path: &str) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    );
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// Seconds from a DDNet server's start until `servers.json` lists its 0.6 and 0.7 addresses.
fn ddnet_register_time(
    rt: &tokio::runtime::Runtime,
    name: &str,
    base: &str,
    https: SocketAddr,
    bundle: &Path,
    connector: &tokio_rustls::TlsConnector,
) -> Result<Option<f64>> {
    use fragstat_testkit::games::{Ddnet, DdnetConfig, Register};
    let server = Ddnet::start(DdnetConfig {
        name: name.into(),
        map: "Tutorial".into(),
        max_clients: 8,
        register: Some(Register {
            url: format!("{base}register"),
            ca_bundle: bundle.to_path_buf(),
        }),
        ..Default::default()
    })
    .context("DDNet-Server did not start")?;
    let t0 = Instant::now();
    let want = [
        format!("tw-0.6+udp://{}", server.addr),
        format!("tw-0.7+udp://{}", server.addr),
    ];
    while t0.elapsed() < Duration::from_secs(60) {
        let body = rt
            .block_on(fragstat_testkit::flood::https_get(
                connector,
                https,
                "/ddnet/15/servers.json",
            ))
            .unwrap_or_default();
        if want.iter().all(|a| body.contains(a.as_str())) {
            return Ok(Some(t0.elapsed().as_secs_f64()));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(None)
}

fn http_floods(bin: &Path) -> Result<Option<HttpResult>> {
    use fragstat_testkit::flood::{hold, test_ca, tls_connector, Flood};
    if fragstat_testkit::which("DDNet-Server").is_none() {
        eprintln!("xtask: DDNet-Server is not installed (Debian ddnet-server): no HTTP scenario");
        return Ok(None);
    }
    let dir = std::env::temp_dir().join(format!("fragstat-bench-attack-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (chain, key, ca) = test_ca();
    let (cert, key_path, bundle) = (
        dir.join("cert.pem"),
        dir.join("key.pem"),
        dir.join("ca.pem"),
    );
    std::fs::write(&cert, chain)?;
    std::fs::write(&key_path, key)?;
    std::fs::write(&bundle, &ca)?;
    let (_master, lines) = start_lines(
        bin,
        &[
            "master-server",
            "--listen",
            "127.0.0.1:0",
            "--allow-loopback",
            "--metrics",
            "127.0.0.1:0",
            "--ddnet-listen",
            "127.0.0.1:0",
            "--tls-cert",
            cert.to_str().context("path")?,
            "--tls-key",
            key_path.to_str().context("path")?,
        ],
    )?;
    let field = |prefix: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(prefix))
            .map(str::to_string)
            .context(prefix.to_string())
    };
    let list_url = field("ddnet ")?;
    let base = list_url
        .strip_suffix("servers.json")
        .context("the DDNet list URL")?
        .to_string();
    let metrics_url = field("metrics ")?;
    let addr_of = |url: &str| -> Result<SocketAddr> {
        Ok(url
            .split("://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .context("address")?
            .parse()?)
    };
    let (https, metrics) = (addr_of(&base)?, addr_of(&metrics_url)?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let connector = tls_connector(&ca);
    let baseline = ddnet_register_time(&rt, "baseline", &base, https, &bundle, &connector)?;
    let idle = Arc::new(Flood::default());
    let slow = Arc::new(Flood::default());
    for h in 0..30u8 {
        for _ in 0..10 {
            rt.spawn(hold(
                Arc::clone(&idle),
                IpAddr::from([127, 0, 101, h + 1]),
                https,
                None,
            ));
        }
    }
    for h in 0..10u8 {
        for _ in 0..6 {
            rt.spawn(hold(
                Arc::clone(&slow),
                IpAddr::from([127, 0, 102, h + 1]),
                https,
                Some(connector.clone()),
            ));
        }
    }
    for h in 0..5u8 {
        for _ in 0..10 {
            rt.spawn(hold(
                Arc::clone(&idle),
                IpAddr::from([127, 0, 103, h + 1]),
                metrics,
                None,
            ));
        }
    }
    std::thread::sleep(Duration::from_secs(3));
    let under_flood = ddnet_register_time(&rt, "under a flood", &base, https, &bundle, &connector)?;
    // Hold the floods a while longer so every timeout has fired.
    std::thread::sleep(Duration::from_secs(12));
    let text = http_get(metrics, "/metrics");
    let counters = text
        .lines()
        .filter(|l| {
            l.starts_with("fragstat_ddnet_http_") || l.starts_with("fragstat_metrics_http_")
        })
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    idle.stop.store(true, Ordering::Relaxed);
    slow.stop.store(true, Ordering::Relaxed);
    let load = |f: &Flood| {
        (
            f.opened.load(Ordering::Relaxed),
            f.closed_by_server.load(Ordering::Relaxed),
        )
    };
    let r = HttpResult {
        baseline,
        under_flood,
        idle: load(&idle),
        slow: load(&slow),
        counters,
    };
    rt.shutdown_background();
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Some(r))
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

fn print_http(h: &HttpResult) {
    let secs = |v: &Option<f64>| v.map_or("not within 60 s".to_string(), |s| format!("{s:.2} s"));
    println!();
    println!("## HTTP floods against --ddnet-listen (HTTPS) and --metrics while a real DDNet server registers\n");
    println!("300 idle connections from 30 hosts and 60 TLS connections with register bodies that stop short from 10 hosts against the DDNet master, 50 idle ones from 5 hosts against the metrics; each reopened as soon as the master closes it.\n");
    println!("| measure | value |");
    println!("| --- | --- |");
    println!(
        "| DDNet 0.6 + 0.7 listed, no flood | {} |",
        secs(&h.baseline)
    );
    println!(
        "| DDNet 0.6 + 0.7 listed, under the floods | {} |",
        secs(&h.under_flood)
    );
    println!(
        "| idle connections opened / closed by the master | {} / {} |",
        h.idle.0, h.idle.1
    );
    println!(
        "| slow-body connections opened / closed by the master | {} / {} |",
        h.slow.0, h.slow.1
    );
    for (k, v) in &h.counters {
        println!("| `{k}` | {v} |");
    }
}

fn kb(b: u64) -> String {
    format!("{:.1} KB", b as f64 / 1e3)
}

fn print_reports(reports: &[Report]) {
    println!("## Reflection: 1,200 servers listed; one list request from each of 10,240 victims in 10 s\n");
    for r in reports {
        println!(
            "### {} (1,200 servers registered in {:.1} s)\n",
            r.name, r.registered_in
        );
        println!("| victim network | victims | requests | bytes in (payload / wire) | datagrams out | bytes out (payload / wire) | amplification (payload / wire) |");
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        let mut all = Tally::default();
        let mut v4 = Tally::default();
        let mut v6_other = Tally::default();
        for (net, t) in &r.reflection {
            all.add(t);
            if net.starts_with("127.") {
                v4.add(t);
            } else if net.starts_with("2001:db8:2:") {
                v6_other.add(t);
            }
        }
        let row = |name: &str, t: &Tally| {
            println!(
                "| {name} | {} | {} | {} / {} | {} | {} / {} | × {:.1} / × {:.1} |",
                t.victims,
                t.requests,
                kb(t.bytes_in),
                kb(t.wire_in),
                t.datagrams_out,
                kb(t.bytes_out),
                kb(t.wire_out),
                t.bytes_out as f64 / t.bytes_in.max(1) as f64,
                t.wire_out as f64 / t.wire_in.max(1) as f64
            );
        };
        let max_v4 = r
            .reflection
            .iter()
            .filter(|(n, _)| n.starts_with("127."))
            .max_by_key(|(_, t)| t.bytes_out);
        if let Some((n, t)) = max_v4 {
            row(&format!("the IPv4 /24 that got most ({n})"), t);
        }
        row("all 20 IPv4 /24s", &v4);
        if let Some(t) = r.reflection.get("2001:db8:1::/64") {
            row("one IPv6 /64 (2,560 victims)", t);
        }
        row("ten IPv6 /64s (256 victims each)", &v6_other);
        row("**in all**", &all);
        println!();
    }
    println!("## Heartbeat flood: 2,500 spoofed heartbeats/s from 8,192 addresses; a real server (`fragstat serve q3`) starts during it\n");
    println!(
        "| master | heartbeats sent | registered without a flood | under the flood (5 servers) |"
    );
    println!("| --- | --- | --- | --- |");
    let secs = |v: &Option<f64>| v.map_or("not within 30 s".to_string(), |s| format!("{s:.2} s"));
    for r in reports {
        let f = &r.flood;
        let under: Vec<String> = f.under_flood.iter().map(secs).collect();
        println!(
            "| {} | {} | {} | {} |",
            r.name,
            f.sent,
            secs(&f.baseline),
            under.join(", ")
        );
    }
    println!();
    println!("## Spoofed delisting: heartbeats twice a second from another port of a listed server's host, its host's list budget spent, 60 s (fragstat: expiry 20 s; the server heartbeats every 10 s)\n");
    println!("| master | still listed after 60 s | seconds missing from the list |");
    println!("| --- | --- | --- |");
    for r in reports {
        println!(
            "| {} | {} | {} |",
            r.name,
            if r.delisted.0 { "yes" } else { "**no**" },
            r.delisted.1
        );
    }
}
