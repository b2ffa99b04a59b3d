//! The per-server record every output format is made from (a stable interface: scripts rely
//! on these field names).

use std::net::SocketAddr;
use std::time::Duration;

use fragstat::quake3::{text, Game, InfoString, Player, Summary};
use fragstat::QueryError;
use serde::Serialize;

/// One server, as printed by `query`, `master --probe` and `decode`.
#[derive(Debug, Clone, Serialize)]
pub struct ServerRecord {
    /// `ip:port` (`[v6]:port`); null for `decode`.
    pub address: Option<String>,
    /// Game id (`q3`, `et`, `openarena`, `rtcw`, `oob:NN`).
    pub game: String,
    /// `online`, `timeout` or `error`.
    pub status: &'static str,
    /// Why the server is not online.
    pub error: Option<String>,
    /// Round-trip time of the answered attempt.
    pub rtt_ms: Option<f64>,
    /// Name with colour codes stripped, for display.
    pub name: Option<String>,
    /// Name, lossless: each byte as the code point of the same value (ISO-8859-1).
    pub name_raw: Option<String>,
    /// Map.
    pub map: Option<String>,
    /// Game type as the server sent it.
    pub gametype: Option<String>,
    /// Players on the server.
    pub num_players: Option<u32>,
    /// Player slots.
    pub max_players: Option<u32>,
    /// Bots, where the server says.
    pub num_bots: Option<u32>,
    /// Password required.
    pub password: Option<bool>,
    /// Players (null unless asked for with --players, or from a statusResponse).
    pub players: Option<Vec<PlayerRecord>>,
    /// Every key/value the server sent, in wire order (decoded: UTF-8 when valid, else ISO-8859-1).
    pub rules: Option<Rules>,
}

/// Server variables, serialized as a JSON object straight from the raw infostring.
#[derive(Debug, Clone)]
pub struct Rules(pub InfoString);

impl Serialize for Rules {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(
            self.0
                .pairs()
                .map(|(k, v)| (text::decode_cow(k), text::decode_cow(v))),
        )
    }
}

/// One player.
#[derive(Debug, Clone, Serialize)]
pub struct PlayerRecord {
    /// Name, colours stripped.
    pub name: String,
    /// Name, lossless (ISO-8859-1 byte mapping).
    pub name_raw: String,
    /// Score (null where the game sends none).
    pub score: Option<i32>,
    /// Ping in ms.
    pub ping: i32,
    /// Team, where the game has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team: Option<i32>,
}

impl PlayerRecord {
    fn new(p: &Player) -> Self {
        PlayerRecord {
            name: text::display(&p.name),
            name_raw: text::latin1(&p.name),
            score: p.score,
            ping: p.ping,
            team: p.team,
        }
    }
}

impl ServerRecord {
    fn empty(address: Option<SocketAddr>, game: Game, status: &'static str) -> Self {
        ServerRecord {
            address: address.map(|a| a.to_string()),
            game: game.id(),
            status,
            error: None,
            rtt_ms: None,
            name: None,
            name_raw: None,
            map: None,
            gametype: None,
            num_players: None,
            max_players: None,
            num_bots: None,
            password: None,
            players: None,
            rules: None,
        }
    }

    /// A server that answered.
    pub fn online(
        address: Option<SocketAddr>,
        game: Game,
        s: Summary,
        with_players: bool,
        rtt: Option<Duration>,
    ) -> Self {
        ServerRecord {
            rtt_ms: rtt.map(|d| (d.as_secs_f64() * 1e6).round() / 1e3),
            name: Some(text::display(&s.name)),
            name_raw: Some(text::latin1(&s.name)),
            map: Some(text::display(&s.map)),
            gametype: Some(text::decode_lossless(&s.gametype)),
            num_players: Some(s.num_players),
            max_players: Some(s.max_players),
            num_bots: s.num_bots,
            password: s.password,
            players: with_players.then(|| s.players.iter().map(PlayerRecord::new).collect()),
            rules: Some(Rules(s.rules)),
            ..Self::empty(address, game, "online")
        }
    }

    /// An address that could not be resolved.
    pub fn unresolved(text: &str, game: Game, error: &str) -> Self {
        ServerRecord {
            address: Some(text.to_string()),
            error: Some(error.to_string()),
            ..Self::empty(None, game, "error")
        }
    }

    /// A server that did not answer, or answered nonsense.
    pub fn failed(address: SocketAddr, game: Game, err: &QueryError) -> Self {
        let status = if err.is_timeout() { "timeout" } else { "error" };
        ServerRecord {
            error: Some(err.to_string()),
            ..Self::empty(Some(address), game, status)
        }
    }
}

fn cell(s: &str, width: usize) -> String {
    let mut out: String = s.chars().filter(|c| !c.is_control()).take(width).collect();
    let n = out.chars().count();
    out.extend(std::iter::repeat_n(' ', width.saturating_sub(n)));
    out
}

/// A name for the table: colour codes as ANSI colours when `color`, else stripped.
fn shown_name(display: &str, raw: &str, color: bool) -> String {
    let plain = || {
        display
            .chars()
            .filter(|c| !c.is_control())
            .collect::<String>()
    };
    if !color {
        return plain();
    }
    // `raw` is the lossless Latin-1 mapping of the bytes; control bytes are dropped first.
    match text::from_latin1(raw) {
        Some(bytes) => text::to_ansi(
            &bytes
                .into_iter()
                .filter(|b| !b.is_ascii_control())
                .collect::<Vec<u8>>(),
        ),
        None => plain(),
    }
}

/// The browser table; `color` renders name colour codes as ANSI colours (for terminals).
pub fn table(records: &[ServerRecord], show_players: bool, color: bool) -> String {
    let mut out = format!(
        "{} {} {} {} {} {} {}\n",
        cell("ADDRESS", 22),
        cell("STATUS", 8),
        cell("PING", 6),
        cell("PLAYERS", 8),
        cell("BOTS", 4),
        cell("MAP", 14),
        "NAME"
    );
    for r in records {
        let addr = r.address.as_deref().unwrap_or("-");
        let ping = match r.rtt_ms {
            Some(p) if p < 10.0 => format!("{p:.1}"),
            Some(p) => format!("{p:.0}"),
            None => "-".into(),
        };
        let players = match (r.num_players, r.max_players) {
            (Some(n), Some(m)) => format!("{n}/{m}"),
            _ => "-".into(),
        };
        let bots = r
            .num_bots
            .map(|b| b.to_string())
            .unwrap_or_else(|| "-".into());
        let name = match (&r.name, &r.name_raw, &r.error) {
            (Some(n), Some(raw), _) => shown_name(n, raw, color),
            (Some(n), None, _) => shown_name(n, n, false),
            (None, _, Some(e)) => format!("({e})"),
            (None, _, None) => String::new(),
        };
        out.push_str(&format!(
            "{} {} {} {} {} {} {}\n",
            cell(addr, 22),
            cell(r.status, 8),
            cell(&ping, 6),
            cell(&players, 8),
            cell(&bots, 4),
            cell(r.map.as_deref().unwrap_or("-"), 14),
            name
        ));
        if show_players {
            for p in r.players.iter().flatten() {
                let score = p.score.map(|s| s.to_string()).unwrap_or_else(|| "-".into());
                out.push_str(&format!(
                    "    {} {} {}\n",
                    cell(&score, 6),
                    cell(&p.ping.to_string(), 5),
                    shown_name(&p.name, &p.name_raw, color)
                ));
            }
        }
    }
    let online = records.iter().filter(|r| r.status == "online").count();
    let players: u32 = records.iter().filter_map(|r| r.num_players).sum();
    out.push_str(&format!(
        "{online} of {} servers online, {players} players\n",
        records.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_plain_or_coloured() {
        let raw = text::latin1(b"^1Red^7Guy\x07");
        assert_eq!(shown_name("RedGuy\u{7}", &raw, false), "RedGuy");
        assert_eq!(
            shown_name("RedGuy", &raw, true),
            "\x1b[31mRed\x1b[37mGuy\x1b[0m"
        );
    }
}
