//! What is shown of a scan and how: sort order, which servers (qstat's `-u`, `-ne`, `-nf`),
//! the header, colours, CSV and TSV.

use std::cmp::Ordering;
use std::io::IsTerminal;

use clap::ValueEnum;
use fragstat::core::record::{Record, Status};

/// When to do something that depends on the terminal.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug, Default)]
pub enum When {
    /// When it goes to a terminal (for colours, also when `NO_COLOR` is not set; for
    /// progress, with ten servers or more).
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl When {
    /// Colours on stdout.
    pub fn color(self) -> bool {
        match self {
            When::Always => true,
            When::Never => false,
            When::Auto => {
                std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

/// A sort key (`--sort ping,players`; qstat's `-sort` letters `p`, `n`, `h`, `i`, `g`, `l`
/// too).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SortKey {
    /// Lowest round trip first (servers that did not answer last).
    Ping,
    /// Most players first.
    Players,
    /// By name (as shown, case-insensitively).
    Name,
    /// By map.
    Map,
    /// By address.
    Address,
    /// By game id.
    Game,
    /// As given (the default).
    List,
}

/// A sort key and its direction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Sort {
    /// What is compared.
    pub key: SortKey,
    /// The other way round (`-ping`, qstat's capital letters): servers without the value
    /// (that did not answer) still come last.
    pub reverse: bool,
}

impl From<SortKey> for Sort {
    fn from(key: SortKey) -> Sort {
        Sort {
            key,
            reverse: false,
        }
    }
}

/// Sort keys, in order of precedence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortKeys(pub Vec<Sort>);

/// Parses `--sort`: comma-separated words (`-word`: the other way round), or qstat's letters
/// run together (`pn`; a capital letter the other way round, `P`).
pub fn parse_sort(s: &str) -> Result<SortKeys, String> {
    parse_keys(s).map(SortKeys)
}

fn parse_keys(s: &str) -> Result<Vec<Sort>, String> {
    let mut keys = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (reverse, word_part) = match part.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, part),
        };
        let word = match word_part.to_ascii_lowercase().as_str() {
            "ping" => Some(SortKey::Ping),
            "players" => Some(SortKey::Players),
            "name" | "hostname" => Some(SortKey::Name),
            "map" => Some(SortKey::Map),
            "address" | "ip" => Some(SortKey::Address),
            "game" => Some(SortKey::Game),
            "list" => Some(SortKey::List),
            _ => None,
        };
        if let Some(key) = word {
            keys.push(Sort { key, reverse });
            continue;
        }
        // qstat's server sort letters: p ping, n players, h hostname, i address, g game,
        // l list order; a capital letter sorts the other way round.
        for c in part.chars() {
            let key = match c.to_ascii_lowercase() {
                'p' => SortKey::Ping,
                'n' => SortKey::Players,
                'h' => SortKey::Name,
                'i' => SortKey::Address,
                'g' => SortKey::Game,
                'l' => SortKey::List,
                _ => {
                    return Err(format!(
                        "unknown sort key {part:?}: ping, players, name, map, address, game, list, each with '-' before it for the other way round (or qstat's letters p, n, h, i, g, l; capitals the other way round)"
                    ))
                }
            };
            keys.push(Sort {
                key,
                reverse: c.is_ascii_uppercase(),
            });
        }
    }
    Ok(keys)
}

/// Which servers are shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only servers that answered (qstat `-u`).
    pub online: bool,
    /// Not servers that answered with no player on them (qstat `-ne`).
    pub not_empty: bool,
    /// Not servers that answered full (qstat `-nf`).
    pub not_full: bool,
}

impl Filter {
    /// Whether `r` is shown.
    pub fn keeps(&self, r: &Record) -> bool {
        if self.online && r.status != Status::Online {
            return false;
        }
        let Some(i) = &r.info else { return true };
        if self.not_empty && i.num_players == 0 {
            return false;
        }
        if self.not_full && i.max_players > 0 && i.num_players >= i.max_players {
            return false;
        }
        true
    }
}

/// Orders records by `keys` (ties by the next key, then by input order).
pub fn sort(records: &mut [(usize, Record)], keys: &[Sort]) {
    records.sort_by(|(pa, a), (pb, b)| {
        for k in keys {
            let o = compare(k.key, k.reverse, a, b);
            if o != Ordering::Equal {
                return o;
            }
        }
        pa.cmp(pb)
    });
}

/// `a` against `b` by `k`; `reverse` turns the values' order round, while records without
/// the value stay last.
fn compare(k: SortKey, reverse: bool, a: &Record, b: &Record) -> Ordering {
    let turn = |o: Ordering| if reverse { o.reverse() } else { o };
    let name = |r: &Record| r.info.as_ref().map(|i| i.name.display().to_lowercase());
    let map = |r: &Record| r.info.as_ref().map(|i| i.map.display().to_lowercase());
    // A value first, missing ones last.
    let some_first = |a: Option<String>, b: Option<String>| -> Ordering {
        match (a, b) {
            (Some(a), Some(b)) => turn(a.cmp(&b)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        }
    };
    match k {
        SortKey::Ping => match (a.rtt_ms, b.rtt_ms) {
            (Some(x), Some(y)) => turn(x.total_cmp(&y)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        },
        SortKey::Players => match (&a.info, &b.info) {
            (Some(x), Some(y)) => turn(y.num_players.cmp(&x.num_players)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        },
        SortKey::Name => some_first(name(a), name(b)),
        SortKey::Map => some_first(map(a), map(b)),
        SortKey::Address => {
            let (ka, kb) = (address_key(a), address_key(b));
            // Unparsable addresses last either way.
            match (ka.0 == 2, kb.0 == 2) {
                (false, false) => turn(ka.cmp(&kb)),
                _ => ka.cmp(&kb),
            }
        }
        SortKey::Game => turn(a.game.cmp(&b.game)),
        SortKey::List => Ordering::Equal,
    }
}

/// Addresses in numeric order (IPv4 before IPv6), unparsable ones last as text.
fn address_key(r: &Record) -> (u8, Option<std::net::SocketAddr>, String) {
    let text = r.address.clone().unwrap_or_default();
    match text.parse::<std::net::SocketAddr>() {
        Ok(a) => (u8::from(a.is_ipv6()), Some(a), String::new()),
        Err(_) => (2, None, text),
    }
}

/// How a delimited output (CSV, TSV) writes servers and players: one server per row; with
/// players asked for, each player is a row of its own right after its server
/// (`kind` = `player`, with the server's address and game), so the file stays one table.
pub fn delimited(
    records: &[Record],
    delimiter: u8,
    header: bool,
    players: bool,
    rules: bool,
) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::WriterBuilder::new()
        .delimiter(delimiter)
        .from_writer(Vec::new());
    let mut head = vec![
        "kind",
        "address",
        "game",
        "status",
        "ping_ms",
        "name",
        "map",
        "gametype",
        "players",
        "max_players",
        "bots",
        "password",
        "error",
    ];
    if rules {
        head.push("rules");
    }
    if players {
        head.extend([
            "player_name",
            "player_score",
            "player_ping",
            "player_team",
            "player_bot",
        ]);
    }
    if header {
        w.write_record(&head)?;
    }
    // What servers send reaches a file that someone `cat`s: no control characters (escape
    // sequences, bells, backspaces), as in the table.
    let opt = |v: Option<String>| v.map(|s| clean(&s)).unwrap_or_default();
    for r in records {
        let i = r.info.as_ref();
        let mut row = vec![
            "server".to_string(),
            opt(r.address.clone()),
            r.game.clone(),
            status_word(r.status).to_string(),
            opt(r.rtt_ms.map(|p| format!("{p:.3}"))),
            opt(i.map(|i| i.name.display())),
            opt(i.map(|i| i.map.display())),
            opt(i.and_then(|i| i.gametype.clone())),
            opt(i.map(|i| i.num_players.to_string())),
            opt(i.map(|i| i.max_players.to_string())),
            opt(i.and_then(|i| i.num_bots).map(|b| b.to_string())),
            opt(i.and_then(|i| i.password).map(|p| p.to_string())),
            opt(r.error.clone()),
        ];
        if rules {
            row.push(opt(i.and_then(|i| serde_json::to_string(&i.rules).ok())));
        }
        if players {
            row.extend(std::iter::repeat_n(String::new(), 5));
        }
        w.write_record(&row)?;
        if !players {
            continue;
        }
        for p in i.and_then(|i| i.players.as_ref()).into_iter().flatten() {
            let mut row = vec!["player".to_string(), opt(r.address.clone()), r.game.clone()];
            row.extend(std::iter::repeat_n(String::new(), head.len() - 3 - 5));
            row.extend([
                clean(&p.name.display()),
                opt(p.score.map(|v| v.to_string())),
                opt(p.ping.map(|v| v.to_string())),
                opt(p.team.map(|v| v.to_string())),
                opt(p.is_bot.map(|v| v.to_string())),
            ]);
            w.write_record(&row)?;
        }
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

/// `s` without control characters (a terminal would act on them).
pub fn clean(s: &str) -> String {
    if s.chars().any(char::is_control) {
        s.chars().filter(|c| !c.is_control()).collect()
    } else {
        s.to_string()
    }
}

/// The status as JSON and tables write it.
pub fn status_word(s: Status) -> &'static str {
    match s {
        Status::Online => "online",
        Status::Timeout => "timeout",
        Status::Down => "down",
        _ => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fragstat::core::model::{Dialect, Player, ServerInfo, Text};

    fn rec(addr: &str, name: &str, players: u32, max: u32, rtt: Option<f64>) -> Record {
        let mut i = ServerInfo::default();
        i.name = Text::new(name.as_bytes().to_vec(), Dialect::Quake);
        i.num_players = players;
        i.max_players = max;
        let mut r = Record::online(Some(addr.into()), "q3", i, None);
        r.rtt_ms = rtt;
        r
    }

    #[test]
    fn sort_keys_words_and_qstat_letters() {
        let keys = |v: &[SortKey]| v.iter().map(|&k| Sort::from(k)).collect::<Vec<_>>();
        assert_eq!(parse_sort("ping").unwrap().0, keys(&[SortKey::Ping]));
        assert_eq!(
            parse_sort("players,name").unwrap().0,
            keys(&[SortKey::Players, SortKey::Name])
        );
        assert_eq!(
            parse_sort("pn").unwrap().0,
            keys(&[SortKey::Ping, SortKey::Players])
        );
        let back = Sort {
            key: SortKey::Ping,
            reverse: true,
        };
        assert_eq!(parse_sort("P").unwrap().0, [back]);
        assert_eq!(parse_sort("-ping").unwrap().0, [back]);
        assert!(parse_sort("x").is_err());
        let down = Record::failed(Some("9.9.9.9:1".into()), "q3", Status::Timeout, "t".into());
        let mut v: Vec<(usize, Record)> = vec![
            (0, rec("1.1.1.1:1", "b", 2, 8, Some(30.0))),
            (1, down),
            (2, rec("1.1.1.2:1", "A", 5, 8, Some(10.0))),
            (3, rec("1.1.1.3:1", "c", 2, 8, Some(20.0))),
        ];
        sort(&mut v, &keys(&[SortKey::Ping]));
        assert_eq!(v.iter().map(|x| x.0).collect::<Vec<_>>(), [2, 3, 0, 1]);
        // The other way round; the server that did not answer still last.
        sort(&mut v, &[back]);
        assert_eq!(v.iter().map(|x| x.0).collect::<Vec<_>>(), [0, 3, 2, 1]);
        sort(&mut v, &keys(&[SortKey::Players, SortKey::Name]));
        assert_eq!(v.iter().map(|x| x.0).collect::<Vec<_>>(), [2, 0, 3, 1]);
        sort(&mut v, &keys(&[SortKey::List]));
        assert_eq!(v.iter().map(|x| x.0).collect::<Vec<_>>(), [0, 1, 2, 3]);
    }

    #[test]
    fn filters_are_qstats() {
        let empty = rec("1.1.1.1:1", "e", 0, 8, None);
        let full = rec("1.1.1.1:2", "f", 8, 8, None);
        let some = rec("1.1.1.1:3", "s", 3, 8, None);
        let down = Record::failed(None, "q3", Status::Timeout, "t".into());
        let f = Filter {
            online: true,
            ..Filter::default()
        };
        assert!(f.keeps(&some) && !f.keeps(&down));
        let f = Filter {
            not_empty: true,
            not_full: true,
            ..Filter::default()
        };
        assert!(!f.keeps(&empty) && !f.keeps(&full) && f.keeps(&some) && f.keeps(&down));
    }

    #[test]
    fn csv_rows_quote_what_needs_it_and_players_follow_their_server() {
        let mut r = rec("1.1.1.1:1", "a,\"b\"", 1, 8, Some(1.5));
        let mut p = Player::new(Text::new(b"x\ty".to_vec(), Dialect::Quake));
        p.score = Some(3);
        r.info.as_mut().unwrap().players = Some(vec![p]);
        let out =
            String::from_utf8(delimited(&[r.clone()], b',', true, true, false).unwrap()).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert!(lines[0].starts_with("kind,address,game,status,ping_ms,name"));
        assert!(lines[1].contains("\"a,\"\"b\"\"\""), "{out}");
        assert!(lines[2].starts_with("player,1.1.1.1:1,q3,"), "{out}");
        let tsv = String::from_utf8(delimited(&[r], b'\t', false, false, false).unwrap()).unwrap();
        assert_eq!(tsv.lines().count(), 1);
        assert!(
            tsv.starts_with("server\t1.1.1.1:1\tq3\tonline\t1.500\t"),
            "{tsv}"
        );
    }
}
