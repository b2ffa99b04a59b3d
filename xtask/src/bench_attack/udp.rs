//! The UDP attacks: reflection from spoofed victims, a heartbeat flood while real servers
//! register, and spoofed delisting.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::{Asker, Target, GETSERVERS, GETSERVERS_EXT, HEARTBEAT};
use crate::bench_master::{start, Proc};

/// 40 hosts × 30 emulated servers heartbeating to `master`; waits until `want` are listed.
pub(super) fn farm(bin: &Path, master: SocketAddr, want: usize) -> Result<(Vec<Proc>, Duration)> {
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
pub(super) struct Tally {
    pub(super) victims: u64,
    pub(super) requests: u64,
    pub(super) bytes_in: u64,
    pub(super) wire_in: u64,
    pub(super) datagrams_out: u64,
    pub(super) bytes_out: u64,
    pub(super) wire_out: u64,
}

impl Tally {
    pub(super) fn add(&mut self, o: &Tally) {
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
pub(super) fn reflection(t: &Target) -> Result<BTreeMap<String, Tally>> {
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
pub(super) struct FloodResult {
    pub(super) baseline: Option<f64>,
    pub(super) under_flood: Vec<Option<f64>>,
    pub(super) sent: u64,
}

pub(super) fn heartbeat_flood(bin: &Path, t: &Target) -> Result<FloodResult> {
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
pub(super) fn delisting(t: &Target) -> Result<(bool, u32)> {
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
