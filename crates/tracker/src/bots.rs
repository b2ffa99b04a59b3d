//! Which players are bots, decided once per round for every record before it is written, so
//! the sessions, the pages, the API and the events all say the same.
//!
//! A player keeps what its server said of it ([`fragstat::Player::is_bot`]: Dæmon's `B`
//! slots, DDNet's flags…). For the others:
//!
//! - **Counts that leave no doubt, any game.** When the server counts its bots
//!   ([`fragstat::ServerInfo::num_bots`]) and lists every player it counts, a count of 0 makes
//!   every player a human, and a count equal to the list makes every player a bot.
//! - **Ping 0, the id Tech 3 engines.** Their servers give every bot ping 0 and compute a
//!   human's from its packets (ioquake3 `code/server/sv_main.c`, `SV_CalcPings`: `if
//!   (cl->gentity->r.svFlags & SVF_BOT) { cl->ping = 0; continue; }`, the same function in
//!   Quake III 1.32, W:ET, RtCW and the Jedi Knight games). So a player with a ping above 0
//!   is a human. Ping 0 alone is not proof: a human on the server's own network can average
//!   0 ms too. A ping-0 player is a bot only when the server's bot count (`clients −
//!   g_humanplayers`, or its `bots`) equals the number of ping-0 players (then those are
//!   exactly the bots); when the counts disagree — more ping-0 players than bots, or fewer
//!   — no ping-0 player is marked either way: a human is never marked a bot on a guess.

use fragstat::core::record::Record;
use fragstat::{Player, ServerInfo};

/// Games whose servers give every bot ping 0 and compute humans' pings (module docs).
pub const PING_ZERO_BOTS: &[&str] = &[
    "q3",
    "openarena",
    "urt",
    "tremulous",
    "wop",
    "smokinguns",
    "q3rally",
    "reaction",
    "et",
    "etl",
    "rtcw",
    "jk2",
    "jka",
];

/// Marks the bots of every record ([`mark`]).
pub fn mark_all(records: &mut [Record]) {
    for r in records {
        let game = r.game.clone();
        if let Some(info) = r.info.as_mut() {
            mark(&game, info);
        }
    }
}

/// Marks the bots of one server's list, `game` its registry id (module docs): sets
/// `is_bot` where it was unknown and the rules make it certain; never changes what the
/// server said.
pub fn mark(game: &str, info: &mut ServerInfo) {
    let Some(players) = info.players.as_mut() else {
        return;
    };
    if players.is_empty() {
        return;
    }
    let listed = u32::try_from(players.len()).unwrap_or(u32::MAX);
    // The bots the count leaves for the players the server did not mark.
    let said = players.iter().filter(|p| p.is_bot == Some(true)).count();
    let unmarked: Vec<&mut Player> = players.iter_mut().filter(|p| p.is_bot.is_none()).collect();
    if unmarked.is_empty() {
        return;
    }
    let left = info
        .num_bots
        .filter(|_| info.num_players == listed)
        .and_then(|b| usize::try_from(b).ok())
        .and_then(|b| b.checked_sub(said));
    if left == Some(0) {
        set(unmarked, |_| Some(false));
        return;
    }
    if left == Some(unmarked.len()) {
        set(unmarked, |_| Some(true));
        return;
    }
    if !PING_ZERO_BOTS.contains(&game) {
        return;
    }
    let zeros = unmarked.iter().filter(|p| p.ping == Some(0)).count();
    let agree = left == Some(zeros);
    set(unmarked, |p| match p.ping {
        Some(0) if agree => Some(true),
        Some(0) | None => None,
        Some(_) => Some(false),
    });
}

fn set(players: Vec<&mut Player>, rule: impl Fn(&Player) -> Option<bool>) {
    for p in players {
        p.is_bot = rule(p);
    }
}

#[cfg(test)]
mod tests {
    use fragstat::core::model::{Dialect, Text};

    use super::*;

    fn player(name: &str, ping: Option<i32>) -> Player {
        let mut p = Player::new(Text::new(name.as_bytes().to_vec(), Dialect::Quake));
        p.ping = ping;
        p
    }

    /// A server listing `pings` (one player each), counting `bots`.
    fn server(pings: &[Option<i32>], bots: Option<u32>) -> ServerInfo {
        let mut s = ServerInfo::default();
        s.players = Some(
            pings
                .iter()
                .enumerate()
                .map(|(i, p)| player(&format!("p{i}"), *p))
                .collect(),
        );
        s.num_players = u32::try_from(pings.len()).unwrap();
        s.num_bots = bots;
        s
    }

    fn marks(game: &str, s: &mut ServerInfo) -> Vec<Option<bool>> {
        mark(game, s);
        s.players
            .as_ref()
            .unwrap()
            .iter()
            .map(|p| p.is_bot)
            .collect()
    }

    #[test]
    fn counts_that_agree_mark_the_ping_zero_players() {
        // The emulator's and OpenArena's farm: bots ping 0, humans not; 2 bots counted.
        let mut s = server(&[Some(20), Some(0), Some(22), Some(0)], Some(2));
        let (t, f) = (Some(true), Some(false));
        assert_eq!(marks("q3", &mut s), [f, t, f, t]);
        // Every player a bot (the real OpenArena server with 3 bots), any game.
        let mut s = server(&[Some(0), Some(0), Some(0)], Some(3));
        assert_eq!(marks("openarena", &mut s), [t, t, t]);
        let mut s = server(&[Some(999), Some(0)], Some(2));
        assert_eq!(marks("cod4", &mut s), [t, t], "the count leaves no doubt");
        // No bots counted: everyone human, a LAN player's ping 0 included.
        let mut s = server(&[Some(0), Some(40)], Some(0));
        assert_eq!(marks("q3", &mut s), [f, f]);
    }

    #[test]
    fn counts_that_disagree_mark_no_bot() {
        let (f, u) = (Some(false), None);
        // 1 bot counted, 2 players at ping 0 (one a human on the server's LAN): which one is
        // the bot is unknown, so neither is marked; the player with a ping is a human.
        let mut s = server(&[Some(0), Some(0), Some(35)], Some(1));
        assert_eq!(marks("openarena", &mut s), [u, u, f]);
        // 2 bots counted, 1 player at ping 0: the counts say something the pings do not.
        let mut s = server(&[Some(0), Some(35), Some(50)], Some(2));
        assert_eq!(marks("q3", &mut s), [u, f, f]);
        // No count (getinfo lost, or the private slots make it cover part of the list).
        let mut s = server(&[Some(0), Some(35)], None);
        assert_eq!(marks("q3", &mut s), [u, f]);
        // A count of another list (clients counted that are not listed): not used.
        let mut s = server(&[Some(0), Some(35)], Some(0));
        s.num_players = 3;
        assert_eq!(marks("q3", &mut s), [u, f]);
    }

    #[test]
    fn other_games_only_by_count_and_what_the_server_said() {
        let u = None;
        // Call of Duty: not an ioquake3 ping rule; the counts do not settle it.
        let mut s = server(&[Some(0), Some(35)], Some(1));
        assert_eq!(marks("cod4", &mut s), [u, u]);
        let mut s = server(&[Some(0), Some(35)], None);
        assert_eq!(marks("ddnet", &mut s), [u, u]);
        // What the server said stays, and counts for the rest: Dæmon marks one bot of two.
        let mut s = server(&[Some(0), Some(0)], Some(1));
        s.players.as_mut().unwrap()[0].is_bot = Some(true);
        assert_eq!(marks("unvanquished", &mut s), [Some(true), Some(false)]);
        let mut s = server(&[Some(0)], Some(1));
        s.players.as_mut().unwrap()[0].is_bot = Some(false);
        assert_eq!(marks("q3", &mut s), [Some(false)], "never overruled");
    }
}
