//! The HTTP floods: idle connections and slow register bodies against the DDNet listener
//! and the metrics while a real DDNet server registers.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::bench_master::Proc;

/// What the HTTP floods did.
pub(super) struct HttpResult {
    pub(super) baseline: Option<f64>,
    pub(super) under_flood: Option<f64>,
    pub(super) idle: (u64, u64),
    pub(super) slow: (u64, u64),
    pub(super) counters: Vec<(String, String)>,
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

pub(super) fn http_floods(bin: &Path) -> Result<Option<HttpResult>> {
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
