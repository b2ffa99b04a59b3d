//! The round's plan without a database: records in, typed rows out, the writer's memory
//! committed with made-up ids.

use fragstat::core::model::{Dialect, Player, ServerInfo, Text};
use fragstat::core::record::{Record, Status};
use fragstat::events::EventKind;

use super::*;
use crate::store::Backend;

const A: &str = "127.0.0.1:27960";
const B: &str = "127.0.0.1:27961";
const GAP: i64 = 300_000;

fn params() -> WriteParams {
    WriteParams {
        session_gap_ms: GAP,
        flush_rounds: 10,
        new_players: 32,
        backend: Backend::Sqlite,
    }
}

fn online(addr: &str, players: &[(&[u8], Dialect)]) -> Record {
    let mut info = ServerInfo::default();
    info.name = Text::new(b"^1Red".to_vec(), Dialect::Quake);
    info.map = Text::new("q3dm17", Dialect::Quake);
    info.max_players = 16;
    info.num_players = u32::try_from(players.len()).unwrap();
    info.players = Some(
        players
            .iter()
            .map(|(n, d)| Player::new(Text::new(n.to_vec(), *d)))
            .collect(),
    );
    Record::online(
        Some(addr.into()),
        "q3",
        info,
        Some(std::time::Duration::from_millis(20)),
    )
}

fn quake(names: &[&str]) -> Vec<(&'static [u8], Dialect)> {
    names
        .iter()
        .map(|n| {
            (
                &*Box::leak(n.as_bytes().to_vec().into_boxed_slice()),
                Dialect::Quake,
            )
        })
        .collect()
}

fn down(addr: &str) -> Record {
    Record::failed(Some(addr.into()), "q3", Status::Timeout, "no reply".into())
}

fn data(at: i64, records: Vec<Record>) -> RoundData {
    RoundData {
        at,
        finished: at,
        records,
        ..RoundData::default()
    }
}

/// The ids a database would give the plan's rows (counting up from `st`'s largest).
fn ids_for(plan: &RoundPlan<'_>, next: &mut i64) -> Ids {
    let mut take = || {
        *next += 1;
        *next
    };
    Ids {
        servers: plan
            .servers
            .iter()
            .map(|s| if s.id == 0 { take() } else { s.id })
            .collect(),
        players: plan.players.iter().map(|_| Some(take())).collect(),
        sessions: plan.opens.iter().map(|_| Some(take())).collect(),
    }
}

/// A writer's memory and its id counter, rounds planned and committed.
struct Writer {
    st: State,
    next: i64,
    p: WriteParams,
}

impl Writer {
    fn new() -> Self {
        Writer {
            st: State::default(),
            next: 0,
            p: params(),
        }
    }

    fn round(&mut self, at: i64, records: Vec<Record>) -> RoundPlan<'static> {
        // Kept for the test's length (the plan borrows the round).
        let data: &'static RoundData = Box::leak(Box::new(data(at, records)));
        let plan = plan(&self.st, data, &self.p).unwrap();
        let ids = ids_for(&plan, &mut self.next);
        self.st.commit(plan.clone(), &ids);
        plan
    }

    fn open(&self, addr: &str) -> usize {
        self.st.servers.get(addr).map_or(0, |s| s.sessions.len())
    }
}

fn joins(plan: &RoundPlan<'_>) -> Vec<String> {
    names(plan, true)
}

fn leaves(plan: &RoundPlan<'_>) -> Vec<String> {
    names(plan, false)
}

fn names(plan: &RoundPlan<'_>, joined: bool) -> Vec<String> {
    plan.events
        .iter()
        .filter_map(|e| match (&e.kind, joined) {
            (EventKind::PlayerJoined(p), true) | (EventKind::PlayerLeft(p), false) => {
                Some(format!(
                    "{}@{}",
                    String::from_utf8_lossy(p.name.as_bytes()),
                    e.server
                ))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_new_server_gets_its_row_its_change_its_numbers_and_its_sessions() {
    let mut w = Writer::new();
    let p = w.round(1_000, vec![online(A, &quake(&["Sarge", "Doom"]))]);
    assert_eq!(p.upserts.len(), 1);
    assert_eq!(p.upserts[0].addr, A);
    assert_eq!(p.upserts[0].status, "online");
    assert_eq!(p.changes.len(), 1);
    assert_eq!(p.series.len(), 1);
    assert_eq!(p.series[0].players, Some(2));
    assert_eq!(p.series[0].rtt, Some(200));
    assert_eq!(p.opens.len(), 2);
    assert_eq!(p.players.len(), 2);
    assert_eq!((p.opens[0].nth, p.opens[1].nth), (0, 0));
    assert_eq!(joins(&p), [format!("Sarge@{A}"), format!("Doom@{A}")]);
    assert_eq!(p.round.online, 1);
    assert_eq!(p.round.players, 2);
    assert_eq!(w.open(A), 2);
}

#[test]
fn an_unchanged_server_writes_only_its_numbers() {
    let mut w = Writer::new();
    w.round(1_000, vec![online(A, &quake(&["Sarge"]))]);
    let p = w.round(2_000, vec![online(A, &quake(&["Sarge"]))]);
    assert!(p.upserts.is_empty(), "{:?}", p.upserts);
    assert!(p.changes.is_empty());
    assert_eq!(p.series.len(), 1);
    assert!(p.opens.is_empty() && p.closes.is_empty());
    assert!(p.events.is_empty());
}

#[test]
fn a_leaver_closes_at_this_round_and_a_joiner_opens() {
    let mut w = Writer::new();
    w.round(1_000, vec![online(A, &quake(&["Sarge", "Doom"]))]);
    let p = w.round(2_000, vec![online(A, &quake(&["Sarge", "Visor"]))]);
    assert_eq!(p.closes.len(), 1);
    assert_eq!(p.closes[0].left, Some(2_000));
    assert_eq!(p.closes[0].last_seen, 1_000);
    assert_eq!(leaves(&p), [format!("Doom@{A}")]);
    assert_eq!(joins(&p), [format!("Visor@{A}")]);
    // The server's leaves come before its joins.
    assert!(matches!(p.events[0].kind, EventKind::PlayerLeft(_)));
    assert_eq!(w.open(A), 2);
}

#[test]
fn a_server_going_down_keeps_its_sessions_for_the_gap_then_closes_them() {
    let mut w = Writer::new();
    w.round(1_000, vec![online(A, &quake(&["Sarge"]))]);
    let p = w.round(61_000, vec![down(A)]);
    assert_eq!(p.upserts.len(), 1, "its status changed");
    assert_eq!(p.upserts[0].down_since, Some(61_000));
    assert!(p.closes.is_empty(), "a lost reply splits nothing");
    assert_eq!(w.open(A), 1);
    // Past the gap: closed at the last round the player was seen in.
    let p = w.round(1_000 + GAP + 1, vec![down(A)]);
    assert_eq!(p.closes.len(), 1);
    assert_eq!(p.closes[0].left, Some(1_000));
    assert_eq!(leaves(&p), [format!("Sarge@{A}")]);
    assert_eq!(p.ended, [A.to_string()]);
    assert_eq!(w.open(A), 0);
    // Back: a new session.
    let p = w.round(2_000 + GAP, vec![online(A, &quake(&["Sarge"]))]);
    assert_eq!(joins(&p), [format!("Sarge@{A}")]);
}

#[test]
fn a_server_missing_from_the_round_ends_its_sessions_after_the_gap() {
    let mut w = Writer::new();
    w.round(1_000, vec![online(A, &quake(&["Sarge"])), online(B, &[])]);
    let p = w.round(2_000 + GAP, vec![online(B, &[])]);
    assert_eq!(leaves(&p), [format!("Sarge@{A}")]);
    assert_eq!(p.sightings.len(), 1);
    assert_eq!(p.sightings[0].last_seen, 1_000);
}

#[test]
fn a_restart_after_a_long_pause_ends_the_sessions_and_opens_new_ones_silently() {
    let mut w = Writer::new();
    w.round(1_000, vec![online(A, &quake(&["Sarge"]))]);
    // A new process: the memory as loaded (`resumed`).
    w.st.resumed = true;
    let p = w.round(2_000 + GAP, vec![online(A, &quake(&["Sarge"]))]);
    assert_eq!(p.closes.len(), 1);
    assert_eq!(p.closes[0].left, Some(1_000), "at the last sighting");
    assert_eq!(p.opens.len(), 1);
    assert!(
        p.events.is_empty(),
        "the first round after a start is the baseline"
    );
    assert_eq!(w.open(A), 1);
    // A short pause: the sessions go on.
    w.st.resumed = true;
    let p = w.round(3_000 + GAP, vec![online(A, &quake(&["Sarge"]))]);
    assert!(p.closes.is_empty() && p.opens.is_empty());
}

#[test]
fn one_name_twice_is_two_sessions_and_one_leaving_closes_the_second() {
    let mut w = Writer::new();
    let p = w.round(1_000, vec![online(A, &quake(&["Player", "Player"]))]);
    assert_eq!(p.opens.len(), 2);
    assert_eq!((p.opens[0].nth, p.opens[1].nth), (0, 1));
    assert_eq!(p.players.len(), 1, "one identity");
    assert_eq!(p.opens[0].player, p.opens[1].player);
    let p = w.round(2_000, vec![online(A, &quake(&["Player"]))]);
    assert_eq!(p.closes.len(), 1);
    assert_eq!(leaves(&p), [format!("Player@{A}")]);
    assert_eq!(w.open(A), 1);
}

#[test]
fn one_name_in_two_dialects_is_two_players() {
    let mut w = Writer::new();
    let both: Vec<(&[u8], Dialect)> =
        vec![(b"^1Sarge", Dialect::Quake), (b"^1Sarge", Dialect::Plain)];
    let p = w.round(1_000, vec![online(A, &both)]);
    assert_eq!(p.players.len(), 2);
    assert_eq!((p.opens[0].nth, p.opens[1].nth), (0, 0));
    assert_eq!(p.players[1].dialect, "plain");
    // The Quake one leaves: its session closes, the plain one's goes on.
    let p = w.round(2_000, vec![online(A, &[(b"^1Sarge", Dialect::Plain)])]);
    assert_eq!(p.closes.len(), 1);
    let left = match &p.events[0].kind {
        EventKind::PlayerLeft(pl) => pl.name.dialect(),
        k => panic!("{k:?}"),
    };
    assert_eq!(left, Dialect::Quake);
    assert!(p.opens.is_empty());
}

#[test]
fn the_churn_budget_opens_at_most_32_sessions_a_server_a_round() {
    let mut w = Writer::new();
    let names: Vec<String> = (0..100).map(|i| format!("p{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let p = w.round(
        1_000,
        vec![online(A, &quake(&names)), online(B, &quake(&["Sarge"]))],
    );
    assert_eq!(p.opens.len(), 33, "32 of A, 1 of B");
    assert_eq!(p.refused, 68);
    assert_eq!(joins(&p).len(), 33, "no event for a player refused");
    let refused = p.live[0]
        .slots
        .iter()
        .filter(|s| **s == Slot::Refused)
        .count();
    assert_eq!(refused, 68);
    // The next round: the 32 go on, 32 more open.
    let p = w.round(
        2_000,
        vec![online(A, &quake(&names)), online(B, &quake(&["Sarge"]))],
    );
    assert_eq!((p.opens.len(), p.refused), (32, 36));
    assert_eq!(w.open(A), 64);
    assert_eq!(w.open(B), 1);
    // Fresh names every round: never more than 32 a round.
    for r in 0..5i64 {
        let fresh: Vec<String> = (0..1024).map(|i| format!("r{r}n{i}")).collect();
        let fresh: Vec<&str> = fresh.iter().map(String::as_str).collect();
        let p = w.round(3_000 + r * 1_000, vec![online(A, &quake(&fresh))]);
        assert_eq!(p.opens.len(), 32);
        assert_eq!(p.players.len(), 32);
    }
}

#[test]
fn a_round_without_the_list_keeps_the_sessions() {
    let mut w = Writer::new();
    w.round(1_000, vec![online(A, &quake(&["Sarge"]))]);
    let mut r = online(A, &quake(&["Sarge"]));
    if let Some(i) = r.info.as_mut() {
        i.players = None;
    }
    let p = w.round(2_000, vec![r]);
    assert_eq!(p.unlisted, [A.to_string()]);
    assert!(p.closes.is_empty() && p.events.is_empty());
    assert_eq!(w.open(A), 1);
}

#[test]
fn open_sessions_are_refreshed_on_their_turn() {
    let mut w = Writer::new();
    w.round(1_000, vec![online(A, &quake(&["Sarge"]))]);
    let mut flushed = 0;
    for r in 2..=21i64 {
        let p = w.round(r * 1_000, vec![online(A, &quake(&["Sarge"]))]);
        flushed += p.flushes.len();
        for f in &p.flushes {
            assert_eq!((f.last_seen, f.left), (r * 1_000, None));
        }
    }
    assert_eq!(flushed, 2, "once every 10 rounds");
}

#[test]
fn one_row_per_address() {
    let mut w = Writer::new();
    let p = w.round(1_000, vec![online(A, &quake(&["Sarge"])), down(A)]);
    assert_eq!(p.series.len(), 1);
    assert_eq!(p.servers.len(), 1);
    assert_eq!(p.round.servers, 1);
}

/// Over rounds of joins, leaves, downs and restarts of servers, the events are exactly the
/// sessions opened and closed.
#[test]
fn the_events_are_the_sessions_opened_and_closed() {
    let mut w = Writer::new();
    let pool = ["a", "b", "c", "d", "a"];
    let mut seed = 7u64;
    let mut rand = move || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        seed >> 33
    };
    for r in 1..200i64 {
        let at = r * 60_000;
        let mut records = Vec::new();
        for addr in [A, B] {
            if rand() % 10 == 0 {
                records.push(down(addr));
                continue;
            }
            let mut list: Vec<(&[u8], Dialect)> = Vec::new();
            for n in pool {
                if rand() % 2 == 0 {
                    let d = if rand() % 3 == 0 {
                        Dialect::Plain
                    } else {
                        Dialect::Quake
                    };
                    list.push((n.as_bytes(), d));
                }
            }
            records.push(online(addr, &list));
        }
        let p = w.round(at, records);
        let j = p
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::PlayerJoined(_)));
        let l = p
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::PlayerLeft(_)));
        assert_eq!(j.count(), p.opens.len(), "round {r}");
        assert_eq!(l.count(), p.closes.len(), "round {r}");
    }
}

#[test]
fn a_server_gone_from_its_list_or_refusing_ends_its_sessions_at_once() {
    let mut w = Writer::new();
    w.round(
        1_000,
        vec![online(A, &quake(&["Sarge"])), online(B, &quake(&["Doom"]))],
    );
    // A times out, no master lists it now: gone. B refuses (nothing listens): gone.
    let mut data = data(
        61_000,
        vec![down(A), {
            let mut r = down(B);
            r.status = Status::Down;
            r
        }],
    );
    data.unlisted.insert(A.to_string());
    let data: &'static RoundData = Box::leak(Box::new(data));
    let p = plan(&w.st, data, &w.p).unwrap();
    assert_eq!(p.servers[0].next.unlisted_since, Some(61_000));
    assert_eq!(p.closes.len(), 2);
    assert!(p.closes.iter().all(|c| c.left == Some(c.last_seen)));
    assert_eq!(leaves(&p), [format!("Sarge@{A}"), format!("Doom@{B}")]);
    let ids = ids_for(&p, &mut w.next);
    w.st.commit(p, &ids);
    assert_eq!((w.open(A), w.open(B)), (0, 0));
    // Past the gap nothing more closes (no double close).
    let p = w.round(2_000 + GAP, vec![down(A)]);
    assert!(p.closes.is_empty());
}
