//! `fragstat serve` (emulated servers and master on real sockets) and `fragstat demo`.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use fragstat::core::serve::{from_fn, run};
use fragstat::core::{Engine, Options, Transport, UdpTransport};
use fragstat::quake3::client::Client;
use fragstat::quake3::server::{EmulatedMaster, EmulatedServer, ServerConfig};
use fragstat::quake3::{EotStyle, Game};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::record::{self, ServerRecord};

/// Where the emulated master puts its end-of-list marker.
#[derive(Clone, Copy, ValueEnum)]
pub enum Eot {
    /// Only on the last datagram (dpmaster >= 2.0).
    Last,
    /// On every datagram (older masters).
    Every,
    /// `\EOF` on the last datagram.
    Eof,
    /// None: clients finish on a timeout.
    None,
}

impl From<Eot> for EotStyle {
    fn from(e: Eot) -> Self {
        match e {
            Eot::Last => EotStyle::LastPacket,
            Eot::Every => EotStyle::EveryPacket,
            Eot::Eof => EotStyle::EofLast,
            Eot::None => EotStyle::None,
        }
    }
}

#[derive(Args)]
pub struct ServeArgs {
    /// Game: q3, et, openarena, rtcw or oob:PROTOCOL.
    game: String,
    /// Address of the first server; further servers take the following ports (port 0: any free port each).
    #[arg(long, default_value = "127.0.0.1:27960")]
    listen: SocketAddr,
    /// Servers to run.
    #[arg(long, default_value_t = 1)]
    count: usize,
    /// Players on each server (every second one a bot with ping 0).
    #[arg(long, default_value_t = 0)]
    players: usize,
    /// Server name (colour codes allowed); with --count > 1, " #N" is appended.
    #[arg(long, default_value = "^1fragstat ^7emulated server")]
    name: String,
    /// Map.
    #[arg(long, default_value = "q3dm17")]
    map: String,
    /// Player slots (default: at least 8, at least --players).
    #[arg(long)]
    max_players: Option<u32>,
    /// Also run a master listing these servers.
    #[arg(long)]
    master: bool,
    /// The master's address.
    #[arg(long, default_value = "127.0.0.1:27950")]
    master_listen: SocketAddr,
    /// The master's end-of-list marker.
    #[arg(long, value_enum, default_value = "last")]
    eot: Eot,
    /// Drop this fraction of requests (0.0-1.0) to simulate loss.
    #[arg(long, default_value_t = 0.0)]
    drop: f64,
    /// Worker threads. One thread serves 10,000 emulated servers on loopback with less
    /// overhead than several (docs/benchmarks.md) and leaves the other cores to clients.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

type Shutdown = watch::Receiver<bool>;

async fn shutdown_future(mut rx: Shutdown) {
    while !*rx.borrow() {
        if rx.changed().await.is_err() {
            break;
        }
    }
}

/// Binds `count` sockets from `listen` on (consecutive ports, or any free ports for port 0).
fn bind_servers(listen: SocketAddr, count: usize) -> anyhow::Result<Vec<Arc<dyn Transport>>> {
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let port = if listen.port() == 0 {
            0
        } else {
            u16::try_from(usize::from(listen.port()) + i).context("port range runs past 65535")?
        };
        let addr = SocketAddr::new(listen.ip(), port);
        let t = UdpTransport::bind(addr).with_context(|| format!("binding {addr}"))?;
        out.push(Arc::new(t) as Arc<dyn Transport>);
    }
    Ok(out)
}

fn spawn_server(
    tasks: &mut JoinSet<std::io::Result<()>>,
    socket: Arc<dyn Transport>,
    config: ServerConfig,
    drop: f64,
    seed: u64,
    stop: Shutdown,
) {
    let mut emu = EmulatedServer::new(config);
    let mut rng = fastrand::Rng::with_seed(seed);
    tasks.spawn(run(
        socket,
        from_fn(move |from, datagram| {
            if drop > 0.0 && rng.f64() < drop {
                return Vec::new();
            }
            emu.handle(datagram)
                .map(|r| vec![(from, r)])
                .unwrap_or_default()
        }),
        shutdown_future(stop),
    ));
}

fn spawn_master(
    tasks: &mut JoinSet<std::io::Result<()>>,
    socket: Arc<dyn Transport>,
    mut master: EmulatedMaster,
    stop: Shutdown,
) {
    tasks.spawn(run(
        socket,
        from_fn(move |from, datagram| master.handle(from, datagram)),
        shutdown_future(stop),
    ));
}

/// `fragstat serve`.
pub async fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let game: Game = match a.game.parse() {
        Ok(g) => g,
        Err(e) => return Ok(crate::usage(e)),
    };
    if !(0.0..=1.0).contains(&a.drop) {
        return Ok(crate::usage("--drop takes a fraction from 0.0 to 1.0"));
    }
    if a.name.contains(['"', '\\', '\n']) {
        return Ok(crate::usage(
            "--name cannot contain '\"', '\\' or a newline",
        ));
    }
    // Thousands of emulated servers need thousands of sockets.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let sockets = bind_servers(a.listen, a.count)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut listed = Vec::with_capacity(sockets.len());
    let mut out = std::io::stdout().lock();
    for (i, socket) in sockets.into_iter().enumerate() {
        let addr = socket.local_addr()?;
        let name = if a.count > 1 {
            format!("{} #{}", a.name, i + 1)
        } else {
            a.name.clone()
        };
        let mut config = ServerConfig::sample(game, name.as_bytes(), a.players);
        config.map = a.map.clone().into_bytes();
        if let Some(m) = a.max_players {
            config.max_clients = m;
        }
        writeln!(out, "server {addr}")?;
        listed.push((addr, game.protocol()));
        spawn_server(
            &mut tasks,
            socket,
            config,
            a.drop,
            i as u64 + 1,
            stop_rx.clone(),
        );
    }
    if a.master {
        let socket: Arc<dyn Transport> = Arc::new(
            UdpTransport::bind(a.master_listen)
                .with_context(|| format!("binding {}", a.master_listen))?,
        );
        writeln!(out, "master {}", socket.local_addr()?)?;
        spawn_master(
            &mut tasks,
            socket,
            EmulatedMaster::new(listed, a.eot.into()),
            stop_rx.clone(),
        );
    }
    writeln!(out, "ready")?;
    out.flush()?;
    drop(out);
    wait_for_signal().await;
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// `fragstat demo`: the whole job with no network beyond loopback.
pub async fn demo(count: usize) -> anyhow::Result<ExitCode> {
    let count = count.clamp(1, 500);
    const MAPS: [&str; 6] = [
        "q3dm17",
        "q3dm6",
        "q3tourney2",
        "q3ctf1",
        "q3dm1",
        "pro-q3dm13",
    ];
    let game = Game::Quake3;
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let loopback: SocketAddr = "127.0.0.1:0".parse()?;
    let mut listed = Vec::new();
    for (i, socket) in bind_servers(loopback, count)?.into_iter().enumerate() {
        let name = format!("^{}fragstat ^7demo ^3#{}", i % 7 + 1, i + 1);
        let mut config = ServerConfig::sample(game, name.as_bytes(), (i * 3) % 9);
        config.map = MAPS[i % MAPS.len()].as_bytes().to_vec();
        config.gametype = if i % 3 == 2 { 4 } else { 0 };
        config.needpass = i % 4 == 3;
        listed.push((socket.local_addr()?, game.protocol()));
        spawn_server(&mut tasks, socket, config, 0.0, i as u64, stop_rx.clone());
    }
    // One listed server that is down, as on any real master.
    let down = UdpTransport::bind(loopback)?.local_addr()?;
    listed.push((down, game.protocol()));
    let master_socket: Arc<dyn Transport> = Arc::new(UdpTransport::bind(loopback)?);
    let master_addr = master_socket.local_addr()?;
    spawn_master(
        &mut tasks,
        master_socket,
        EmulatedMaster::new(listed, EotStyle::LastPacket),
        stop_rx.clone(),
    );
    eprintln!("started {count} emulated Quake III servers and a master on {master_addr} (one listed server is down)");

    let client = Client::with_engine(Engine::bind().await?).with_options(
        Options::default()
            .with_timeout(Duration::from_millis(300))
            .with_retries(1),
    );
    let list = client
        .master(master_addr, &game.getservers())
        .await
        .context("querying the emulated master")?;
    eprintln!(
        "master listed {} servers in {:.1} ms; probing them",
        list.reply.len(),
        list.rtt.unwrap_or_default().as_secs_f64() * 1e3
    );
    let outcomes = client.scan(list.reply, true).collect_sorted().await;
    let records: Vec<ServerRecord> = outcomes
        .into_iter()
        .map(|o| match o.result {
            Ok(r) => ServerRecord::online(Some(o.addr), game, r.into_summary(), true, o.rtt),
            Err(e) => ServerRecord::failed(o.addr, game, &e),
        })
        .collect();
    print!("{}", record::table(&records, true, crate::color_stdout()));
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    Ok(ExitCode::SUCCESS)
}
