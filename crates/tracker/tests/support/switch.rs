//! Emulated Quake III servers on loopback sockets the test keeps, whose answers the test
//! switches (another map, other players, silent), and an emulated master listing them.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use fragstat::core::registry::{EmuMaster, EmuServer};
use fragstat::core::service::{Outbox, Service};
use fragstat::core::{Transport, UdpTransport};
use tokio::sync::watch;

type Current = Arc<Mutex<Option<Box<dyn Service>>>>;

struct Switch(Current);

impl Service for Switch {
    fn handle(&mut self, now: std::time::Instant, from: SocketAddr, d: &[u8], out: &mut Outbox) {
        if let Some(s) = self.0.lock().unwrap().as_mut() {
            s.handle(now, from, d, out);
        }
    }
}

/// An emulated Quake III server named `name` on `map` with `players` players.
pub fn emulated(name: &str, map: &str, players: usize) -> Box<dyn Service> {
    fragstat::game("q3")
        .unwrap()
        .emulator()
        .expect("built with emulators")
        .emulated_server(&EmuServer::new(name.as_bytes().to_vec(), map, players).with_seed(3))
        .unwrap()
}

fn serve(service: impl Service + 'static) -> (SocketAddr, watch::Sender<bool>) {
    let socket: Arc<dyn Transport> =
        Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap());
    let addr = socket.local_addr().unwrap();
    let (stop, mut rx) = watch::channel(false);
    tokio::spawn(fragstat::core::serve::run(socket, service, async move {
        let _ = rx.wait_for(|s| *s).await;
    }));
    (addr, stop)
}

/// A server on a socket kept for the test, answering as [`Server::set`] says.
pub struct Server {
    pub addr: SocketAddr,
    current: Current,
    _stop: watch::Sender<bool>,
}

impl Server {
    pub fn start(name: &str, map: &str, players: usize) -> Server {
        Server::serving(emulated(name, map, players))
    }

    /// A server answering as `service` (a test's own emulated server) until [`Server::set`].
    pub fn serving(service: Box<dyn Service>) -> Server {
        let current: Current = Arc::new(Mutex::new(Some(service)));
        let (addr, stop) = serve(Switch(current.clone()));
        Server {
            addr,
            current,
            _stop: stop,
        }
    }

    /// Answers as `s` from now on (`None`: silent).
    pub fn set(&self, s: Option<Box<dyn Service>>) {
        *self.current.lock().unwrap() = s;
    }
}

/// An emulated Quake III master listing `servers`: its address, and its stop.
pub fn master(servers: Vec<SocketAddr>) -> (SocketAddr, watch::Sender<bool>) {
    let service = fragstat::game("q3")
        .unwrap()
        .emulator()
        .expect("built with emulators")
        .emulated_master(&EmuMaster::new(servers))
        .unwrap();
    serve(service)
}
