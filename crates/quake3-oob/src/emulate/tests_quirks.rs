//! The emulated master's catalogue quirks (issue 33): id's RtCW master answers only the short
//! form, Activision's mark every datagram with a bare `\EOT`, and dpmaster lists a named
//! game's servers only to requests naming it.

use super::*;
use crate::master::Terminator;

fn ask(master: &mut dyn Service, request: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Outbox::default();
    let from: SocketAddr = "127.0.0.1:5000".parse().unwrap();
    master.handle(Instant::now(), from, request, &mut out);
    out.into_iter().map(|(_, d)| d).collect()
}

fn listed(datagrams: &[Vec<u8>]) -> Vec<(Vec<SocketAddr>, Option<Terminator>)> {
    datagrams
        .iter()
        .map(|d| match decode(d).unwrap() {
            Packet::ServersResponse(l) => (l.servers, l.terminator),
            p => panic!("{p:?}"),
        })
        .collect()
}

#[test]
fn the_short_form_only_master_ignores_a_game_name() {
    let s: SocketAddr = "127.0.0.1:27960".parse().unwrap();
    let config = EmuMaster::new(vec![s]).with_short_only(true);
    let mut m = Quake3Game::Rtcw.emulated_master(&config).unwrap();
    assert!(ask(m.as_mut(), b"\xff\xff\xff\xffgetservers wolfmp 60").is_empty());
    assert!(ask(m.as_mut(), b"\xff\xff\xff\xffgetserversExt wolfmp 60").is_empty());
    let got = listed(&ask(m.as_mut(), b"\xff\xff\xff\xffgetservers 60"));
    assert_eq!(got[0].0, [s]);
}

#[test]
fn bare_eot_on_every_datagram_but_the_last() {
    let servers: Vec<SocketAddr> = (0..450u16)
        .map(|i| SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 28960)))
        .collect();
    let config = EmuMaster::new(servers.clone()).with_end_marker(EndMarker::BareEvery);
    let mut m = Quake3Game::Cod.emulated_master(&config).unwrap();
    let got = listed(&ask(m.as_mut(), b"\xff\xff\xff\xffgetservers 6"));
    assert!(got.len() >= 3);
    let (last, rest) = got.split_last().unwrap();
    assert!(rest.iter().all(|(_, t)| *t == Some(Terminator::EotBare)));
    assert_eq!(last.1, Some(Terminator::Eot));
    let all: Vec<SocketAddr> = got.into_iter().flat_map(|(l, _)| l).collect();
    assert_eq!(all, servers);
}

#[test]
fn named_listings_go_to_requests_naming_their_game() {
    let rally: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let oa: SocketAddr = "127.0.0.1:2".parse().unwrap();
    let config = EmuMaster::new(vec![]).with_listings(vec![
        fragstat_core::registry::EmuListing::new(rally, 71, Some("Q3Rally")),
        fragstat_core::registry::EmuListing::new(oa, 71, None),
    ]);
    let mut m = Quake3Game::Q3Rally.emulated_master(&config).unwrap();
    let named = listed(&ask(
        m.as_mut(),
        b"\xff\xff\xff\xffgetservers q3rally 71 empty full",
    ));
    assert_eq!(named[0].0, [rally]);
    let anonymous = listed(&ask(
        m.as_mut(),
        b"\xff\xff\xff\xffgetservers 71 empty full",
    ));
    assert_eq!(anonymous[0].0, [oa]);
    let other = listed(&ask(
        m.as_mut(),
        b"\xff\xff\xff\xffgetservers 68 empty full",
    ));
    assert!(other[0].0.is_empty());
}
