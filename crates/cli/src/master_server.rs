//! `fragstat master-server`: a dpmaster-compatible master of our own.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use std::io::Write;

use anyhow::Context;
use fragstat_master_server::ddnet::{DdnetLimits, DdnetMaster};
use fragstat_master_server::run::{bind_with, RunConfig};
use fragstat_master_server::{Caps, Config, LimitConfig, ListBudget, Master, Rate};

use crate::usage;

#[derive(Args)]
pub struct MasterServerArgs {
    /// Address to listen on (repeat for several, e.g. 0.0.0.0:27950 and [::]:27950).
    /// Default 0.0.0.0:27950, unless UDP sockets are passed by socket activation
    /// (systemd's `LISTEN_FDS`: a `.socket` unit with `ListenDatagram=`), which are served
    /// as well.
    #[arg(long)]
    listen: Vec<String>,
    /// Most servers listed in all (dpmaster: 4,096). A list longer than --max-reply-kib is
    /// cut to it.
    #[arg(long, default_value_t = 16_384, value_parser = clap::value_parser!(u32).range(1..))]
    max_servers: u32,
    /// Most servers listed per host (IPv4 address, IPv6 /64). The wider caps below are
    /// raised to at least this.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    max_per_address: u32,
    /// Most servers listed per IPv4 /24.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    max_per_ipv4_24: u32,
    /// Most servers listed per IPv4 /16.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    max_per_ipv4_16: u32,
    /// Most servers listed per IPv6 /56.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    max_per_ipv6_56: u32,
    /// Most servers listed per IPv6 /48 (what a tunnel broker gives away).
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    max_per_ipv6_48: u32,
    /// Most servers listed per IPv6 /32.
    #[arg(long, default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..))]
    max_per_ipv6_32: u32,
    /// Seconds a server stays listed after its last verified answer.
    #[arg(long, default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..=31_622_400))]
    expiry_s: u64,
    /// State file: servers are saved to it (atomically) every minute and at shutdown, and
    /// listed again at once after a restart while they are re-verified. Its directory must
    /// exist and be writable; a file that cannot be read as a state file is moved aside.
    #[arg(long)]
    state: Option<PathBuf>,
    /// Accept servers on loopback addresses (tests, a master for one machine).
    #[arg(long)]
    allow_loopback: bool,
    /// Accept servers on private and special-purpose addresses (RFC 1918, CGNAT, link-local,
    /// unique local, 6to4, Teredo, NAT64, documentation, reserved): a LAN master. Loopback
    /// still needs --allow-loopback.
    #[arg(long)]
    allow_private: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long)]
    metrics: Option<String>,
    /// List requests (getservers) allowed per second from one host (IPv4 address, IPv6 /64).
    #[arg(long, default_value_t = 1.0)]
    request_rate: f64,
    /// List requests one host may send at once before its rate applies.
    #[arg(long, default_value_t = 8.0)]
    request_burst: f64,
    /// New servers listed per second on one host (IPv4 address, IPv6 /64), charged when a
    /// server answers its challenge (listed servers are limited per address:port, one
    /// verification per 2 s).
    #[arg(long, default_value_t = 1.0)]
    heartbeat_rate: f64,
    /// New servers one host may list at once (a host restarting all its servers).
    #[arg(long, default_value_t = 64.0)]
    heartbeat_burst: f64,
    /// New servers listed per second in one IPv4 /24 or IPv6 /48 (never below
    /// --heartbeat-rate).
    #[arg(long, default_value_t = 4.0)]
    heartbeat_net_rate: f64,
    /// New servers one IPv4 /24 or IPv6 /48 may list at once (never below
    /// --heartbeat-burst).
    #[arg(long, default_value_t = 256.0)]
    heartbeat_net_burst: f64,
    /// MiB per second of lists the master may send in all: the uplink you grant lists (bursts
    /// of one second's worth). A quarter is kept for networks (IPv4 /16, IPv6 /48) not sent a
    /// list in the last 10 s; each IPv4 /24 or IPv6 /64 may take 1/64 of it, each IPv4 /16 or
    /// IPv6 /32 1/4, each IPv6 /56 1/32 and /48 1/16.
    #[arg(long, default_value_t = 2.0)]
    uplink_mib: f64,
    /// Most KiB of one reply: a longer list is cut to its first datagrams (the end marker on
    /// the last). The default holds every IPv4 list of --max-servers 16384.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(2..=1_048_576))]
    max_reply_kib: u64,
    /// Lists built (a scan and an encode) per second in all; past it a request gets the cached
    /// list, stale, or nothing when no list for it is cached.
    #[arg(long, default_value_t = 100.0)]
    list_builds: f64,
    /// Replaced by --uplink-mib (a usage error).
    #[arg(long, hide = true)]
    send_budget_kib: Option<String>,
    /// Replaced by --uplink-mib (a usage error).
    #[arg(long, hide = true)]
    send_rate_kib: Option<String>,
    /// Replaced by --uplink-mib (a usage error).
    #[arg(long, hide = true)]
    global_budget_kib: Option<String>,
    /// Replaced by --uplink-mib (a usage error).
    #[arg(long, hide = true)]
    global_rate_kib: Option<String>,
    /// Challenges per second in all (bursts of twice as many).
    #[arg(long, default_value_t = 10_000.0)]
    challenge_rate: f64,
    /// Challenges per second to one network (IPv4 /24, IPv6 /64; bursts of four times as
    /// many).
    #[arg(long, default_value_t = 64.0)]
    net_challenge_rate: f64,
    /// No rate limits or budgets (benchmarks, trusted networks only).
    #[arg(long)]
    no_limits: bool,
    /// Also run a DDNet HTTP master on this TCP address (`POST /ddnet/15/register`,
    /// `GET /ddnet/15/servers.json`); HTTPS with --tls-cert/--tls-key, plain HTTP without
    /// (DDNet servers register over https only: put a TLS proxy in front).
    #[arg(long)]
    ddnet_listen: Option<String>,
    /// TLS certificate chain (PEM) for --ddnet-listen.
    #[arg(long, requires = "tls_key", requires = "ddnet_listen")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM) for --ddnet-listen.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Behind a TLS-terminating proxy: the header that carries the client's IP (e.g.
    /// X-Real-IP, X-Forwarded-For), believed only from --trusted-proxy networks.
    #[arg(long, requires = "trusted_proxy", requires = "ddnet_listen")]
    connecting_ip_header: Option<String>,
    /// A network (CIDR) or address of the proxy whose --connecting-ip-header is believed
    /// (repeat for several).
    #[arg(long, requires = "connecting_ip_header")]
    trusted_proxy: Vec<String>,
    /// HTTP connections open at once, for --ddnet-listen.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    http_max_connections: u32,
    /// HTTP connections open at once from one host (IPv4 address, IPv6 /64), for
    /// --ddnet-listen; trusted proxies are exempt.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    http_max_per_ip: u32,
    /// HTTP connections open at once from one IPv4 /24 or IPv6 /56. A newcomer over a cap
    /// takes the place of an idle connection there (docs/master-server.md).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    http_max_per_site: u32,
    /// HTTP connections open at once from one IPv4 /16 or IPv6 /48.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    http_max_per_net: u32,
    /// HTTP connections open at once from one IPv6 /32.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    http_max_per_provider: u32,
    /// HTTP requests a second per client host (IPv4 address, IPv6 /64; 0: no limit),
    /// answered 429 beyond.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    http_request_rate: u32,
    /// HTTP requests at once per client host after a quiet spell.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000_000))]
    http_request_burst: u32,
    /// HTTP requests a second per IPv4 /24 or IPv6 /48 (0: no limit).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    http_net_request_rate: u32,
    /// HTTP requests at once per IPv4 /24 or IPv6 /48 after a quiet spell.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u32).range(1..=100_000_000))]
    http_net_request_burst: u32,
    /// Serve the DDNet list (`GET /ddnet/15/servers.json`) on this TCP address instead, from
    /// connection slots of its own (the same TLS and --http-* limits): a flood of either
    /// the list or registrations cannot starve the other.
    #[arg(long, requires = "ddnet_listen")]
    ddnet_list_listen: Option<String>,
    /// DDNet servers registered in all (one per host a server registers from).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    ddnet_max_servers: u64,
    /// DDNet servers registered from one host (IPv4 address, IPv6 /64; an IPv6 /56 twice as
    /// many, up to --ddnet-servers-per-net).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    ddnet_servers_per_host: u64,
    /// DDNet servers registered from one network (IPv4 /24, IPv6 /48; an IPv4 /16 or IPv6
    /// /32 four times as many).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    ddnet_servers_per_net: u64,
    /// KiB of DDNet server info stored in all.
    #[arg(long, default_value_t = 65_536, value_parser = clap::value_parser!(u64).range(1..=16_777_216))]
    ddnet_max_info_kib: u64,
    /// KiB of DDNet server info from one host (IPv4 address, IPv6 /64; an IPv6 /56 twice
    /// as much, up to --ddnet-info-per-net-kib).
    #[arg(long, default_value_t = 1_024, value_parser = clap::value_parser!(u64).range(1..=16_777_216))]
    ddnet_info_per_host_kib: u64,
    /// KiB of DDNet server info from one network (IPv4 /24, IPv6 /48; an IPv4 /16 or IPv6
    /// /32 four times as much).
    #[arg(long, default_value_t = 4_096, value_parser = clap::value_parser!(u64).range(1..=16_777_216))]
    ddnet_info_per_net_kib: u64,
    /// Largest servers.json in KiB; past it the newest servers of the networks listing the
    /// most bytes are left out.
    #[arg(long, default_value_t = 16_384, value_parser = clap::value_parser!(u64).range(1..=16_777_216))]
    ddnet_max_list_kib: u64,
}

fn parse_addr(flag: &str, text: &str) -> Result<SocketAddr, ExitCode> {
    text.parse::<SocketAddr>().map_err(|_| {
        usage(format!(
            "{flag} {text:?}: expected IP:PORT (e.g. 0.0.0.0:27950, [::]:27950)"
        ))
    })
}

/// The UDP sockets passed by socket activation (`LISTEN_FDS`, from fd 3 on); none when the
/// variable is not set. An fd that is not a UDP socket is an error.
fn activated_sockets() -> std::io::Result<Vec<std::net::UdpSocket>> {
    let mut fds = listenfd::ListenFd::from_env();
    let mut out = Vec::new();
    for i in 0..fds.len() {
        match fds.take_udp_socket(i)? {
            Some(s) => out.push(s),
            None => {
                return Err(std::io::Error::other(format!(
                    "fd {} was already taken",
                    i + 3
                )))
            }
        }
    }
    Ok(out)
}

/// The DDNet registry's shares from the flags (a usage error when they cannot work).
fn ddnet_limits(a: &MasterServerArgs) -> Result<DdnetLimits, ExitCode> {
    let bytes = |k: u64| k.saturating_mul(1024);
    let limits = DdnetLimits::from_shares(
        [
            a.ddnet_servers_per_host,
            a.ddnet_servers_per_net,
            a.ddnet_max_servers,
        ],
        [
            bytes(a.ddnet_info_per_host_kib),
            bytes(a.ddnet_info_per_net_kib),
            bytes(a.ddnet_max_info_kib),
        ],
        bytes(a.ddnet_max_list_kib),
    );
    if let Err(e) = limits.check() {
        return Err(usage(format!(
            "{e} (see --ddnet-servers-per-host, --ddnet-servers-per-net, --ddnet-max-servers, --ddnet-info-per-host-kib, --ddnet-info-per-net-kib, --ddnet-max-info-kib, --ddnet-max-list-kib)"
        )));
    }
    Ok(limits)
}

/// Runs the master until SIGINT/SIGTERM.
pub async fn master_server(a: MasterServerArgs) -> anyhow::Result<ExitCode> {
    let mut listen = Vec::new();
    for l in &a.listen {
        match parse_addr("--listen", l) {
            Ok(addr) => listen.push(addr),
            Err(code) => return Ok(code),
        }
    }
    let inherited = match activated_sockets() {
        Ok(s) => s,
        Err(e) => return Ok(usage(format!("socket activation (LISTEN_FDS): {e}"))),
    };
    if listen.is_empty() && inherited.is_empty() {
        listen.push(SocketAddr::from(([0, 0, 0, 0], 27950)));
    }
    let metrics = match a
        .metrics
        .as_deref()
        .map(|m| parse_addr("--metrics", m))
        .transpose()
    {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let ddnet_listen = match a
        .ddnet_listen
        .as_deref()
        .map(|m| parse_addr("--ddnet-listen", m))
        .transpose()
    {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let ddnet_list = match a
        .ddnet_list_listen
        .as_deref()
        .map(|m| parse_addr("--ddnet-list-listen", m))
        .transpose()
    {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let ddnet_limits = match ddnet_limits(&a) {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    let tls = match (&a.tls_cert, &a.tls_key) {
        (Some(cert), Some(key)) => match fragstat_master_server::http::tls_config(cert, key) {
            Ok(c) => Some(c),
            Err(e) => return Ok(usage(format!("--tls-cert/--tls-key: {e}"))),
        },
        _ => None,
    };
    if let Some(path) = &a.state {
        if let Err(e) = fragstat_master_server::run::check_state_path(path) {
            return Ok(usage(format!("--state: {e}")));
        }
    }
    for (flag, given) in [
        ("--send-budget-kib", &a.send_budget_kib),
        ("--send-rate-kib", &a.send_rate_kib),
        ("--global-budget-kib", &a.global_budget_kib),
        ("--global-rate-kib", &a.global_rate_kib),
    ] {
        if given.is_some() {
            return Ok(usage(format!(
                "{flag} was replaced by --uplink-mib (the list bytes a second the master may send in all; each network's share is a fraction of it) and --max-reply-kib"
            )));
        }
    }
    let rate = |per_sec: f64, burst: f64| Rate { per_sec, burst };
    if !(a.uplink_mib.is_finite() && (0.01..=100_000.0).contains(&a.uplink_mib)) {
        return Ok(usage(format!(
            "--uplink-mib {}: the MiB a second of lists the master may send, between 0.01 and 100000",
            a.uplink_mib
        )));
    }
    let mib = a.uplink_mib * 1024.0 * 1024.0;
    let defaults = LimitConfig::default();
    let limits = if a.no_limits {
        LimitConfig::unlimited()
    } else {
        LimitConfig {
            requests: rate(a.request_rate, a.request_burst),
            new_servers: rate(a.heartbeat_rate, a.heartbeat_burst),
            lists: ListBudget {
                uplink: rate(mib, mib),
                max_reply: a.max_reply_kib * 1024,
                builds: rate(a.list_builds, a.list_builds.max(1.0)),
                ..ListBudget::default()
            },
            new_servers_net: rate(a.heartbeat_net_rate, a.heartbeat_net_burst),
            global_challenges: rate(a.challenge_rate, 2.0 * a.challenge_rate),
            net_challenges: rate(a.net_challenge_rate, 4.0 * a.net_challenge_rate),
            ..defaults
        }
    };
    let config = Config {
        limits,
        max_servers: a.max_servers as usize,
        max_per_address: a.max_per_address as usize,
        per_network: Caps {
            v4: [0, a.max_per_ipv4_24.into(), a.max_per_ipv4_16.into()],
            v6: [
                0,
                a.max_per_ipv6_56.into(),
                a.max_per_ipv6_48.into(),
                a.max_per_ipv6_32.into(),
            ],
        },
        expiry: Duration::from_secs(a.expiry_s),
        allow_loopback: a.allow_loopback,
        allow_private: a.allow_private,
        ..Config::default()
    };
    if let Err(e) = config.check() {
        return Ok(usage(format!(
            "{e} (see --request-rate, --request-burst, --heartbeat-rate, --heartbeat-burst, --heartbeat-net-rate, --heartbeat-net-burst, --uplink-mib, --max-reply-kib, --list-builds, --challenge-rate, --net-challenge-rate, --max-servers)"
        )));
    }
    let client_ip = match &a.connecting_ip_header {
        Some(h) => match fragstat_http_guard::ClientIp::from_header(h, &a.trusted_proxy) {
            Ok(c) => c,
            Err(e) => {
                return Ok(usage(format!(
                    "--connecting-ip-header/--trusted-proxy: {e}"
                )))
            }
        },
        None => fragstat_http_guard::ClientIp::default(),
    };
    let http_limits = fragstat_http_guard::Limits {
        max_connections: a.http_max_connections as usize,
        max_per_ip: a.http_max_per_ip as usize,
        max_per_site: a.http_max_per_site as usize,
        max_per_net: a.http_max_per_net as usize,
        max_per_provider: a.http_max_per_provider as usize,
        request_rate: fragstat_http_guard::Rate {
            per_sec: a.http_request_rate,
            burst: a.http_request_burst,
        },
        net_request_rate: fragstat_http_guard::Rate {
            per_sec: a.http_net_request_rate,
            burst: a.http_net_request_burst,
        },
        ..fragstat_http_guard::Limits::default()
    };
    let run_config = RunConfig {
        listen,
        state: a.state.clone(),
        metrics,
        ..RunConfig::default()
    };
    let bound = bind_with(run_config, inherited)
        .await
        .context("starting the master")?;
    let ddnet = match ddnet_listen {
        Some(addr) => Some(
            fragstat_master_server::http::bind_ddnet(
                addr,
                tls,
                fragstat_master_server::http::DdnetOptions {
                    limits: http_limits,
                    client_ip,
                    list: ddnet_list,
                },
                DdnetMaster::with_limits(std::time::Instant::now(), a.allow_loopback, ddnet_limits),
            )
            .await
            .context("starting the DDNet HTTP master")?,
        ),
        None => None,
    };
    let bound = match &ddnet {
        Some(d) => bound.with_ddnet_metrics(d.metrics()),
        None => bound,
    };
    // Like `serve`: the bound addresses, then `ready`, for scripts and tests.
    let mut lines = String::new();
    for a in bound.local_addrs() {
        lines.push_str(&format!("master {a}\n"));
    }
    if let Some(m) = bound.metrics_addr() {
        lines.push_str(&format!("metrics http://{m}/metrics\n"));
    }
    if let Some(d) = &ddnet {
        // The list where `fragstat master ddnet` and clients read it, and where DDNet
        // servers register (their `sv_register_url`).
        lines.push_str(&format!("ddnet {}\n", d.list_url()));
        lines.push_str(&format!("ddnet-register {}register\n", d.url()));
    }
    lines.push_str("ready\n");
    {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(lines.as_bytes()).and_then(|()| out.flush());
    }
    // One signal stops both masters.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let ddnet_task = ddnet.map(|d| tokio::spawn(d.run(stopped(stop_rx.clone()))));
    let signal = tokio::spawn(async move {
        crate::signal::wait_for_signal().await;
        let _ = stop_tx.send(true);
    });
    let result = bound.run(Master::new(config), stopped(stop_rx)).await;
    signal.abort();
    if let Some(t) = ddnet_task {
        t.await.context("the DDNet HTTP master")??;
    }
    result?;
    Ok(ExitCode::SUCCESS)
}
