//! Emulated servers, masters and HTTP lists on loopback for the library's tests, run in the
//! test's own runtime (each on a socket bound on port 0 and kept).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use fragstat::core::registry::{EmuMaster, EmuServer};
use fragstat::core::serve::run;
use fragstat::core::{Transport, UdpTransport};
use fragstat::GameRef;
use tokio::sync::watch;

/// Emulators running until dropped.
pub struct Farm {
    pub servers: Vec<SocketAddr>,
    pub master: Option<SocketAddr>,
    stop: watch::Sender<bool>,
}

impl Drop for Farm {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

fn bind(ip: &str) -> Arc<dyn Transport> {
    Arc::new(UdpTransport::bind(format!("{ip}:0").parse().unwrap()).unwrap())
}

fn spawn(
    socket: Arc<dyn Transport>,
    service: Box<dyn fragstat::core::service::Service>,
    stop: &watch::Sender<bool>,
) {
    let mut rx = stop.subscribe();
    tokio::spawn(async move {
        let _ = run(socket, service, async move {
            let _ = rx.wait_for(|s| *s).await;
        })
        .await;
    });
}

/// `n` emulated servers of `game` with `players` each, and a master listing them plus
/// `extra` addresses (e.g. a silent one).
pub fn farm(game: &GameRef, n: usize, players: usize, extra: &[SocketAddr]) -> Farm {
    let mut farm = farm_at(game, [127, 0, 0, 1].into(), n, players);
    let mut listed = farm.servers.clone();
    listed.extend_from_slice(extra);
    let socket = bind("127.0.0.1");
    farm.master = Some(socket.local_addr().unwrap());
    spawn(
        socket,
        game.emulator()
            .expect("built with emulators")
            .emulated_master(&EmuMaster::new(listed))
            .unwrap(),
        &farm.stop,
    );
    farm
}

/// `n` emulated servers of `game` at `ip` with `players` each, and no master.
pub fn farm_at(game: &GameRef, ip: std::net::IpAddr, n: usize, players: usize) -> Farm {
    let (stop, _) = watch::channel(false);
    let mut servers = Vec::new();
    for i in 0..n {
        let socket: Arc<dyn Transport> =
            Arc::new(UdpTransport::bind(SocketAddr::new(ip, 0)).unwrap());
        servers.push(socket.local_addr().unwrap());
        let service = game
            .emulator()
            .expect("built with emulators")
            .emulated_server(&EmuServer::new(format!("emu {i}"), "", players).with_seed(i as u64))
            .unwrap();
        spawn(socket, service, &stop);
    }
    Farm {
        servers,
        master: None,
        stop,
    }
}

/// An emulated master of `game` listing exactly `listed`.
pub fn master(game: &GameRef, listed: Vec<SocketAddr>) -> Farm {
    master_with(game, &EmuMaster::new(listed))
}

/// An emulated master of `game` as `config` says (its end marker and quirks).
pub fn master_with(game: &GameRef, config: &EmuMaster) -> Farm {
    let (stop, _) = watch::channel(false);
    let socket = bind("127.0.0.1");
    let master = socket.local_addr().unwrap();
    spawn(
        socket,
        game.emulator()
            .expect("built with emulators")
            .emulated_master(config)
            .unwrap(),
        &stop,
    );
    Farm {
        servers: Vec::new(),
        master: Some(master),
        stop,
    }
}

/// A local HTTP server: `body` at `path` (or a redirect when `redirect_to` is set).
pub struct Http {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Http {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

impl Http {
    pub async fn serve(path: &'static str, body: Vec<u8>) -> Http {
        let app = axum::Router::new()
            .route(
                path,
                axum::routing::get(move || {
                    let body = body.clone();
                    async move { ([("content-type", "application/json")], body) }
                }),
            )
            .route(
                "/moved",
                axum::routing::get(|| async {
                    (
                        axum::http::StatusCode::MOVED_PERMANENTLY,
                        [("location", "http://127.0.0.1:1/elsewhere")],
                    )
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Http {
            addr,
            stop: Some(stop),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// A DDNet `servers.json` listing `servers` (each with a valid info).
pub fn servers_json(servers: &[SocketAddr]) -> Vec<u8> {
    let list: Vec<serde_json::Value> = servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            serde_json::json!({
                "addresses": [format!("tw-0.6+udp://{s}"), format!("tw-0.7+udp://{s}")],
                "location": "eu:de",
                "info": {"max_clients": 16, "max_players": 16, "passworded": false,
                         "game_type": "DDraceNetwork", "name": format!("listed {i}"),
                         "map": {"name": "Tutorial"}, "version": "0.6.4, 16.4",
                         "clients": [{"name": "a", "clan": "", "country": -1, "score": 0, "is_player": true}]}
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({ "servers": list })).unwrap()
}

/// One emulated server of `game` as `config` says (its engine's limits on unless it turns
/// them off), without a master.
pub fn farm_with(game: &GameRef, config: &EmuServer) -> Farm {
    let (stop, _) = watch::channel(false);
    let socket = bind("127.0.0.1");
    let addr = socket.local_addr().unwrap();
    let service = game
        .emulator()
        .expect("built with emulators")
        .emulated_server(config)
        .unwrap();
    spawn(socket, service, &stop);
    Farm {
        servers: vec![addr],
        master: None,
        stop,
    }
}
