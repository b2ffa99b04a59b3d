//! `fragstat serve` (emulated servers and a master on real sockets) and `fragstat demo`, for
//! any game of the registry.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, ValueEnum};
use fragstat::core::record::Record;
use fragstat::core::registry::{
    emulator, EmuMaster, EmuServer, EndMarker, GameRef, MasterOptions, MasterQuery,
};
use fragstat::core::resolve::resolve;
use fragstat::core::serve::run;
use fragstat::core::service::{Outbox, Service};
use fragstat::core::{Transport, UdpTransport};
use futures_util::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::signal::wait_for_signal;
use crate::{lookup_game, usage};

/// Where the emulated master puts its end-of-list marker.
#[derive(Clone, Copy, ValueEnum)]
pub enum Eot {
    /// Only on the last datagram (dpmaster >= 2.0).
    Last,
    /// On every datagram (older masters).
    Every,
    /// The alternative marker (Quake III `\EOF`) on the last datagram.
    Eof,
    /// None: clients finish on a timeout (or the quiet period).
    None,
    /// A bare `\EOT` on every datagram but the last, whose marker has its NULs
    /// (Activision's masters).
    BareEvery,
}

impl From<Eot> for EndMarker {
    fn from(e: Eot) -> Self {
        match e {
            Eot::Last => EndMarker::Last,
            Eot::Every => EndMarker::Every,
            Eot::Eof => EndMarker::Alternative,
            Eot::None => EndMarker::None,
            Eot::BareEvery => EndMarker::BareEvery,
        }
    }
}

/// Most emulated servers one `serve` runs.
const MAX_COUNT: u32 = 100_000;

#[derive(Args)]
pub struct ServeArgs {
    /// Game id (see `fragstat games`).
    game: String,
    /// Address of the first server, HOST:PORT (default port: the game's); further servers
    /// take the following ports (port 0: any free port each).
    #[arg(long, default_value = "127.0.0.1")]
    listen: String,
    /// Servers to run (0 only with --master: a master that lists the servers that register).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_COUNT)))]
    count: u32,
    /// Players on each server (every second one a bot with ping 0).
    #[arg(long, default_value_t = 0)]
    players: usize,
    /// Server name (colour codes allowed where the game has them); with --count > 1, " #N"
    /// is appended. Empty: the game's own default where it has one (Nexuiz: "Nexuiz 2.5.2
    /// Server"). Default: "^1fragstat ^7emulated server", without the colour codes for games
    /// that have none (Teeworlds, DDNet, Medal of Honor).
    #[arg(long)]
    name: Option<String>,
    /// Map (default: the game's usual first map, e.g. q3dm17).
    #[arg(long)]
    map: Option<String>,
    /// Game type value as the game sends it (e.g. 4 for Quake III CTF; a short name for
    /// Warsow, Nexuiz and Xonotic: ca, tdm, ctf… — team games put a team on each player line).
    #[arg(long)]
    gametype: Option<String>,
    /// Player slots (default: at least 8, at least --players).
    #[arg(long)]
    max_players: Option<u32>,
    /// Servers need a password.
    #[arg(long)]
    password: bool,
    /// Slots of --max-players reserved for a private password (Quake III `sv_privateClients`;
    /// ioquake3's games and Tremulous): bots fill them first, other players skip them, and
    /// getinfo counts only the slots above them.
    #[arg(long, default_value_t = 0)]
    private_slots: u32,
    /// Heartbeat this master (HOST:PORT) at start and every 5 minutes, as a public server does,
    /// and answer its challenge.
    #[arg(long)]
    heartbeat: Option<String>,
    /// Seconds between heartbeats (default 300, the engines' period; at least 0.1). A shorter
    /// period re-registers soon after a master restarts or drops a heartbeat.
    #[arg(long, value_name = "SECONDS", default_value_t = 300.0, requires = "heartbeat",
          value_parser = heartbeat_seconds)]
    heartbeat_every_s: f64,
    /// Also run a master listing these servers: a UDP master, or for games whose master is
    /// an HTTP list (DDNet's servers.json, the ETQW feed) that list, at the public list's path
    /// (the `master` line gives the URL).
    #[arg(long)]
    master: bool,
    /// The master's address, HOST:PORT (default port: the game's master port).
    #[arg(long, default_value = "127.0.0.1")]
    master_listen: String,
    /// The master's end-of-list marker.
    #[arg(long, value_enum, default_value = "last")]
    eot: Eot,
    /// The master answers only `getservers <protocol>` without a game name (id's RtCW
    /// master), as the catalogue's short form asks.
    #[arg(long, requires = "master")]
    master_short_only: bool,
    /// With --master (Unvanquished): list the first --featured-count servers in a featured
    /// group with this label, in packets of their own, as the Unvanquished master does.
    #[arg(long, requires = "master")]
    featured: Option<String>,
    /// How many servers --featured lists.
    #[arg(long, default_value_t = 1, requires = "featured")]
    featured_count: usize,
    /// Drop this fraction of requests (0.0-1.0) to simulate loss.
    #[arg(long, default_value_t = 0.0)]
    drop: f64,
    /// Answer every query. By default the servers drop queries past their engine's limits as
    /// the real ones do (ioquake3: 10 at once from one address, then one a second, and 10 per
    /// 100 ms in all; DarkPlaces: one a second from one address; DDNet: 500 a second in all).
    #[arg(long)]
    no_rate_limit: bool,
    /// Push events to these trackers as ET: Legacy's `sv_tracker` does (etl only): start,
    /// map, a connect per player, a keep-alive `p` and a stats round every 16 s, stop at the
    /// end. Endpoints separated by spaces as in the cvar, HOST[:PORT] each (port 27960 when
    /// left out, the engine's default), IPv4 only, at most 8:
    /// --tracker "127.0.0.1:4444 127.0.0.1:4445".
    #[arg(long, value_name = "ENDPOINTS")]
    tracker: Option<String>,
    /// The resolved --tracker endpoints.
    #[arg(skip)]
    trackers: Vec<SocketAddr>,
    /// Worker threads. One thread serves 10,000 emulated servers on loopback with less
    /// overhead than several (docs/benchmarks.md) and leaves the other cores to clients.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,
}

type Shutdown = watch::Receiver<bool>;

async fn shutdown_future(mut rx: Shutdown) {
    while !*rx.borrow() {
        if rx.changed().await.is_err() {
            break;
        }
    }
}

/// A service that drops a fraction of the datagrams it is given (simulated request loss).
struct Lossy {
    inner: Box<dyn Service>,
    drop: f64,
    rng: fastrand::Rng,
}

impl Service for Lossy {
    fn start(&mut self, now: Instant, out: &mut Outbox) {
        self.inner.start(now, out);
    }
    fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], out: &mut Outbox) {
        if self.drop > 0.0 && self.rng.f64() < self.drop {
            return;
        }
        self.inner.handle(now, from, datagram, out);
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.inner.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Instant, out: &mut Outbox) {
        self.inner.handle_timeout(now, out);
    }
    fn stop(&mut self, now: Instant, out: &mut Outbox) {
        self.inner.stop(now, out);
    }
}

/// Binds `count` sockets from `listen` on (consecutive ports, or any free ports for port 0).
fn bind_servers(listen: SocketAddr, count: u32) -> anyhow::Result<Vec<Arc<dyn Transport>>> {
    let mut out = Vec::new();
    for i in 0..count {
        let port = if listen.port() == 0 {
            0
        } else {
            u16::try_from(u32::from(listen.port()) + i).context("port past 65535")?
        };
        let addr = SocketAddr::new(listen.ip(), port);
        let t = UdpTransport::bind(addr).with_context(|| format!("binding {addr}"))?;
        out.push(Arc::new(t) as Arc<dyn Transport>);
    }
    Ok(out)
}

fn spawn(
    tasks: &mut JoinSet<std::io::Result<()>>,
    socket: Arc<dyn Transport>,
    service: impl Service + 'static,
    stop: Shutdown,
) {
    tasks.spawn(run(socket, service, shutdown_future(stop)));
}

/// Resolves a `--listen`-style address (host names allowed) or explains why not.
async fn listen_addr(flag: &str, text: &str, default_port: u16) -> Result<SocketAddr, String> {
    resolve(text, default_port, Duration::from_secs(2))
        .await
        .addr
        .map_err(|e| format!("{flag} {text:?}: {e}"))
}

/// `--tracker`'s endpoints as ET: Legacy reads `sv_tracker` (`src/server/sv_tracker.c` @
/// `a8e5f856`): separated by whitespace (`COM_ParseExt`, :104-136), at most `MAX_TRACKERS`
/// (8, :66) in a value of at most 256 characters (:61-64), each resolved IPv4 only
/// (`NET_StringToAdr(…, NA_IP)`, :89) with port 27960 (`PORT_SERVER`) when none is given.
/// Only ET: Legacy pushes (`game`: the game served).
async fn tracker_endpoints(game: &str, text: &str) -> Result<Vec<SocketAddr>, String> {
    if game != "etl" {
        return Err(format!(
            "--tracker: pushing to a tracker (sv_tracker) is ET: Legacy's (etl), not {game}'s"
        ));
    }
    if text.len() > 256 {
        return Err("--tracker: at most 256 characters (the cvar's limit)".into());
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() || words.len() > 8 {
        return Err("--tracker: 1 to 8 endpoints, separated by spaces".into());
    }
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        let addr = listen_addr("--tracker", w, 27960).await?;
        if !addr.is_ipv4() {
            return Err(format!(
                "--tracker {w:?}: IPv4 only (ET: Legacy resolves sv_tracker as NA_IP)"
            ));
        }
        out.push(addr);
    }
    Ok(out)
}

/// A heartbeat period in seconds: 0.1 to one day.
fn heartbeat_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.1..=86_400.0).contains(&v) => Ok(v),
        _ => Err("a number of seconds from 0.1 to 86400".into()),
    }
}

/// The emulator configuration of server `i` of `count`.
fn config(a: &ServeArgs, i: u32, heartbeat: Option<SocketAddr>) -> EmuServer {
    let name = a.name.clone().unwrap_or_default();
    let name = if a.count > 1 {
        format!("{name} #{}", i + 1)
    } else {
        name
    };
    let mut c = EmuServer::new(name, a.map.clone().unwrap_or_default(), a.players)
        .with_seed(u64::from(i) + 1)
        .with_password(a.password)
        .with_private_slots(a.private_slots)
        .with_gametype(a.gametype.clone())
        .with_heartbeat_to(heartbeat)
        .with_heartbeat_every(Duration::from_secs_f64(a.heartbeat_every_s))
        .with_rate_limit(!a.no_rate_limit)
        .with_trackers(a.trackers.clone());
    if let Some(m) = a.max_players {
        c = c.with_max_players(m);
    }
    c
}

/// `fragstat serve`: every option is checked before anything is bound or printed.
pub async fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let game = match lookup_game(&a.game) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    if !(0.0..=1.0).contains(&a.drop) {
        return Ok(usage("--drop takes a fraction from 0.0 to 1.0"));
    }
    if a.count == 0 && !a.master {
        return Ok(usage(
            "--count 0 serves nothing: give at least 1, or add --master for an empty master",
        ));
    }
    let listen = match listen_addr("--listen", &a.listen, game.default_port()).await {
        Ok(l) => l,
        Err(e) => return Ok(usage(e)),
    };
    if listen.port() != 0 && u32::from(listen.port()) + a.count.saturating_sub(1) > 65535 {
        return Ok(usage(format!(
            "--count {} from port {} runs past port 65535 (use a lower port, fewer servers, or port 0)",
            a.count,
            listen.port()
        )));
    }
    let master_listen = if a.master {
        let port = game.master_port().unwrap_or(0);
        match listen_addr("--master-listen", &a.master_listen, port).await {
            Ok(l) => Some(l),
            Err(e) => return Ok(usage(e)),
        }
    } else {
        None
    };
    let heartbeat = match &a.heartbeat {
        Some(h) => match listen_addr("--heartbeat", h, game.master_port().unwrap_or(0)).await {
            Ok(m) => Some(m),
            Err(e) => return Ok(usage(e)),
        },
        None => None,
    };
    let emu = match emulator(&*game) {
        Ok(emu) => emu,
        Err(e) => return Ok(usage(format!("cannot serve {}: {e}", game.id()))),
    };
    let mut a = a;
    if let Some(t) = a.tracker.clone() {
        match tracker_endpoints(game.id(), &t).await {
            Ok(t) => a.trackers = t,
            Err(e) => return Ok(usage(e)),
        }
    }
    if a.name.is_none() {
        a.name = Some(emu.default_name().to_string());
    }
    // The emulator refuses what the protocol cannot carry (a `\` in a Quake III map name…).
    if let Err(e) = emu.emulated_server(&config(&a, 0, heartbeat)) {
        return Ok(usage(format!("cannot serve {}: {e}", game.id())));
    }
    // Thousands of emulated servers need thousands of sockets.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let sockets = bind_servers(listen, a.count)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut listed = Vec::with_capacity(sockets.len());
    let mut lines = String::new();
    for (i, socket) in (0u32..).zip(sockets) {
        let addr = socket.local_addr()?;
        let inner = emu
            .emulated_server(&config(&a, i, heartbeat))
            .map_err(|e| anyhow::anyhow!("server {}: {e}", i + 1))?;
        lines.push_str(&format!("server {addr}\n"));
        listed.push(addr);
        let lossy = Lossy {
            inner,
            drop: a.drop,
            rng: fastrand::Rng::with_seed(u64::from(i) + 1),
        };
        spawn(&mut tasks, socket, lossy, stop_rx.clone());
    }
    let master_kind = game.master_query(&MasterOptions::default());
    let tcp_master = matches!(master_kind, Ok(MasterQuery::Tcp { .. }));
    let http_list = match master_kind {
        Ok(MasterQuery::Http { default_url, .. }) => Some(default_url),
        _ => None,
    };
    if let (Some(ml), true) = (master_listen, tcp_master) {
        // A master that sends its list over TCP (CoD4X's): crate::serve_tcp.
        let body = emu
            .emulated_tcp_list(&listed)
            .map_err(|e| anyhow::anyhow!("master: {e}"))?;
        let listener = tokio::net::TcpListener::bind(ml)
            .await
            .with_context(|| format!("binding {ml}"))?;
        lines.push_str(&format!("master {}\n", listener.local_addr()?));
        let stop = shutdown_future(stop_rx.clone());
        let limits = crate::serve_tcp::Limits::default();
        tasks.spawn(async move {
            crate::serve_tcp::serve(listener, body.into(), limits, stop).await;
            Ok(())
        });
    } else if let (Some(ml), Some(default_url)) = (master_listen, http_list) {
        // Games whose master is an HTTP list (DDNet's servers.json, the ETQW feed): that
        // list, at the public list's path.
        let servers: Vec<(SocketAddr, EmuServer)> = (0u32..)
            .zip(&listed)
            .map(|(i, addr)| (*addr, config(&a, i, heartbeat)))
            .collect();
        let list = emu
            .emulated_http_list(&servers)
            .map_err(|e| anyhow::anyhow!("master: {e}"))?;
        let path = default_url
            .and_then(|u| u.split_once("://"))
            .and_then(|(_, rest)| rest.find('/').and_then(|i| rest.get(i..)))
            .unwrap_or("/servers");
        let listener = tokio::net::TcpListener::bind(ml)
            .await
            .with_context(|| format!("binding {ml}"))?;
        lines.push_str(&format!("master http://{}{path}\n", listener.local_addr()?));
        let content_type = list.content_type;
        // Served many times without copying.
        let body = axum::body::Bytes::from(list.body);
        // The route is the path; a query (IW4x's `?protocol=152`) is printed, not routed.
        let route = path.split('?').next().unwrap_or(path);
        let app = axum::Router::new().route(
            route,
            axum::routing::get(move || {
                let body = body.clone();
                async move { ([(axum::http::header::CONTENT_TYPE, content_type)], body) }
            }),
        );
        let server = fragstat_http_guard::Server {
            listener,
            tls: None,
            limits: fragstat_http_guard::Limits::default(),
            client_ip: fragstat_http_guard::ClientIp::default(),
            stats: Arc::default(),
        };
        tasks.spawn(server.serve(app, shutdown_future(stop_rx.clone())));
    } else if let Some(ml) = master_listen {
        let socket: Arc<dyn Transport> =
            Arc::new(UdpTransport::bind(ml).with_context(|| format!("binding {ml}"))?);
        lines.push_str(&format!("master {}\n", socket.local_addr()?));
        let master = emu
            .emulated_master(
                &EmuMaster::new(listed.clone())
                    .with_end_marker(a.eot.into())
                    .with_short_only(a.master_short_only)
                    .with_featured(a.featured.clone().map(|label| {
                        (
                            label,
                            listed.iter().take(a.featured_count).copied().collect(),
                        )
                    })),
            )
            .map_err(|e| anyhow::anyhow!("master: {e}"))?;
        spawn(&mut tasks, socket, master, stop_rx.clone());
    }
    lines.push_str("ready\n");
    {
        let mut out = std::io::stdout().lock();
        // The caller may have stopped reading; keep serving anyway.
        let _ = out.write_all(lines.as_bytes()).and_then(|()| out.flush());
    }
    wait_for_signal().await;
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    Ok(ExitCode::SUCCESS)
}

/// `fragstat demo --track`: where the tracker serves, how often it polls.
#[cfg_attr(not(feature = "track"), allow(dead_code))]
pub struct DemoTrack {
    /// The web server's address.
    pub listen: SocketAddr,
    /// Seconds between rounds.
    pub interval_secs: f64,
}

/// `fragstat demo`: the whole job with no network beyond loopback, for the first game of the
/// registry; with `track`, then the tracker on the same farm until interrupted.
pub async fn demo(count: usize, track: Option<DemoTrack>) -> anyhow::Result<ExitCode> {
    const MAPS: [&str; 6] = [
        "q3dm17",
        "q3dm6",
        "q3tourney2",
        "q3ctf1",
        "q3dm1",
        "pro-q3dm13",
    ];
    let game: GameRef = fragstat::games()
        .into_iter()
        .next()
        .context("no game compiled in")?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let emu = emulator(&*game)?;
    let loopback: SocketAddr = "127.0.0.1:0".parse()?;
    let mut listed = Vec::new();
    let n = u32::try_from(count).unwrap_or(500);
    for (i, socket) in (0u32..).zip(bind_servers(loopback, n)?) {
        let i_us = i as usize;
        let name = format!("^{}fragstat ^7demo ^3#{}", i % 7 + 1, i + 1);
        let c = EmuServer::new(name, MAPS[i_us % MAPS.len()], (i_us * 3) % 9)
            .with_seed(u64::from(i))
            .with_password(i % 4 == 3)
            .with_gametype(Some(if i % 3 == 2 { "4" } else { "0" }.into()));
        let service = emu
            .emulated_server(&c)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        listed.push(socket.local_addr()?);
        spawn(&mut tasks, socket, service, stop_rx.clone());
    }
    // One listed server that is down, as on any real master: its socket stays bound and
    // unread while the demo runs, so no other program can take the port and answer.
    let down_socket = UdpTransport::bind(loopback)?;
    listed.push(down_socket.local_addr()?);
    let master_socket: Arc<dyn Transport> = Arc::new(UdpTransport::bind(loopback)?);
    let master_addr = master_socket.local_addr()?;
    let master = emu
        .emulated_master(&EmuMaster::new(listed))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    spawn(&mut tasks, master_socket, master, stop_rx.clone());
    eprintln!(
        "started {count} emulated {} servers and a master on {master_addr} (one listed server is down)",
        game.title()
    );

    let client = fragstat::Client::builder()
        .timeout(Duration::from_millis(300))
        .retries(1)
        .master_timeout(Duration::from_millis(300))
        .build()?;
    let list = client.master_list(&game, [master_addr]).await?;
    let rtt = list.reports().first().and_then(|r| r.rtt);
    if let Some(e) = list.reports().first().and_then(|r| r.error.as_ref()) {
        anyhow::bail!("querying the emulated master: {e}");
    }
    eprintln!(
        "master listed {} servers in {:.1} ms; probing them",
        list.len(),
        rtt.unwrap_or_default().as_secs_f64() * 1e3
    );
    let mut records: Vec<(usize, Record)> = client
        .scan(&game, list.servers())
        .players()
        .indexed()
        .map(|i| (i.index, fragstat::record(&game, i.addr, i.result)))
        .collect()
        .await;
    records.sort_by_key(|(i, _)| *i);
    let records: Vec<Record> = records.into_iter().map(|(_, r)| r).collect();
    let mut totals = crate::table::Totals::default();
    for r in &records {
        totals.add(r, true);
    }
    let table = crate::table::servers(
        &records,
        &crate::output::View {
            players: true,
            color: crate::color_stdout(),
            header: true,
            ..Default::default()
        },
    );
    crate::output::print_line((table + &totals.footer()).trim_end())?;
    let mut code = ExitCode::SUCCESS;
    #[cfg(not(feature = "track"))]
    if track.is_some() {
        code = usage(
            "demo --track needs the tracker: this fragstat was built without the `track` feature",
        );
    }
    #[cfg(feature = "track")]
    if let Some(t) = track {
        let dir = tempfile::Builder::new()
            .prefix("fragstat-demo-track-")
            .tempdir()
            .context("creating a temporary directory for the demo database")?;
        let mut config = fragstat_tracker::config::Config {
            database: dir.path().join("track.db").display().to_string(),
            listen: t.listen,
            interval_secs: t.interval_secs,
            timeout_ms: 300,
            retries: 1,
            ..Default::default()
        };
        config.sources.push(fragstat_tracker::config::Source {
            game: game.id().to_string(),
            masters: vec![master_addr.to_string()],
            servers: Vec::new(),
            ext: false,
        });
        if let Err(e) = config.check() {
            return Ok(usage(e));
        }
        code = crate::track::run_tracker(config).await?;
    }
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    drop(down_socket);
    Ok(code)
}
