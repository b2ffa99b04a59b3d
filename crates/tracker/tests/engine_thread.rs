//! The rounds run on a thread and runtime of their own (security review M9): while the web's
//! thread is held up (a page rendering for a long time, here a blocking sleep on it), rounds
//! go on being probed and written, their probes answered in time.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fragstat::core::registry::EmuServer;
use fragstat::core::{Transport, UdpTransport};
use fragstat_tracker::config::{Config, Source};
use fragstat_tracker::Tracker;

/// An emulated Quake III server with three players, on a runtime and thread of its own.
fn server() -> (SocketAddr, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let socket: Arc<dyn Transport> = rt
        .block_on(async { Arc::new(UdpTransport::bind("127.0.0.1:0".parse().unwrap()).unwrap()) });
    let addr = socket.local_addr().unwrap();
    let service = fragstat::game("q3")
        .unwrap()
        .emulator()
        .expect("built with emulators")
        .emulated_server(&EmuServer::new(b"m9".to_vec(), "q3dm17", 3))
        .unwrap();
    rt.spawn(fragstat::core::serve::run(
        socket,
        service,
        std::future::pending(),
    ));
    (addr, rt)
}

#[test]
fn rounds_go_on_while_the_web_thread_is_busy() {
    let (addr, _server) = server();
    // One thread for the caller, as `fragstat track` runs the web.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(web_thread_busy(addr));
}

async fn web_thread_busy(addr: SocketAddr) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        database: dir.path().join("m9.db").display().to_string(),
        listen: "127.0.0.1:0".parse().unwrap(),
        interval_secs: 0.2,
        timeout_ms: 300,
        retries: 0,
        sources: vec![Source {
            game: "q3".into(),
            masters: Vec::new(),
            servers: vec![addr.to_string()],
            ext: false,
        }],
        ..Config::default()
    };
    let tracker = Tracker::open(config).await.unwrap();
    let listener = fragstat_tracker::web::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let (seen_tx, mut seen) = tokio::sync::watch::channel(0u32);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let run = tracker.run(
        listener,
        async {
            let _ = stop_rx.await;
        },
        |_| seen_tx.send_modify(|n| *n += 1),
    );
    let busy = async {
        seen.wait_for(|n| *n >= 1).await.unwrap();
        // The web's thread held for 1.5 s: nothing else runs on it meanwhile.
        let from = fragstat_tracker::round::now_ms();
        std::thread::sleep(Duration::from_millis(1500));
        let to = fragstat_tracker::round::now_ms();
        let _ = stop_tx.send(());
        (from, to)
    };
    let (ran, (from, to)) = tokio::join!(run, busy);
    ran.unwrap();
    let rounds = tracker.store().rounds(1000).await.unwrap();
    let during: Vec<_> = rounds
        .iter()
        .filter(|r| r.at > from && r.finished < to)
        .collect();
    // Seven intervals: at least three whole rounds written meanwhile (the rounds handed to
    // the web side wait for it, four at most), each with the server answering in time.
    assert!(
        during.len() >= 3,
        "{} rounds while the web was busy: {rounds:?}",
        during.len()
    );
    assert!(
        during.iter().all(|r| r.online == 1 && r.players == 3),
        "{during:?}"
    );
}
