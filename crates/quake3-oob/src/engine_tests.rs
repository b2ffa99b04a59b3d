//! The Quake III exchanges driven by fragstat-core's engine over a simulated network: what
//! the crate's own client (before issue 32: queries now go through `fragstat::Client`) was
//! tested for.

use std::net::SocketAddr;
use std::time::Duration;

use fragstat_core::{Engine, Options, Outcome};

use crate::emulate::{EmulatedServer, ServerConfig};
use crate::exchange::{challenge, check_challenge};
use crate::exchange::{MasterExchange, Request, ServerExchange, ServerReply};
use crate::master::GetServers;
use crate::master::{encode_server_list, EotStyle, MAX_MASTER_PACKET};
use crate::Encode;
use crate::Quake3Game;
use fragstat_core::testing::{Faults, SimNet};
use fragstat_core::{Exchange, Transport, Verdict};
use std::sync::{Arc, Mutex};

/// The options the crate's own client used before issue 32 (500 ms, 3 retries).
fn options() -> Options {
    Options::default()
        .with_timeout(Duration::from_millis(500))
        .with_retries(3)
}

async fn server(engine: &Engine, addr: SocketAddr, options: Options) -> Outcome<ServerReply> {
    engine
        .query(addr, ServerExchange::new(Request::Both), options)
        .await
}

fn scan(
    engine: &Engine,
    addrs: impl Iterator<Item = SocketAddr>,
    options: Options,
) -> fragstat_core::Batch<ServerReply> {
    engine.run(
        addrs.map(|a| (a, ServerExchange::new(Request::Both))),
        options,
    )
}

async fn master_list(engine: &Engine, addr: SocketAddr, request: &GetServers) -> Vec<SocketAddr> {
    let ex = MasterExchange::new(request).unwrap();
    engine.query(addr, ex, options()).await.result.unwrap()
}

fn addr(p: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], p))
}

#[test]
fn challenges_identify_the_attempt() {
    assert_eq!(
        check_challenge(Some(&challenge(0xabc, 3)), 0xabc),
        Ok(Some(3))
    );
    assert_eq!(check_challenge(Some(b"fsabd-3"), 0xabc), Err(()));
    assert_eq!(check_challenge(None, 1), Ok(None));
    for nonce in [0, 1, 0xf, 0x10, 0xabc, u64::MAX, 0x0123_4567_89ab_cdef] {
        assert_eq!(
            check_challenge(Some(format!("fs{nonce:x}-7").as_bytes()), nonce),
            Ok(Some(7))
        );
        assert_eq!(
            check_challenge(Some(format!("fs0{nonce:x}-7").as_bytes()), nonce),
            Err(()),
            "a leading zero is not our challenge"
        );
        assert_eq!(
            check_challenge(Some(format!("fs{nonce:X}-7").as_bytes()), nonce),
            if format!("{nonce:x}") == format!("{nonce:X}") {
                Ok(Some(7))
            } else {
                Err(())
            }
        );
    }
    for (nonce, attempt) in [
        (0, 0),
        (0xabc, 9),
        (0x10, 10),
        (u64::MAX, u32::MAX),
        (7, 4_000_000_000),
    ] {
        assert_eq!(
            challenge(nonce, attempt),
            format!("fs{nonce:x}-{attempt}").into_bytes()
        );
    }
    assert_eq!(check_challenge(Some(b"fsabc"), 0xabc), Err(()));
    assert_eq!(check_challenge(Some(b"fsabc-"), 0xabc), Err(()));
    // The requests a query sends are the packets' own encoding.
    for (nonce, attempt) in [(0, 0), (0xabc, 9), (u64::MAX, u32::MAX), (7, 1_000)] {
        let c = Some(challenge(nonce, attempt));
        let info = crate::Packet::GetInfo {
            challenge: c.clone(),
        }
        .to_bytes()
        .unwrap();
        let status = crate::Packet::GetStatus { challenge: c }
            .to_bytes()
            .unwrap();
        for (ask, want) in [
            (Request::Info, vec![info.clone()]),
            (Request::Status, vec![status.clone()]),
            (Request::Both, vec![info, status]),
        ] {
            let mut ex = ServerExchange::with_nonce(ask, nonce);
            assert_eq!(
                ex.requests(attempt).unwrap(),
                want,
                "{ask:?} {nonce} {attempt}"
            );
        }
    }
    assert!(crate::valid_challenge(&challenge(u64::MAX, u32::MAX)));
}

/// Security review C1: a statusResponse without a challenge could come from anyone able
/// to send from the server's address. It completes no query; with
/// `accept_unverified` (games whose servers echo none) it is taken and marked.
#[test]
fn a_reply_without_our_challenge_is_ignored_unless_unverified_is_accepted() {
    let forged = b"\xff\xff\xff\xffstatusResponse\n\\sv_hostname\\forged\n";
    let mut ex = ServerExchange::with_nonce(Request::Status, 0xabc);
    assert!(
        matches!(ex.on_datagram(forged), Verdict::Ignore(_)),
        "a challenge-less reply completed the query"
    );
    let wrong = b"\xff\xff\xff\xffstatusResponse\n\\challenge\\fsabd-0\\sv_hostname\\forged\n";
    assert!(matches!(ex.on_datagram(wrong), Verdict::Ignore(_)));
    let real = b"\xff\xff\xff\xffstatusResponse\n\\challenge\\fsabc-0\\sv_hostname\\real\n";
    let Verdict::Done { output, attempt } = ex.on_datagram(real) else {
        panic!("our reply")
    };
    let reply = output.unwrap();
    assert_eq!(attempt, Some(0));
    assert!(!reply.unverified);
    // A game whose servers echo nothing: taken, and marked.
    let mut ex = ServerExchange::with_nonce(Request::Status, 0xabc).accept_unverified(true);
    let Verdict::Done { output, attempt } = ex.on_datagram(forged) else {
        panic!("accepted unverified")
    };
    let reply = output.unwrap();
    assert!(reply.unverified && attempt.is_none());
    assert!(reply.server_info(Quake3Game::Quake3).unverified);
    // Someone else's challenge is never taken, even then.
    let mut ex = ServerExchange::with_nonce(Request::Status, 0xabc).accept_unverified(true);
    assert!(matches!(ex.on_datagram(wrong), Verdict::Ignore(_)));
}

/// Security review C1 over the network: a forged reply without a challenge arrives 1 ms
/// before the real one, from the server's own address; the record is the real one.
#[tokio::test(start_paused = true)]
async fn a_forged_reply_just_before_the_real_one_changes_nothing() {
    let net = SimNet::new(
        Faults {
            latency: Duration::from_millis(10),
            ..Faults::default()
        },
        1,
    );
    let server_addr = addr(27960);
    let emu = Mutex::new(EmulatedServer::new(ServerConfig::sample(
        Quake3Game::Quake3,
        b"the real one",
        3,
    )));
    let weak = Arc::downgrade(&net);
    net.add_server(
        server_addr,
        Arc::new(move |req: &[u8]| {
            if let Some(net) = weak.upgrade() {
                net.inject(
                    server_addr,
                    b"\xff\xff\xff\xffstatusResponse\n\\sv_hostname\\FORGED\\sv_maxclients\\64\n0 0 \"fake\"\n"
                        .to_vec(),
                    Duration::from_millis(9),
                );
            }
            emu.lock().unwrap().respond(req).into_iter().collect()
        }),
    );
    let engine = Engine::with_transports(Some(net.clone() as Arc<dyn Transport>), None);
    let t = server(&engine, server_addr, options())
        .await
        .result
        .unwrap();
    let info = t.server_info(Quake3Game::Quake3);
    assert_eq!(info.name.as_bytes(), b"the real one");
    assert_eq!(info.players.as_ref().map(Vec::len), Some(3));
    assert!(!info.unverified);
}

#[tokio::test(start_paused = true)]
async fn scan_emulated_servers_with_loss() {
    let net = SimNet::new(
        Faults {
            request_loss: 0.2,
            duplicate: 0.2,
            latency: Duration::from_millis(10),
            ..Faults::default()
        },
        5,
    );
    for p in 0..50u16 {
        let emu = Mutex::new(EmulatedServer::new(ServerConfig::sample(
            Quake3Game::Quake3,
            format!("s{p}").as_bytes(),
            usize::from(p % 5),
        )));
        net.add_server(
            addr(27960 + p),
            Arc::new(move |req: &[u8]| emu.lock().unwrap().respond(req).into_iter().collect()),
        );
    }
    let engine = Engine::with_transports(Some(net.clone() as Arc<dyn Transport>), None);
    let options = Options::default()
        .with_timeout(Duration::from_millis(100))
        .with_retries(6);
    let all = scan(&engine, (0..50).map(|p| addr(27960 + p)), options)
        .collect_sorted()
        .await;
    for (p, o) in all.iter().enumerate() {
        let s = o
            .result
            .as_ref()
            .unwrap()
            .server_info(crate::Quake3Game::Quake3);
        assert_eq!(s.name.as_bytes(), format!("s{p}").as_bytes());
        assert_eq!(s.num_players as usize, p % 5);
        assert_eq!(s.players.as_ref().map_or(0, Vec::len), p % 5);
    }
}

#[tokio::test(start_paused = true)]
async fn a_server_whose_status_never_arrives_is_online_without_players() {
    let net = SimNet::new(Faults::default(), 1);
    let emu = Mutex::new(EmulatedServer::new(ServerConfig::sample(
        Quake3Game::Quake3,
        b"info only",
        2,
    )));
    // This server answers getinfo but never getstatus.
    net.add_server(
        addr(27960),
        Arc::new(move |req: &[u8]| {
            if req.starts_with(b"\xff\xff\xff\xffgetinfo") {
                emu.lock().unwrap().respond(req).into_iter().collect()
            } else {
                vec![]
            }
        }),
    );
    let engine = Engine::with_transports(Some(net.clone() as Arc<dyn Transport>), None);
    let t = server(&engine, addr(27960), options()).await;
    let reply = t.result.unwrap();
    assert!(reply.status.is_none());
    assert_eq!(
        reply.server_info(crate::Quake3Game::Quake3).num_players,
        2,
        "from the info clients count"
    );
    assert_eq!(
        t.attempts, 4,
        "getstatus was retried before giving up on it"
    );
    let getinfos = net
        .sent()
        .iter()
        .filter(|s| s.data.starts_with(b"\xff\xff\xff\xffgetinfo"))
        .count();
    assert_eq!(getinfos, 1, "retries ask only for what is missing");
}

/// The infoResponse arrives, the first getstatus is lost: once the batch has measured
/// round trips, getstatus is asked again after the adaptive timeout (a few round trips),
/// not after the whole attempt timeout; with adaptive timeouts off, after the timeout.
#[tokio::test(start_paused = true)]
async fn a_lost_getstatus_is_asked_again_after_the_adaptive_timeout() {
    for adaptive in [true, false] {
        let net = SimNet::new(
            Faults {
                latency: Duration::from_millis(15),
                ..Faults::default()
            },
            1,
        );
        for p in 0..=10u16 {
            let emu = Mutex::new(EmulatedServer::new(ServerConfig::sample(
                Quake3Game::Quake3,
                format!("s{p}").as_bytes(),
                2,
            )));
            let statuses = Mutex::new(0);
            net.add_server(
                addr(27960 + p),
                Arc::new(move |req: &[u8]| {
                    if p == 10 && req.starts_with(b"\xff\xff\xff\xffgetstatus") {
                        let mut n = statuses.lock().unwrap();
                        *n += 1;
                        if *n == 1 {
                            return vec![];
                        }
                    }
                    emu.lock().unwrap().respond(req).into_iter().collect()
                }),
            );
        }
        let engine = Engine::with_transports(Some(net.clone() as Arc<dyn Transport>), None);
        let options = Options::default()
            .with_timeout(Duration::from_millis(1000))
            .with_retries(3)
            .with_concurrency(1)
            .with_adaptive(adaptive);
        let all = scan(&engine, (0..=10).map(|p| addr(27960 + p)), options)
            .collect_sorted()
            .await;
        let last = all.last().unwrap().result.as_ref().unwrap();
        assert!(last.info.is_some() && last.status.is_some());
        let statuses: Vec<_> = net
            .sent()
            .into_iter()
            .filter(|s| s.to == addr(27970) && s.data.starts_with(b"\xff\xff\xff\xffgetstatus"))
            .map(|s| s.at)
            .collect();
        assert_eq!(statuses.len(), 2);
        let gap = statuses[1] - statuses[0];
        if adaptive {
            assert!(gap < Duration::from_millis(100), "{gap:?}");
        } else {
            // The timer restarted when the infoResponse came in, 15 ms after the send.
            assert_eq!(gap, Duration::from_millis(1015));
        }
    }
}

/// Regression: the small last datagram (with `\EOT`) arrived before a full one and the
/// client stopped at the marker, losing a datagram's worth of servers.
#[tokio::test(start_paused = true)]
async fn a_marker_that_overtakes_earlier_datagrams_does_not_cut_the_list() {
    let servers: Vec<SocketAddr> = (0..500u16)
        .map(|i| SocketAddr::from(([10, 3, (i >> 8) as u8, i as u8], 27960)))
        .collect();
    let packets = encode_server_list(&servers, false, EotStyle::LastPacket, MAX_MASTER_PACKET);
    assert_eq!(packets.len(), 3);
    let net = SimNet::new(Faults::default(), 1);
    let weak = Arc::downgrade(&net);
    net.add_server(
        addr(27950),
        Arc::new(move |_req: &[u8]| {
            let net = weak.upgrade().unwrap();
            // Delivered last-first, 20 ms apart.
            for (i, p) in packets.iter().rev().enumerate() {
                net.inject(
                    addr(27950),
                    p.clone(),
                    Duration::from_millis(5 + 20 * i as u64),
                );
            }
            vec![]
        }),
    );
    let engine = Engine::with_transports(Some(net.clone() as Arc<dyn Transport>), None);
    let start = tokio::time::Instant::now();
    let got = master_list(&engine, addr(27950), &Quake3Game::Quake3.getservers()).await;
    assert_eq!(got.len(), 500);
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(5 + 40 + 100),
        "finished one settle after the last datagram"
    );
}

#[tokio::test(start_paused = true)]
async fn master_ext_list_with_ipv6_entries() {
    let mut servers: Vec<SocketAddr> = (0..150u16)
        .map(|i| SocketAddr::from(([10, 2, 0, i as u8], 27960 + i)))
        .collect();
    servers.extend(
        (0..100u16).map(|i| SocketAddr::from(([0x2001, 0xdb8, 0, 0, 0, 0, 0, i + 1], 27960))),
    );
    let net = SimNet::new(
        Faults {
            jitter: Duration::from_millis(5),
            ..Faults::default()
        },
        2,
    );
    let master = crate::emulate::EmulatedMaster::new(
        servers.iter().map(|s| (*s, 68)).collect(),
        EotStyle::LastPacket,
    );
    let master = Mutex::new(master);
    net.add_server(
        addr(27950),
        Arc::new(move |req: &[u8]| {
            master
                .lock()
                .unwrap()
                .respond(std::time::Instant::now(), addr(40000), req)
                .into_iter()
                .map(|(_, d)| d)
                .collect()
        }),
    );
    let engine = Engine::with_transports(Some(net.clone() as Arc<dyn Transport>), None);
    let mut got = master_list(&engine, addr(27950), &GetServers::ext("Quake3Arena", 68)).await;
    got.sort();
    let mut want = servers.clone();
    want.sort();
    assert_eq!(got, want, "IPv4 and IPv6 entries over several datagrams");
    // The plain request lists IPv4 only.
    let got = master_list(&engine, addr(27950), &Quake3Game::Quake3.getservers()).await;
    assert_eq!(got.len(), 150);
    assert!(got.iter().all(SocketAddr::is_ipv4));
}

#[tokio::test(start_paused = true)]
async fn master_lists_every_terminator_style() {
    let servers: Vec<SocketAddr> = (0..600u16)
        .map(|i| SocketAddr::from(([10, 1, (i >> 8) as u8, i as u8], 27960)))
        .collect();
    for style in [
        EotStyle::LastPacket,
        EotStyle::EveryPacket,
        EotStyle::EofLast,
        EotStyle::None,
    ] {
        let net = SimNet::new(
            Faults {
                jitter: Duration::from_millis(5),
                ..Faults::default()
            },
            1,
        );
        let packets = encode_server_list(&servers, false, style, MAX_MASTER_PACKET);
        net.add_server(addr(27950), Arc::new(move |_req: &[u8]| packets.clone()));
        let engine = Engine::with_transports(Some(net.clone() as Arc<dyn Transport>), None);
        let got = master_list(&engine, addr(27950), &Quake3Game::Quake3.getservers()).await;
        let mut got_sorted = got.clone();
        got_sorted.sort();
        let mut want = servers.clone();
        want.sort();
        assert_eq!(got_sorted, want, "{style:?}");
    }
}
