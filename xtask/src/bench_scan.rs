//! `cargo xtask bench scan`: an emulated server farm on loopback scanned by fragstat and
//! by qstat, timed, against the floor of a minimal blaster.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use fragstat_testkit::which;

use crate::{flag, root, run};

/// A running `fragstat serve`, killed on drop.
struct Serve {
    child: Child,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An emulated server farm: one `fragstat serve` process per loopback address
/// (127.0.0.1, 127.0.0.2…), the servers shared out evenly (a process may hold about 20,000
/// sockets under this machine's file limit).
struct Farm {
    _serves: Vec<Serve>,
    servers: Vec<SocketAddr>,
}

fn start_farm(
    bin: &Path,
    count: usize,
    players: usize,
    loss: f64,
    addresses: usize,
) -> Result<Farm> {
    let addresses = addresses.clamp(1, 250);
    let mut serves = Vec::new();
    for a in 0..addresses {
        let n = count / addresses + usize::from(a < count % addresses);
        if n == 0 {
            continue;
        }
        let child = Command::new(bin)
            .args([
                "serve",
                "q3",
                "--listen",
                &format!("127.0.0.{}:0", a + 1),
                "--count",
                &n.to_string(),
                "--players",
                &players.to_string(),
            ])
            .args(["--drop", &loss.to_string()])
            // Every server is asked by fragstat, qstat and the blaster in turn, repeatedly:
            // the engines' flood limits (on by default) would drop some of it.
            .arg("--no-rate-limit")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        serves.push((Serve { child }, n));
    }
    let mut servers = Vec::with_capacity(count);
    let mut kept = Vec::new();
    for (mut serve, n) in serves {
        let stdout = serve.child.stdout.take().context("serve stdout")?;
        let mut got = 0;
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            if line == "ready" {
                break;
            }
            if let Some(a) = line.strip_prefix("server ") {
                servers.push(a.parse()?);
                got += 1;
            }
        }
        if got != n {
            bail!("fragstat serve started {got} of {n} servers");
        }
        kept.push(serve);
    }
    Ok(Farm {
        _serves: kept,
        servers,
    })
}

/// CPU seconds (user + system) used by this process's waited-for children so far, and their
/// descendants (`getrusage(RUSAGE_CHILDREN)`: microseconds, where GNU time and
/// `/proc/self/stat` round to 10 ms, 7 % of a 0.15 s scan).
fn children_cpu() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0.0, |u| {
        let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        secs(u.user_time()) + secs(u.system_time())
    })
}

struct Run {
    seconds: f64,
    /// CPU seconds the client used.
    cpu: f64,
    /// The client's peak resident set, KiB (from GNU time; 0 when it is not installed).
    rss_kib: u64,
    answered: usize,
    /// Answered with a player list (fragstat reports servers whose getstatus was lost on
    /// every attempt as online without players).
    with_players: Option<usize>,
}

/// Runs `program args` to completion under GNU time when it is installed; returns wall
/// time, CPU (user + system), peak RSS in KiB and standard output. The CPU includes GNU
/// time's own (about 2 ms with the exec of a trivial program), the same for every tool.
fn run_timed(program: &Path, args: &[std::ffi::OsString]) -> Result<(f64, f64, u64, String, bool)> {
    let gnu_time = Path::new("/usr/bin/time");
    let report = std::env::temp_dir().join(format!("fragstat-time-{}", std::process::id()));
    let mut cmd = if gnu_time.exists() {
        let mut c = Command::new(gnu_time);
        c.args(["-f", "%M", "-o"]).arg(&report).arg(program);
        c
    } else {
        Command::new(program)
    };
    cmd.args(args).stderr(Stdio::null());
    let cpu0 = children_cpu();
    let start = Instant::now();
    let out = cmd.output()?;
    let seconds = start.elapsed().as_secs_f64();
    let cpu = children_cpu() - cpu0;
    let mut rss = 0;
    if gnu_time.exists() {
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        // The last line holds the figures (earlier ones: "Command exited with non-zero status").
        let f: Vec<&str> = text
            .lines()
            .last()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        // Only the peak RSS: CPU comes from getrusage (above), GNU time prints it to 10 ms.
        if let [m] = f[..] {
            rss = m.parse().unwrap_or(0);
        }
        let _ = std::fs::remove_file(&report);
    }
    Ok((
        seconds,
        cpu,
        rss,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.success(),
    ))
}

fn os(args: &[&str]) -> Vec<std::ffi::OsString> {
    args.iter().map(Into::into).collect()
}

/// fragstat with its default settings (timeout, retries, concurrency, adaptive timeouts).
fn time_fragstat(bin: &Path, list: &Path, extra: &[String]) -> Result<Run> {
    let mut args = os(&["query", "q3", "-f"]);
    args.push(list.into());
    args.extend(os(&["--players", "--format", "ndjson"]));
    args.extend(extra.iter().map(Into::into));
    let (seconds, cpu, rss_kib, text, ok) = run_timed(bin, &args)?;
    if !ok {
        bail!("fragstat query failed");
    }
    let answered = text
        .lines()
        .filter(|l| l.contains("\"status\":\"online\""))
        .count();
    let with_players = text.lines().filter(|l| l.contains("\"players\":[")).count();
    Ok(Run {
        seconds,
        cpu,
        rss_kib,
        answered,
        with_players: Some(with_players),
    })
}

fn time_qstat(qstat: &Path, list: &Path) -> Result<Run> {
    let mut args = os(&["-default", "q3s", "-f"]);
    args.push(list.into());
    args.extend(os(&[
        "-P",
        "-maxsim",
        "2000",
        "-sendinterval",
        "0",
        "-raw",
        ",",
    ]));
    let (seconds, cpu, rss_kib, text, _) = run_timed(qstat, &args)?;
    // Server lines are "Q3S,addr,name,…"; unanswered ones "Q3S,addr,TIMEOUT" (or DOWN/ERROR).
    let answered = text
        .lines()
        .filter(|l| l.starts_with("Q3S,"))
        .filter(|l| {
            !matches!(
                l.split(',').nth(2),
                Some("TIMEOUT" | "DOWN" | "ERROR" | "HOSTNOTFOUND") | None
            )
        })
        .count();
    Ok(Run {
        seconds,
        cpu,
        rss_kib,
        answered,
        with_players: None,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The farm's floor: a minimal client (no decoding, no retries, no output) that sends each
/// server `requests` (with `window` servers in flight, as fragstat's default concurrency)
/// and counts replies. Returns (seconds until the last reply, replies, CPU seconds of this
/// thread are not measured: the blaster runs in this process).
fn blast(servers: &[SocketAddr], requests: &[&[u8]], window: usize) -> Result<(f64, usize)> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    let _ = socket.set_recv_buffer_size(8 << 20);
    let _ = socket.set_send_buffer_size(8 << 20);
    socket.bind(&SocketAddr::from(([0, 0, 0, 0], 0)).into())?;
    let socket: std::net::UdpSocket = socket.into();
    socket.set_read_timeout(Some(std::time::Duration::from_millis(300)))?;
    let index: std::collections::HashMap<SocketAddr, usize> =
        servers.iter().enumerate().map(|(i, a)| (*a, i)).collect();
    let mut missing = vec![requests.len(); servers.len()];
    let mut buf = vec![0u8; 65_536];
    let (mut next, mut in_flight, mut replies, mut done) = (0usize, 0usize, 0usize, 0usize);
    let start = Instant::now();
    let mut last = start;
    while done < servers.len() {
        while in_flight < window.max(1) && next < servers.len() {
            for r in requests {
                socket.send_to(r, servers[next])?;
            }
            next += 1;
            in_flight += 1;
        }
        match socket.recv_from(&mut buf) {
            Ok((_, from)) => {
                last = Instant::now();
                replies += 1;
                if let Some(m) = index.get(&from).and_then(|&i| missing.get_mut(i)) {
                    if *m > 0 {
                        *m -= 1;
                        if *m == 0 {
                            done += 1;
                            in_flight -= 1;
                        }
                    }
                }
            }
            // Nothing for 300 ms: what is missing was lost.
            Err(_) => break,
        }
    }
    Ok(((last - start).as_secs_f64(), replies))
}

pub(crate) fn bench_scan(args: &[String]) -> Result<()> {
    let servers: usize = flag(args, "--servers").map_or(Ok(10_000), |s| s.parse())?;
    let players: usize = flag(args, "--players").map_or(Ok(4), |s| s.parse())?;
    let loss: f64 = flag(args, "--loss").map_or(Ok(0.2), |s| s.parse())?;
    let repeat: usize = flag(args, "--repeat").map_or(Ok(3), |s| s.parse())?;
    // One address per 10,000 servers (a serve process per address), at most 10.
    let addresses: usize = flag(args, "--addresses")
        .map_or(Ok(servers.div_ceil(10_000).clamp(1, 10)), |s| s.parse())?;
    let lossless_only = args.iter().any(|a| a == "--lossless-only");
    let no_qstat = args.iter().any(|a| a == "--no-qstat");
    // Another fragstat binary (an earlier build) timed in the same rounds, taking turns
    // with this one: before and after a change, interleaved on one farm.
    let baseline = flag(args, "--baseline").map(std::path::PathBuf::from);
    // Extra fragstat arguments (after `--`), e.g. to measure a lever switched off.
    let extra: Vec<String> = args
        .iter()
        .position(|a| a == "--")
        .map(|i| args[i + 1..].to_vec())
        .unwrap_or_default();
    run(Command::new("cargo").args(["build", "--release", "-q", "-p", "fragstat-cli"]))?;
    let bin = root().join("target/release/fragstat");
    let qstat = if no_qstat { None } else { which("quakestat") };
    if qstat.is_none() && !no_qstat {
        eprintln!("xtask: quakestat not installed (apt-get install qstat): timing fragstat only");
    }
    let tmp = std::env::temp_dir().join(format!("fragstat-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let mut rows = Vec::new();
    let mut floors = Vec::new();
    let conditions: &[(&str, f64)] = if lossless_only {
        &[("lossless", 0.0)]
    } else {
        &[("lossless", 0.0), ("loss", loss)]
    };
    for &(label, rate) in conditions {
        let farm = start_farm(&bin, servers, players, rate, addresses)?;
        let list = tmp.join(format!("{label}.txt"));
        let mut f = std::fs::File::create(&list)?;
        for s in &farm.servers {
            writeln!(f, "{s}")?;
        }
        drop(f);
        let mut ours = Vec::new();
        let mut base = Vec::new();
        let mut theirs = Vec::new();
        let mut floor_status = Vec::new();
        let mut floor_both = Vec::new();
        for round in 0..repeat.max(1) {
            match &baseline {
                // Turns: baseline first in even rounds, this build first in odd ones.
                Some(b) if round % 2 == 0 => {
                    base.push(time_fragstat(b, &list, &extra)?);
                    ours.push(time_fragstat(&bin, &list, &extra)?);
                }
                Some(b) => {
                    ours.push(time_fragstat(&bin, &list, &extra)?);
                    base.push(time_fragstat(b, &list, &extra)?);
                }
                None => ours.push(time_fragstat(&bin, &list, &extra)?),
            }
            if let Some(q) = &qstat {
                theirs.push(time_qstat(q, &list)?);
            }
            if rate == 0.0 {
                let status: &[&[u8]] = &[b"\xff\xff\xff\xffgetstatus fsbench\n"];
                let both: &[&[u8]] = &[
                    b"\xff\xff\xff\xffgetinfo fsbench\n",
                    b"\xff\xff\xff\xffgetstatus fsbench\n",
                ];
                floor_status.push(blast(&farm.servers, status, 1024)?);
                floor_both.push(blast(&farm.servers, both, 1024)?);
            }
        }
        let condition = if rate > 0.0 {
            format!("{:.0} % of requests dropped", rate * 100.0)
        } else {
            "lossless".into()
        };
        if rate == 0.0 {
            floors.push(("getstatus", floor_status));
            floors.push(("getinfo + getstatus", floor_both));
        }
        rows.push((condition, ours, base, theirs));
    }
    let _ = std::fs::remove_dir_all(&tmp);
    println!("\nScan of {servers} emulated Quake III servers on loopback ({addresses} address(es), one `serve` process each), {players} players each, --players / -P; fragstat with default settings{}; median of {repeat} interleaved runs\n",
        if extra.is_empty() { String::new() } else { format!(" plus {}", extra.join(" ")) });
    println!("| condition | tool | wall s | CPU s | CPU µs / server answered | peak RSS MiB | answered (min) | with players (min) |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let floor_wall = floors
        .iter()
        .find(|(k, _)| *k == "getstatus")
        .map(|(_, r)| median(r.iter().map(|x| x.0).collect()));
    for (cond, ours, base, theirs) in &rows {
        for (tool, runs) in [
            ("fragstat", ours),
            ("fragstat (--baseline)", base),
            ("qstat", theirs),
        ] {
            if runs.is_empty() {
                continue;
            }
            let wall = median(runs.iter().map(|r| r.seconds).collect());
            let cpu = median(runs.iter().map(|r| r.cpu).collect());
            let rss = median(runs.iter().map(|r| r.rss_kib as f64).collect()) / 1024.0;
            let answered = runs.iter().map(|r| r.answered).min().unwrap_or(0);
            let per = cpu / answered.max(1) as f64 * 1e6;
            let players = runs
                .iter()
                .filter_map(|r| r.with_players)
                .min()
                .map_or("-".to_string(), |p| p.to_string());
            println!("| {cond} | {tool} | {wall:.3} | {cpu:.3} | {per:.1} | {rss:.1} | {answered} | {players} |");
        }
        if !base.is_empty() {
            let o = median(ours.iter().map(|r| r.seconds).collect());
            let b = median(base.iter().map(|r| r.seconds).collect());
            let oc = median(ours.iter().map(|r| r.cpu).collect());
            let bc = median(base.iter().map(|r| r.cpu).collect());
            println!(
                "| {cond} | fragstat ÷ baseline | wall {:.2} | CPU {:.2} | | | | |",
                o / b,
                oc / bc
            );
        }
        if !theirs.is_empty() {
            let o = median(ours.iter().map(|r| r.seconds).collect());
            let t = median(theirs.iter().map(|r| r.seconds).collect());
            let oc = median(ours.iter().map(|r| r.cpu).collect());
            let tc = median(theirs.iter().map(|r| r.cpu).collect());
            println!(
                "| {cond} | fragstat ÷ qstat | wall {:.2} | CPU {:.2} | | | | |",
                o / t,
                oc / tc
            );
        }
        if let (Some(fw), true) = (floor_wall, cond == "lossless") {
            for (tool, runs) in [("fragstat", ours), ("qstat", theirs)] {
                if !runs.is_empty() {
                    let w = median(runs.iter().map(|r| r.seconds).collect());
                    println!(
                        "| {cond} | {tool} ÷ farm floor (getstatus) | wall {:.2} | | | | | |",
                        w / fw
                    );
                }
            }
        }
    }
    for (kind, runs) in &floors {
        let wall = median(runs.iter().map(|r| r.0).collect());
        let replies = runs.iter().map(|r| r.1).min().unwrap_or(0);
        println!("| lossless | farm floor: minimal blaster, {kind}, 1,024 servers in flight | {wall:.3} | | | | {replies} replies | |");
    }
    Ok(())
}
