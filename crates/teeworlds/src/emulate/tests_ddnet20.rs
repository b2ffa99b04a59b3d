//! DDNet 20 in the emulator and the client: 128 clients, the 0.7 reply cut to one datagram
//! with the count in the name, and the info rate limits (issue 33 item 4).

use std::time::{Duration, Instant};

use super::*;
use crate::exchange::{Mode, Query6, Query7};
use crate::view::ServerExtra;
use fragstat_core::model::ServerInfo;
use fragstat_core::registry::{EmuServer, Emulate};
use fragstat_core::{Exchange, Verdict};

const ME: &str = "127.0.0.1:5555";

/// Runs an exchange against a responder until it finishes.
fn drive<E: Exchange>(ex: &mut E, mut respond: impl FnMut(&[u8]) -> Vec<Vec<u8>>) -> E::Output {
    for _ in 0..4 {
        for req in ex.requests(0).unwrap() {
            for reply in respond(&req) {
                match ex.on_datagram(&reply) {
                    Verdict::Done { output, .. } => return output.unwrap(),
                    Verdict::Advance => break,
                    Verdict::Invalid(e) => panic!("{e}"),
                    _ => {}
                }
            }
        }
    }
    panic!("no answer")
}

fn extra(i: &ServerInfo) -> &ServerExtra {
    i.extra_as::<ServerExtra>().unwrap()
}

fn listed(i: &ServerInfo) -> Option<usize> {
    i.players.as_ref().map(Vec::len)
}

#[test]
fn ddnet_with_128_clients_over_every_protocol() {
    let mut c = ServerConfig::sample(Flavor::Ddnet, b"big", 128);
    c.max_clients = 128;
    let s = EmulatedServer::new(c);
    let me: SocketAddr = ME.parse().unwrap();

    let ext = drive(&mut Query6::new(Mode::Extended), |r| s.respond(me, r));
    assert_eq!(
        (ext.num_players, ext.max_players, listed(&ext)),
        (128, 128, Some(128))
    );
    assert!(
        !ext.truncated && extra(&ext).partial.is_none(),
        "{:?}",
        ext.warnings
    );
    let legacy = drive(&mut Query6::new(Mode::Legacy64), |r| s.respond(me, r));
    assert_eq!((legacy.num_players, listed(&legacy)), (128, Some(128)));
    assert_eq!(extra(&legacy).datagrams, Some(6), "24 clients a dtsf");

    // Vanilla: 16 listed, counts capped, "big [128/128]" read back.
    let vanilla = drive(&mut Query6::new(Mode::Vanilla), |r| s.respond(me, r));
    assert_eq!(vanilla.name.as_bytes(), b"big");
    assert_eq!((vanilla.num_players, vanilla.max_players), (128, 128));
    assert_eq!((listed(&vanilla), vanilla.num_spectators), (Some(16), None));
    assert!(vanilla.truncated);
    assert_eq!(extra(&vanilla).partial, Some("name_count"));
    assert_eq!(
        vanilla.rules.get("name"),
        Some(&b"big [128/128]"[..]),
        "raw"
    );

    // 0.7: one datagram of at most 1400 bytes, the count in the name, read back.
    let raw = s.seven_info(7);
    assert!(raw.name.ends_with(b" [128/128]"), "{:?}", raw.name);
    assert!(raw.clients.len() < 128 && raw.clients.len() > 40);
    assert_eq!(
        raw.num_clients as usize,
        raw.clients.len(),
        "counts of the listed"
    );
    let bytes = seven::Packet::Connless {
        token: 1,
        response_token: 2,
        body: Body::Info(raw.clone()),
    }
    .to_bytes()
    .unwrap();
    assert!(bytes.len() <= 1400, "{}", bytes.len());
    let sixup = drive(&mut Query7::new(), |r| s.respond(me, r));
    assert_eq!(sixup.name.as_bytes(), b"big");
    assert_eq!((sixup.num_players, sixup.max_players), (128, 128));
    assert_eq!(listed(&sixup), Some(raw.clients.len()));
    assert!(sixup.truncated);
    assert_eq!(extra(&sixup).partial, Some("name_count"));
    assert!(sixup.warnings[0].starts_with(&format!("{} of 128 clients listed", raw.clients.len())));
}

/// DDNet cuts exactly where its packed info passes 1234 bytes; the last client that fits
/// is listed.
#[test]
fn the_sixup_cut_is_where_ddnet_makes_it() {
    for n in [40, 60, 64, 100, 128] {
        let mut c = ServerConfig::sample(Flavor::Ddnet, b"s", n);
        c.max_clients = 128;
        let s = EmulatedServer::new(c);
        let i = s.seven_info(0);
        // What DDNet measures: the head with every client counted, then the clients so far.
        let all = s.seven_with(0, b"s".to_vec(), &s.config.clients);
        let size = |k: usize| {
            sixup::head_len(&all)
                + all.clients[..k]
                    .iter()
                    .map(sixup::packed_len)
                    .sum::<usize>()
        };
        if size(n) <= sixup::CUT_ABOVE {
            assert_eq!((i.name.as_slice(), i.clients.len()), (&b"s"[..], n));
            continue;
        }
        let k = i.clients.len();
        assert!(
            size(k) <= sixup::CUT_ABOVE && size(k + 1) > sixup::CUT_ABOVE,
            "{n}: {k}"
        );
        assert_eq!(i.name, format!("s [{n}/128]").into_bytes());
        assert_eq!(i.clients[..], all.clients[..k]);
    }
}

/// A name that only looks like a count keeps it: the clients are all listed, or the server
/// is not DDNet's 0.7 side, or its vanilla counts are not capped.
#[test]
fn a_server_named_like_a_count_keeps_its_name() {
    let me: SocketAddr = ME.parse().unwrap();
    for (flavor, name) in [
        (Flavor::Ddnet, &b"x [3/4]"[..]),
        (Flavor::Teeworlds07, b"x [30/40]"),
        (Flavor::Vanilla06, b"x [30/40]"),
    ] {
        let s = EmulatedServer::new(ServerConfig::sample(flavor, name, 3));
        let i = match flavor {
            Flavor::Vanilla06 => drive(&mut Query6::new(Mode::Vanilla), |r| s.respond(me, r)),
            _ => drive(&mut Query7::new(), |r| s.respond(me, r)),
        };
        assert_eq!(i.name.as_bytes(), name, "{flavor:?}");
        assert_eq!((i.num_players, listed(&i)), (3, Some(3)), "{flavor:?}");
        assert!(!i.truncated && extra(&i).partial.is_none(), "{flavor:?}");
    }
}

fn extended_request(token: u8) -> Vec<u8> {
    six::Packet::GetInfo {
        token,
        extra_token: Some(0x1234),
    }
    .to_bytes()
    .unwrap()
}

/// What one reply to an extended request says: `Some(clients listed)`, `None` for none.
fn clients_in(out: &Outbox) -> Option<usize> {
    let (_, d) = out.first()?;
    match six::decode(d).unwrap() {
        six::Packet::InfoExtended(i) => Some(i.clients.len()),
        other => panic!("{other:?}"),
    }
}

/// A burst of 600 info requests within one second from many addresses: the first 50 get
/// the clients, the next 450 the counts alone, the rest nothing; the 0.7 handshake does not
/// count; a second later anyone is served in full again. With the limits off (`rate_limit`
/// false, `fragstat serve --no-rate-limit`), everything is answered in full.
#[test]
fn a_burst_meets_both_limits() {
    let g = crate::game::TeeworldsGame::Ddnet;
    let mut s = g.emulated_server(&EmuServer::new("x", "", 5)).unwrap();
    let t0 = Instant::now();
    let mut seen = Vec::new();
    for i in 0..600u16 {
        if i == 49 {
            // Token requests in the middle: answered, not counted.
            for k in 0..20 {
                let mut out = Outbox::new();
                let req = seven::Packet::token_request(k).to_bytes().unwrap();
                s.handle(t0, ME.parse().unwrap(), &req, &mut out);
                assert_eq!(out.len(), 1);
            }
        }
        let from = SocketAddr::from(([127, 0, (i >> 8) as u8, i as u8], 4000 + i));
        let mut out = Outbox::new();
        s.handle(t0, from, &extended_request(i as u8), &mut out);
        seen.push(clients_in(&out));
    }
    assert!(
        seen[..50].iter().all(|c| *c == Some(5)),
        "{:?}",
        &seen[..50]
    );
    assert!(seen[50..500].iter().all(|c| *c == Some(0)));
    assert!(seen[500..].iter().all(Option::is_none));
    let mut out = Outbox::new();
    let later = t0 + Duration::from_millis(1001);
    s.handle(later, ME.parse().unwrap(), &extended_request(1), &mut out);
    assert_eq!(clients_in(&out), Some(5), "a new second");

    let mut off = g
        .emulated_server(&EmuServer::new("x", "", 5).with_rate_limit(false))
        .unwrap();
    for i in 0..600u16 {
        let mut out = Outbox::new();
        off.handle(
            t0,
            ME.parse().unwrap(),
            &extended_request(i as u8),
            &mut out,
        );
        assert_eq!(clients_in(&out), Some(5), "request {i}");
    }
}

/// The client reads counts without clients as rate-limited, over every protocol: players
/// unknown (`None`, not an empty list), the count kept, a warning, `truncated`.
#[test]
fn counts_without_clients_read_as_rate_limited() {
    let mut c = ServerConfig::sample(Flavor::Ddnet, b"busy", 20);
    c.max_clients = 64;
    let mut s = EmulatedServer::new(c);
    let me: SocketAddr = ME.parse().unwrap();
    let t0 = Instant::now();
    // Use up the second's complete replies.
    for i in 0..50 {
        assert!(!s.respond_at(t0, me, &extended_request(i)).is_empty());
    }
    let mut limited = Vec::new();
    limited.push(drive(&mut Query6::new(Mode::Extended), |r| {
        s.respond_at(t0, me, r)
    }));
    limited.push(drive(&mut Query6::new(Mode::Legacy64), |r| {
        s.respond_at(t0, me, r)
    }));
    limited.push(drive(&mut Query7::new(), |r| s.respond_at(t0, me, r)));
    let vanilla = drive(&mut Query6::new(Mode::Vanilla), |r| s.respond_at(t0, me, r));
    assert_eq!(vanilla.name.as_bytes(), b"busy", "the count read back too");
    limited.push(vanilla);
    for i in &limited {
        let p = extra(i).protocol;
        assert_eq!((i.num_players, i.max_players), (20, 64), "{p}");
        assert_eq!(i.players, None, "{p}: not an empty list");
        assert!(i.truncated, "{p}");
        assert_eq!(extra(i).partial, Some("rate_limited"), "{p}");
        assert_eq!(i.warnings.len(), 1, "{p}: {:?}", i.warnings);
        assert!(i.warnings[0].starts_with("no client list"), "{p}");
    }
    // An empty server is not rate-limited.
    let empty = EmulatedServer::new(ServerConfig::sample(Flavor::Ddnet, b"e", 0));
    let i = drive(&mut Query6::new(Mode::Extended), |r| empty.respond(me, r));
    assert_eq!(
        (i.num_players, listed(&i), i.truncated),
        (0, Some(0), false)
    );
}
