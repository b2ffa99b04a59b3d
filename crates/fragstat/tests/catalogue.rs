//! The master catalogue (issue 33): with no master given, `Client::master_list` asks every
//! master of the game's catalogue, each its own way, and merges them with per-master
//! provenance. Every quirk kind of the catalogue is shown here against an emulated master
//! with the same quirk. The catalogue names real hosts: every test points each entry at an
//! emulated master on loopback first ([`local`]), so nothing is resolved or sent elsewhere.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fragstat::core::registry::catalogue::{self, Quirk};
use fragstat::core::registry::{
    CatalogueMaster, EmuListing, EmuMaster, EndMarker, EndOfList, ListForm, MasterTransport,
};
use fragstat::{Client, GameRef};

fn game(id: &str) -> GameRef {
    fragstat::game(id).unwrap()
}

/// The game's catalogue with entry `i` at `at[i]` (one address per entry: none is left
/// pointing at its real host).
fn local(game: &GameRef, at: &[SocketAddr]) -> Vec<CatalogueMaster> {
    let masters = game.catalogue();
    assert_eq!(
        masters.len(),
        at.len(),
        "{}: one address per entry",
        game.id()
    );
    let local: Vec<CatalogueMaster> = masters
        .iter()
        .zip(at)
        .map(|(m, a)| m.clone().pointed_at(*a))
        .collect();
    assert!(local.iter().all(|m| m.host.starts_with("127.")));
    local
}

fn client(master_timeout: Duration) -> Client {
    Client::builder()
        .timeout(Duration::from_millis(300))
        .retries(1)
        .master_timeout(master_timeout)
        .master_quiet(Duration::from_millis(200))
        .build()
        .unwrap()
}

fn addrs(n: u16, base: u16) -> Vec<SocketAddr> {
    (0..n)
        .map(|i| SocketAddr::from(([127, 0, 0, 1], base + i)))
        .collect()
}

/// Which quirk kind each test shows: exhaustive, so a new kind needs a test named here.
fn emulator_test(q: Quirk) -> &'static str {
    match q {
        Quirk::OwnForm => "the_own_form_and_no_end_marker_unvanquished",
        Quirk::Anonymous | Quirk::EndOnLast => "every_q3_master_asked_and_merged_with_provenance",
        Quirk::Named => "q3rally_names_itself_or_gets_openarena_servers",
        Quirk::Short | Quirk::SeveralProtocols => "rtcw_short_form_and_both_protocols",
        Quirk::Ext => "an_ext_entry_names_its_game",
        Quirk::EndOnEvery => "activision_eot_on_every_packet",
        Quirk::NoEnd => "a_master_without_an_end_marker_ends_on_the_quiet_period",
        Quirk::EndOnShort => "idtech4_lists_end_on_a_datagram_that_is_not_full",
        Quirk::Tcp => "cod4x_tcp_masters_asked_and_merged",
        Quirk::Http => "http_catalogue_lists_merge",
    }
}

/// Every entry of every game's catalogue names a source and a date, the registry hands it
/// out, and each of its quirk kinds has an emulator test in this file.
#[test]
fn every_catalogue_quirk_has_an_emulator_test() {
    let src = include_str!("catalogue.rs");
    let doc = include_str!("../../../docs/catalogue.md");
    let mut kinds = std::collections::BTreeSet::new();
    for (id, masters) in catalogue::all() {
        let g = game(id);
        assert_eq!(g.catalogue(), *masters, "{id}: the registry's catalogue");
        for m in *masters {
            assert!(!m.source.is_empty() && m.source.contains(' '), "{id} {m}");
            assert_eq!(m.checked.len(), 10, "{id} {m}: {}", m.checked);
            assert!(
                doc.contains(&format!("| `{id}` | `{}` |", m.address())),
                "{id} {m}: not in docs/catalogue.md"
            );
            for q in m.quirks() {
                let test = emulator_test(q);
                assert!(
                    src.contains(&format!("async fn {test}(")),
                    "{id} {m}: {q:?} has no emulator test {test}"
                );
                kinds.insert(q);
            }
        }
    }
    assert!(kinds.len() >= 9, "{kinds:?}");
}

/// q3: seven masters (anonymous; with and without end markers) asked at once, merged, each
/// server listed once with the masters that listed it.
#[tokio::test(flavor = "multi_thread")]
async fn every_q3_master_asked_and_merged_with_provenance() {
    let q3 = game("q3");
    let s = addrs(8, 20_000);
    let n = q3.catalogue().len();
    let farms: Vec<_> = (0..n)
        .map(|i| {
            let listed = vec![s[i], s[(i + 1) % n]];
            let end = if q3.catalogue()[i].end == fragstat::core::registry::EndOfList::Quiet {
                EndMarker::None
            } else {
                EndMarker::Last
            };
            support::master_with(&q3, &EmuMaster::new(listed).with_end_marker(end))
        })
        .collect();
    let at: Vec<SocketAddr> = farms.iter().map(|f| f.master.unwrap()).collect();
    let list = client(Duration::from_secs(2))
        .master_list(&q3, Vec::<String>::new())
        .catalogue(local(&q3, &at))
        .await
        .unwrap();
    assert_eq!(list.len(), n);
    for (i, r) in list.reports().iter().enumerate() {
        assert_eq!((r.status, r.listed), ("online", 2), "{i}: {r:?}");
        assert_eq!(
            r.catalogue.as_ref().map(|c| c.form),
            Some(ListForm::Anonymous)
        );
    }
    for l in list.entries() {
        let i = s.iter().position(|a| *a == l.entry.addr).unwrap();
        let mut by = l.masters.clone();
        by.sort_unstable();
        let mut want = vec![i, (i + n - 1) % n];
        want.sort_unstable();
        assert_eq!(by, want, "{}", l.entry.addr);
    }
}

/// RtCW: id's wolfmaster answers only the short form, and protocols 60 and 57 are both
/// populated: every master is asked for both, and wolfmaster's own servers come.
#[tokio::test(flavor = "multi_thread")]
async fn rtcw_short_form_and_both_protocols() {
    let rtcw = game("rtcw");
    let s = addrs(4, 20_100);
    let on57 = |a: SocketAddr| EmuListing::new(a, 57, None);
    let wolf = support::master_with(
        &rtcw,
        &EmuMaster::new(vec![s[0]])
            .with_listings(vec![on57(s[1])])
            .with_short_only(true)
            .with_end_marker(EndMarker::None),
    );
    let iortcw = support::master_with(
        &rtcw,
        &EmuMaster::new(vec![s[2]]).with_listings(vec![on57(s[1])]),
    );
    let dpm = support::master_with(
        &rtcw,
        &EmuMaster::new(vec![]).with_listings(vec![on57(s[3])]),
    );
    let at = [
        wolf.master.unwrap(),
        iortcw.master.unwrap(),
        dpm.master.unwrap(),
    ];
    let list = client(Duration::from_secs(2))
        .master_list_catalogue(&rtcw)
        .catalogue(local(&rtcw, &at))
        .await
        .unwrap();
    let mut got: Vec<SocketAddr> = list.servers().collect();
    got.sort();
    assert_eq!(got, s);
    let wolf_report = &list.reports()[0];
    assert_eq!((wolf_report.status, wolf_report.listed), ("online", 2));
    let both = list
        .entries()
        .iter()
        .find(|l| l.entry.addr == s[1])
        .unwrap();
    assert_eq!(both.masters, [0, 1]);
}

/// Q3Rally names itself: a master holding Q3Rally and anonymous (OpenArena) servers on
/// protocol 71 lists only the Q3Rally one.
#[tokio::test(flavor = "multi_thread")]
async fn q3rally_names_itself_or_gets_openarena_servers() {
    let rally = game("q3rally");
    let s = addrs(2, 20_200);
    let m = support::master_with(
        &rally,
        &EmuMaster::new(vec![]).with_listings(vec![
            EmuListing::new(s[0], 71, Some("Q3Rally")),
            EmuListing::new(s[1], 71, None),
        ]),
    );
    let list = client(Duration::from_secs(2))
        .master_list(&rally, Vec::<String>::new())
        .catalogue(local(&rally, &[m.master.unwrap()]))
        .await
        .unwrap();
    assert_eq!(list.servers().collect::<Vec<_>>(), [s[0]]);
}

/// An entry asked with `getserversExt <name>` gets the servers registered under that name.
#[tokio::test(flavor = "multi_thread")]
async fn an_ext_entry_names_its_game() {
    let q3 = game("q3");
    let s = addrs(2, 20_300);
    let m = support::master_with(
        &q3,
        &EmuMaster::new(vec![]).with_listings(vec![
            EmuListing::new(s[0], 68, Some("Quake3Arena")),
            EmuListing::new(s[1], 68, None),
        ]),
    );
    let entry = CatalogueMaster::udp(
        "ext.example",
        27950,
        ListForm::Ext("Quake3Arena"),
        fragstat::core::registry::EndOfList::LastPacket,
        &[],
        "a test entry",
    )
    .pointed_at(m.master.unwrap());
    let list = client(Duration::from_secs(2))
        .master_list(&q3, Vec::<String>::new())
        .catalogue([entry])
        .await
        .unwrap();
    assert_eq!(list.servers().collect::<Vec<_>>(), [s[0]]);
}

/// Activision's masters end every datagram with a bare `\EOT`: a list of several
/// datagrams is read whole, from the first master, beside the other two.
#[tokio::test(flavor = "multi_thread")]
async fn activision_eot_on_every_packet() {
    let cod = game("cod");
    let many: Vec<SocketAddr> = (0..450u16)
        .map(|i| SocketAddr::from(([127, 0, 1, (i % 200) as u8], 21_000 + i)))
        .collect();
    let a = support::master_with(
        &cod,
        &EmuMaster::new(many.clone()).with_end_marker(EndMarker::BareEvery),
    );
    let b = support::master(&cod, addrs(1, 20_400));
    let c = support::master(&cod, addrs(1, 20_401));
    let at = [a.master.unwrap(), b.master.unwrap(), c.master.unwrap()];
    let list = Client::builder()
        .master_timeout(Duration::from_secs(2))
        .master_quiet(Duration::from_millis(200))
        .list_filter(fragstat::ListFilter::keep_all())
        .build()
        .unwrap()
        .master_list(&cod, Vec::<String>::new())
        .catalogue(local(&cod, &at))
        .await
        .unwrap();
    assert_eq!(list.reports()[0].listed, 450, "{:?}", list.reports()[0]);
    assert_eq!(list.len(), 452);
}

/// No end marker (Tremulous' master): the list ends on the quiet period, not after the
/// master timeout (30 s here).
#[tokio::test(flavor = "multi_thread")]
async fn a_master_without_an_end_marker_ends_on_the_quiet_period() {
    let trem = game("tremulous");
    let s = addrs(3, 20_500);
    let m = support::master_with(
        &trem,
        &EmuMaster::new(s.clone()).with_end_marker(EndMarker::None),
    );
    let started = Instant::now();
    let list = client(Duration::from_secs(30))
        .master_list(&trem, Vec::<String>::new())
        .catalogue(local(&trem, &[m.master.unwrap()]))
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(list.servers().collect::<Vec<_>>(), s);
    assert!(
        took < Duration::from_secs(10),
        "{took:?}: the master timeout is 30 s"
    );
}

/// Unvanquished: each master asked with the game's own request; no end marker.
#[tokio::test(flavor = "multi_thread")]
async fn the_own_form_and_no_end_marker_unvanquished() {
    let unv = game("unvanquished");
    let s = addrs(3, 20_600);
    let a = support::master_with(
        &unv,
        &EmuMaster::new(vec![s[0], s[1]]).with_end_marker(EndMarker::None),
    );
    let b = support::master_with(
        &unv,
        &EmuMaster::new(vec![s[1], s[2]]).with_end_marker(EndMarker::None),
    );
    let started = Instant::now();
    let list = client(Duration::from_secs(30))
        .master_list(&unv, Vec::<String>::new())
        .catalogue(local(&unv, &[a.master.unwrap(), b.master.unwrap()]))
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(list.servers().collect::<Vec<_>>(), s);
    let shared = list
        .entries()
        .iter()
        .find(|l| l.entry.addr == s[1])
        .unwrap();
    assert_eq!(shared.masters, [0, 1]);
}

/// One emulated CoD4X TCP master on loopback: answers one connection with `stream` and
/// closes, as the CoD4X master ends its list.
async fn tcp_master(stream: Vec<u8>) -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut req = Vec::new();
        let mut buf = [0u8; 64];
        while !req.contains(&0) && req.len() < 1024 {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => req.extend_from_slice(&buf[..n]),
            }
        }
        let _ = s.write_all(&stream).await;
        let _ = s.shutdown().await;
    });
    addr
}

/// CoD4X's two TCP masters (the `cod4x` game): both asked over TCP, merged, each server with
/// the masters that listed it; a TCP entry under `cod4` (UDP) would be reported `skipped`.
#[tokio::test(flavor = "multi_thread")]
async fn cod4x_tcp_masters_asked_and_merged() {
    let cod4x = game("cod4x");
    let s = addrs(3, 20_700);
    let a = tcp_master(
        cod4x
            .emulator()
            .unwrap()
            .emulated_tcp_list(&s[..2])
            .unwrap(),
    )
    .await;
    let b = tcp_master(
        cod4x
            .emulator()
            .unwrap()
            .emulated_tcp_list(&s[1..])
            .unwrap(),
    )
    .await;
    assert!(cod4x
        .catalogue()
        .iter()
        .all(|m| m.transport == MasterTransport::Tcp));
    let list = client(Duration::from_secs(2))
        .master_list(&cod4x, Vec::<String>::new())
        .catalogue(local(&cod4x, &[a, b]))
        .await
        .unwrap();
    let mut got: Vec<SocketAddr> = list.servers().collect();
    got.sort();
    assert_eq!(got, s);
    for r in list.reports() {
        assert_eq!(r.status, "online", "{r:?}");
    }
    let both = list
        .entries()
        .iter()
        .find(|l| l.entry.addr == s[1])
        .unwrap();
    assert_eq!(both.masters, [0, 1]);
}

/// DDNet's four HTTP masters: one list each, merged, every server listed by all four.
#[tokio::test(flavor = "multi_thread")]
async fn http_catalogue_lists_merge() {
    let ddnet = game("ddnet");
    let s = addrs(2, 20_800);
    let http = support::Http::serve("/ddnet/15/servers.json", support::servers_json(&s)).await;
    let at = vec![http.addr; ddnet.catalogue().len()];
    let list = client(Duration::from_secs(2))
        .master_list(&ddnet, Vec::<String>::new())
        .catalogue(local(&ddnet, &at))
        .await
        .unwrap();
    assert_eq!(list.servers().collect::<Vec<_>>(), s);
    assert!(list.entries().iter().all(|l| l.masters == [0, 1, 2, 3]));
}

/// idTech 4 (Doom 3, Quake 4, Prey): every master asked with the game's own `getServers`; a
/// list spans full `servers` datagrams and ends on one that is not full, long before the
/// quiet period (20 s here) or the master timeout (30 s).
#[tokio::test(flavor = "multi_thread")]
async fn idtech4_lists_end_on_a_datagram_that_is_not_full() {
    let client = Client::builder()
        .timeout(Duration::from_millis(300))
        .retries(0)
        .master_timeout(Duration::from_secs(30))
        .master_quiet(Duration::from_secs(20))
        .build()
        .unwrap();
    for (k, id) in ["doom3", "quake4", "prey"].into_iter().enumerate() {
        let g = game(id);
        let n = g.catalogue().len();
        // The first master lists 300 servers: a full datagram (231) and a short one. One
        // address each (a master's list keeps at most 256 ports of one host).
        let s: Vec<SocketAddr> = (0..300u16)
            .map(|i| {
                SocketAddr::from((
                    [127, 10 + k as u8, (i / 200) as u8, (i % 200) as u8 + 1],
                    27_666,
                ))
            })
            .collect();
        let farms: Vec<_> = (0..n)
            .map(|i| {
                let listed = if i == 0 { s.clone() } else { s[298..].to_vec() };
                support::master_with(&g, &EmuMaster::new(listed))
            })
            .collect();
        let at: Vec<SocketAddr> = farms.iter().map(|f| f.master.unwrap()).collect();
        let started = Instant::now();
        let list = client
            .master_list(&g, Vec::<String>::new())
            .catalogue(local(&g, &at))
            .await
            .unwrap();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(10), "{id}: {took:?}");
        let got: Vec<SocketAddr> = list.servers().collect();
        assert!(got == s, "{id}: {} servers, want {}", got.len(), s.len());
        for r in list.reports() {
            assert_eq!(r.status, "online", "{id}: {r:?}");
            let c = r.catalogue.as_ref().unwrap();
            assert_eq!((c.form, c.end), (ListForm::Own, EndOfList::ShortPacket));
        }
        let last = list.entries().iter().find(|l| l.entry.addr == s[299]);
        assert_eq!(last.unwrap().masters, (0..n).collect::<Vec<_>>(), "{id}");
    }
}
