//! Private slots, Tremulous 1.1's keys and the one engine behind the Quake III emulator (the
//! 2026-11 cross-check's E2, E4, E5 and D8).

use super::*;
use crate::view::server_info;

fn ask(s: &mut EmulatedServer, request: &[u8]) -> Packet {
    decode(&s.respond(request).unwrap()).unwrap()
}

fn replies(s: &mut EmulatedServer) -> (InfoResponse, StatusResponse) {
    let Packet::InfoResponse(i) = ask(s, b"\xff\xff\xff\xffgetinfo c1") else {
        panic!()
    };
    let Packet::StatusResponse(st) = ask(s, b"\xff\xff\xff\xffgetstatus c2") else {
        panic!()
    };
    (i, st)
}

/// The cross-check's real OpenArena: 12 slots, `sv_privateClients 2`, three bots.
fn private_oa() -> EmulatedServer {
    let mut c = ServerConfig::sample(Quake3Game::OpenArena, b"^^x ^3Pw^7Srv", 3);
    for p in &mut c.players {
        p.bot = true;
        p.ping = 0;
    }
    c.max_clients = 12;
    c.private_clients = 2;
    EmulatedServer::new(c)
}

/// E5: getinfo counts from the private slots up and leaves them out of `sv_maxclients`, as
/// ioq3's `SVC_Info` does; getstatus lists every slot and says `sv_privateClients`. These are
/// the real server's counts (`clients 1`, `g_humanplayers 0`, `sv_maxclients 10`).
#[test]
fn getinfo_counts_from_the_private_slots_up() {
    let (i, st) = replies(&mut private_oa());
    assert_eq!(i.info.get("clients"), Some(&b"1"[..]));
    assert_eq!(i.info.get("g_humanplayers"), Some(&b"0"[..]));
    assert_eq!(i.info.get("sv_maxclients"), Some(&b"10"[..]));
    assert_eq!(st.info.get("sv_maxclients"), Some(&b"12"[..]));
    assert_eq!(st.info.get("sv_privateClients"), Some(&b"2"[..]));
    assert_eq!(st.players.len(), 3);
}

/// Through the library option: humans skip the private slots, so with two private slots a
/// sample server of four (two humans, two bots) has both bots in them and both humans
/// counted in getinfo.
#[test]
fn the_library_option_seats_players_like_ioq3() {
    let config = EmuServer::new("x", "", 4).with_private_slots(2);
    let mut s = Quake3Game::Quake3.emulated_server(&config).unwrap();
    let mut out = Outbox::new();
    let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
    s.handle(Instant::now(), from, b"\xff\xff\xff\xffgetinfo c", &mut out);
    let Packet::InfoResponse(i) = decode(&out[0].1).unwrap() else {
        panic!()
    };
    assert_eq!(i.info.get("clients"), Some(&b"2"[..]));
    assert_eq!(i.info.get("g_humanplayers"), Some(&b"2"[..]));
    assert_eq!(i.info.get("sv_maxclients"), Some(&b"6"[..]));
}

#[test]
fn private_slots_are_refused_where_not_emulated() {
    let config = EmuServer::new("x", "", 2).with_private_slots(1);
    let e = Quake3Game::EnemyTerritory
        .emulated_server(&config)
        .err()
        .unwrap();
    assert!(e.to_string().contains("not emulated"), "{e}");
    let many = EmuServer::new("x", "", 0).with_private_slots(9);
    assert!(Quake3Game::Quake3.emulated_server(&many).is_err());
    // 8 slots, 7 private: the second human finds no public slot (bots would).
    let full = EmuServer::new("x", "", 3).with_private_slots(7);
    let e = Quake3Game::Quake3.emulated_server(&full).err().unwrap();
    assert!(e.to_string().contains("finds no slot"), "{e}");
}

/// D8: with players in the private slots getinfo's `clients` is less than the players
/// listed, and its bot count is the public slots' only; the record says the bots are unknown
/// (the real server: 3 players, 3 bots, getinfo `clients 1`). Without private slots the
/// counts agree and the bots are known.
#[test]
fn bots_are_unknown_when_getinfo_counts_fewer_than_listed() {
    let (i, st) = replies(&mut private_oa());
    let s = server_info(Quake3Game::OpenArena, Some(i), Some(st));
    assert_eq!((s.num_players, s.num_bots), (3, None));
    assert_eq!(s.max_players, 12, "the status's sv_maxclients");
    let mut open = EmulatedServer::new(ServerConfig::sample(Quake3Game::OpenArena, b"x", 4));
    let (i, st) = replies(&mut open);
    let s = server_info(Quake3Game::OpenArena, Some(i), Some(st));
    assert_eq!((s.num_players, s.num_bots), (4, Some(2)));
}

/// E2: Tremulous 1.1 sends `g_needpass` and the other serverinfo cvars it registers in its
/// status, and no `gamename` in getinfo (`SVC_Info` has none).
#[test]
fn tremulous_sends_g_needpass_and_no_getinfo_gamename() {
    let config = EmuServer::new("x", "", 2).with_password(true);
    let mut s = Quake3Game::Tremulous.emulated_server(&config).unwrap();
    let mut out = Outbox::new();
    let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
    for ask in [
        &b"\xff\xff\xff\xffgetinfo c1"[..],
        b"\xff\xff\xff\xffgetstatus c2",
    ] {
        s.handle(Instant::now(), from, ask, &mut out);
    }
    let (Ok(Packet::InfoResponse(i)), Ok(Packet::StatusResponse(st))) =
        (decode(&out[0].1), decode(&out[1].1))
    else {
        panic!("{out:?}")
    };
    assert_eq!(i.info.get("gamename"), None);
    assert_eq!(i.info.get("clients"), Some(&b"2"[..]));
    assert_eq!(st.info.get("g_needpass"), Some(&b"1"[..]));
    assert_eq!(st.info.get("gamename"), Some(&b"base"[..]));
    for key in [
        "g_maxGameClients",
        "timelimit",
        "g_suddenDeathTime",
        "g_unlagged",
    ] {
        assert!(st.info.get(key).is_some(), "{key}");
    }
    let s = server_info(Quake3Game::Tremulous, Some(i), Some(st));
    assert_eq!(s.password, Some(true));
}

/// E4: the Quake III emulator is one engine, ioq3 1.36: its version string, `com_protocol`
/// in the status and the legacy `protocol 68` in getinfo, and `g_humanplayers` (so bots
/// are known).
#[test]
fn quake3_is_one_engine_ioq3() {
    let mut s = EmulatedServer::new(ServerConfig::sample(Quake3Game::Quake3, b"x", 4));
    let (i, st) = replies(&mut s);
    let version = st.info.get("version").unwrap();
    assert!(version.starts_with(b"ioq3 1.36"), "{version:?}");
    assert_eq!(st.info.get("com_protocol"), Some(&b"71"[..]));
    assert_eq!(st.info.get("protocol"), None);
    assert_eq!(st.info.get("gamename"), Some(&b"baseq3"[..]));
    assert_eq!(i.info.get("protocol"), Some(&b"68"[..]));
    assert_eq!(i.info.get("gamename"), Some(&b"Quake3Arena"[..]));
    let s = server_info(Quake3Game::Quake3, Some(i), Some(st));
    assert_eq!(s.num_bots, Some(2));
}

/// E3: a passworded Medal of Honor server says nothing about it on this port, so the
/// emulator refuses `--password` instead of ignoring it.
#[test]
fn mohaa_refuses_a_password_it_could_not_show() {
    let config = EmuServer::new("x", "", 2).with_password(true);
    let e = Quake3Game::Mohaa.emulated_server(&config).err().unwrap();
    assert!(e.to_string().contains("does not say"), "{e}");
    assert_eq!(Quake3Game::Mohaa.default_name(), "fragstat emulated server");
    assert_eq!(
        Quake3Game::Quake3.default_name(),
        "^1fragstat ^7emulated server"
    );
}

/// Trial finding 23: at shutdown the server heartbeats its master twice, as ioq3's
/// `SV_MasterShutdown` does, and then nothing more is scheduled; without a master, nothing.
#[test]
fn heartbeats_twice_at_shutdown() {
    let master: SocketAddr = "127.0.0.1:27950".parse().unwrap();
    let config = EmuServer::new("x", "", 0).with_heartbeat_to(Some(master));
    let mut s = Quake3Game::OpenArena.emulated_server(&config).unwrap();
    let t0 = Instant::now();
    let mut out = Outbox::new();
    s.start(t0, &mut out);
    out.clear();
    s.stop(t0, &mut out);
    let hb = b"\xff\xff\xff\xffheartbeat QuakeArena-1\n".to_vec();
    assert_eq!(out, vec![(master, hb.clone()), (master, hb)]);
    assert_eq!(s.poll_timeout(), None);
    let mut quiet = Quake3Game::OpenArena
        .emulated_server(&EmuServer::new("x", "", 0))
        .unwrap();
    out.clear();
    quiet.stop(t0, &mut out);
    assert!(out.is_empty());
}
