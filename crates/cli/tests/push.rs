//! ET: Legacy's pushed events through the command: `fragstat serve etl --tracker` pushes as
//! the engine's `sv_tracker` does, to every endpoint, from the server's game port; `fragstat
//! watch --push-listen` prints a server's pushes at once (`"pushed": true`) and its scans do
//! not repeat them. Loopback only; every socket is bound by the test or reported by the
//! program (port 0).

use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fragstat::core::service::{Outbox, Service};
use fragstat::core::{Transport, UdpTransport};
use fragstat::quake3::emulate::{EmuPlayer, EmulatedServer, ServerConfig};
use fragstat::quake3::Quake3Game;
use fragstat_testkit::spawn_serve;
use serde_json::Value;

mod support;
use support::{bin, run, stderr_of, Running};

/// The next `n` pushes `socket` receives, as text, each with its source.
fn receive(socket: &UdpSocket, n: usize) -> Vec<(SocketAddr, String)> {
    socket
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut buf = [0u8; 2048];
    (0..n)
        .map(|_| {
            let (len, from) = socket.recv_from(&mut buf).expect("a push in time");
            assert_eq!(buf[..4], [0xff; 4], "the out-of-band marker");
            (from, String::from_utf8_lossy(&buf[4..len]).into_owned())
        })
        .collect()
}

#[test]
fn serve_etl_pushes_to_every_endpoint_from_its_game_port() {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    // Space-separated, as the cvar.
    let endpoints = format!("{}  {}", a.local_addr().unwrap(), b.local_addr().unwrap());
    let served = spawn_serve(
        bin(),
        &[
            "etl",
            "--listen",
            "127.0.0.1:0",
            "--players",
            "2",
            "--tracker",
            &endpoints,
        ],
    );
    let server = served.servers[0];
    for socket in [&a, &b] {
        let got = receive(socket, 4);
        assert!(got.iter().all(|(from, _)| *from == server), "{got:?}");
        let texts: Vec<&str> = got.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts[..2], ["start", "map oasis"]);
        assert!(texts[2].starts_with("connect 0 "), "{texts:?}");
        assert!(texts[3].starts_with("connect 1 "), "{texts:?}");
    }
}

#[test]
fn tracker_endpoints_are_checked() {
    for (args, says) in [
        (&["q3", "--tracker", "127.0.0.1:4444"][..], "ET: Legacy"),
        (&["etl", "--tracker", "[::1]:4444"][..], "IPv4 only"),
        (
            &["etl", "--tracker", "127.0.0.1:1 127.0.0.1:2 127.0.0.1:3 127.0.0.1:4 127.0.0.1:5 127.0.0.1:6 127.0.0.1:7 127.0.0.1:8 127.0.0.1:9"][..],
            "1 to 8",
        ),
    ] {
        let mut all = vec!["serve"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--listen", "127.0.0.1:0"]);
        let out = run(&all);
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// The emulator, shared between its serve loop and the test; its own `start` pushes are not
/// sent (the test makes each push).
#[derive(Clone)]
struct Shared(Arc<Mutex<EmulatedServer>>);

impl Service for Shared {
    fn handle(&mut self, now: std::time::Instant, from: SocketAddr, d: &[u8], out: &mut Outbox) {
        self.0.lock().unwrap().handle(now, from, d, out);
    }
}

fn event(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[test]
fn watch_prints_pushes_at_once_and_scans_do_not_repeat_them() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let config = ServerConfig::sample(Quake3Game::EtLegacy, b"^1pushed", 0);
    let emu = Shared(Arc::new(Mutex::new(EmulatedServer::new(config))));
    let socket: Arc<dyn Transport> = {
        let _g = rt.enter();
        Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap())
    };
    let addr = socket.local_addr().unwrap().to_string();
    rt.spawn(fragstat::core::serve::run(
        socket.clone(),
        emu.clone(),
        std::future::pending(),
    ));
    let mut watch = Running::start(
        &[
            "watch",
            "etl",
            &addr,
            "--push-listen",
            "127.0.0.1:0",
            "--interval-s",
            "0.2",
            "--timeout-ms",
            "200",
            "--initial",
        ],
        &[],
    );
    let line = watch.wait_stderr("the push address", |l| l.contains("on udp "));
    let push: SocketAddr = line.rsplit(' ').next().unwrap().parse().unwrap();
    let up = event(&watch.wait_line("server_up", |l| l.contains("server_up")));
    assert_eq!(up["server"], addr.as_str());
    // The push goes first; the server changes once it is printed, so every scan after it
    // sees the player.
    let send = |f: &dyn Fn(&mut EmulatedServer, &mut Outbox)| {
        let mut copy = emu.0.lock().unwrap().clone().with_trackers(vec![push]);
        let mut out = Outbox::new();
        f(&mut copy, &mut out);
        assert!(!out.is_empty(), "the emulator pushed nothing");
        for (to, d) in &out {
            rt.block_on(socket.send_to(d, *to)).unwrap();
        }
    };
    let player = EmuPlayer {
        name: b"^2Pushy".to_vec(),
        score: 0,
        ping: 30,
        bot: false,
        team: 1,
    };
    let sent = Instant::now();
    send(&|s, out| {
        s.connect(player.clone(), out);
    });
    let joined = event(&watch.wait_line("the pushed join", |l| l.contains("player_joined")));
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(
        (&joined["pushed"], &joined["slot"], &joined["name_raw"]),
        (&true.into(), &0.into(), &"^2Pushy".into())
    );
    emu.0
        .lock()
        .unwrap()
        .connect(player.clone(), &mut Outbox::new());
    // A change no push tells: a scan's map_changed is the next line (no second join).
    emu.0
        .lock()
        .unwrap()
        .change_map(b"supply".to_vec(), &mut Outbox::new());
    let next = event(&watch.wait_line("the next event", |_| true));
    assert_eq!(next["event"], "map_changed", "{next}");
    assert!(next.get("pushed").is_none(), "{next}");
    send(&|s, out| {
        s.disconnect(0, out);
    });
    let left = event(&watch.wait_line("the pushed leave", |_| true));
    assert_eq!(
        (&left["event"], &left["pushed"]),
        (&"player_left".into(), &true.into())
    );
    watch.signal("-INT");
    watch.wait_exit();
    drop(rt);
}
