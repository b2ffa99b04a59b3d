//! Tests of the emulators.

use super::*;
use crate::exchange::{Master6, Master7, Mode, Query6, Query7};
use crate::game::TeeworldsGame;
use fragstat_core::registry::{EmuServer, Emulate};
use fragstat_core::{Exchange, Verdict};

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

const ME: &str = "127.0.0.1:5555";

#[test]
fn ddnet_with_many_clients_splits_and_assembles() {
    let s = EmulatedServer::new(ServerConfig::sample(Flavor::Ddnet, b"big", 64));
    let me: SocketAddr = ME.parse().unwrap();
    let ext = s.extended_info(1);
    assert!(ext.len() >= 2, "64 clients need an iex+");
    for p in &ext {
        assert!(p.to_bytes().unwrap().len() <= 1400);
    }
    let info = drive(&mut Query6::new(Mode::Extended), |r| s.respond(me, r));
    assert_eq!(
        (info.num_players, info.players.as_ref().unwrap().len()),
        (64, 64)
    );
    assert_eq!(info.name.as_bytes(), b"big");
    let legacy = drive(&mut Query6::new(Mode::Legacy64), |r| s.respond(me, r));
    assert_eq!(legacy.players.as_ref().unwrap().len(), 64);
    // The vanilla reply lists 16 with "big [64/64]": the count read back from the name.
    let vanilla = drive(&mut Query6::new(Mode::Vanilla), |r| s.respond(me, r));
    assert_eq!(vanilla.name.as_bytes(), b"big");
    assert_eq!(vanilla.rules.get("name"), Some(&b"big [64/64]"[..]));
    assert_eq!((vanilla.num_players, vanilla.max_players), (64, 64));
    assert_eq!(vanilla.players.as_ref().unwrap().len(), 16);
    assert!(vanilla.truncated);
    let sixup = drive(&mut Query7::new(), |r| s.respond(me, r));
    assert_eq!(sixup.version.as_deref(), Some("0.7↔0.6.4, 16.4"));
    assert_eq!(sixup.num_players, 64);
}

#[test]
fn seven_needs_the_handshake_and_a_padded_request() {
    let s = EmulatedServer::new(ServerConfig::sample(Flavor::Teeworlds07, b"tw7", 3));
    let me: SocketAddr = ME.parse().unwrap();
    let unpadded = seven::Packet::TokenRequest {
        token: 1,
        padded: false,
    }
    .to_bytes()
    .unwrap();
    assert!(s.respond(me, &unpadded).is_empty());
    let bare = seven::Packet::Connless {
        token: seven::TOKEN_NONE,
        response_token: 1,
        body: Body::GetInfo { token: 0 },
    }
    .to_bytes()
    .unwrap();
    assert!(s.respond(me, &bare).is_empty());
    assert!(s
        .respond(me, b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xffgie3\x05")
        .is_empty());
    let info = drive(&mut Query7::new(), |r| s.respond(me, r));
    assert_eq!((info.num_players, info.num_bots), (3, Some(1)));
}

#[test]
fn vanilla_answers_the_extended_request_plainly() {
    let s = EmulatedServer::new(ServerConfig::sample(Flavor::Vanilla06, b"v", 2));
    let me: SocketAddr = ME.parse().unwrap();
    let info = drive(&mut Query6::new(Mode::Extended), |r| s.respond(me, r));
    assert_eq!(info.num_players, 2);
    assert!(s
        .respond(me, &six::Packet::GetInfo64 { token: 1 }.to_bytes().unwrap())
        .is_empty());
}

#[test]
fn masters_list_everything() {
    let servers: Vec<SocketAddr> = (0..200u16)
        .map(|i| SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 8303)))
        .chain(["[2001:db8::5]:8303".parse().unwrap()])
        .collect();
    let me: SocketAddr = ME.parse().unwrap();
    let m6 = EmulatedMaster::new(servers.clone(), false);
    let list = drive(&mut Master6::new(), |r| m6.respond(me, r));
    assert_eq!(list.len(), 201);
    assert_eq!(list[200].addr, servers[200]);
    let m7 = EmulatedMaster::new(servers, true);
    let list = drive(&mut Master7::new(), |r| m7.respond(me, r));
    assert_eq!(list.len(), 201);
}

#[test]
fn the_registry_entry_refuses_more_clients_than_the_protocol_lists() {
    let g = TeeworldsGame::Ddnet;
    assert!(g.emulated_server(&EmuServer::new("x", "", 129)).is_err());
    assert!(TeeworldsGame::Teeworlds
        .emulated_server(&EmuServer::new("x", "", 17).with_max_players(20))
        .is_err());
}

/// Cross-check E6: the emulated DDNet's `Tutorial` is the real stock map's CRC and size (as
/// the real DDNet 16.4 reports them); trial finding 23: the default name has no Quake colour
/// codes, which Teeworlds would show as text; private slots are refused.
#[test]
fn ddnet_tutorial_is_the_stock_map_and_names_are_plain() {
    let s = EmulatedServer::new(ServerConfig::sample(Flavor::Ddnet, b"d", 1));
    let me: SocketAddr = ME.parse().unwrap();
    let info = drive(&mut Query6::new(Mode::Extended), |r| s.respond(me, r));
    assert_eq!(info.map.as_bytes(), b"Tutorial");
    assert_eq!(info.rules.get("map_crc"), Some(&b"-1924373370"[..]));
    assert_eq!(info.rules.get("map_size"), Some(&b"1082711"[..]));
    for g in [
        TeeworldsGame::Teeworlds,
        TeeworldsGame::Teeworlds07,
        TeeworldsGame::Ddnet,
    ] {
        assert_eq!(g.default_name(), "fragstat emulated server");
    }
    let private = EmuServer::new("x", "", 0).with_private_slots(1);
    assert!(TeeworldsGame::Ddnet.emulated_server(&private).is_err());
}
