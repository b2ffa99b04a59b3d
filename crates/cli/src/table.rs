//! The browser table: column widths from the content (an address is never cut), player rows
//! under their server with a header, rules under the server with `--rules`, and a `…` where
//! a long map name is clipped.

use fragstat::core::record::{Record, Status};
use fragstat::core::text;

/// Widest map column before clipping (with a `…` marker).
const MAP_WIDTH: usize = 24;

fn width(s: &str) -> usize {
    s.chars().count()
}

/// Control characters dropped; clipped to `max` characters with `…` as the last one.
fn clip(s: &str, max: usize) -> String {
    let clean: String = s.chars().filter(|c| !c.is_control()).collect();
    if width(&clean) <= max {
        return clean;
    }
    let mut out: String = clean.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn pad(s: &str, w: usize) -> String {
    let mut out = s.to_string();
    out.extend(std::iter::repeat_n(' ', w.saturating_sub(width(s))));
    out
}

/// Left-aligned columns, each as wide as its widest cell (the last column is not padded).
pub fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| width(c))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i + 1 == r.len() {
                    c.clone()
                } else {
                    pad(c, widths.get(i).copied().unwrap_or(0))
                }
            })
            .collect();
        out.push_str(cells.join(" ").trim_end());
        out.push('\n');
    }
    out
}

/// A name for the table: colour codes as ANSI colours when `color` (in the name's dialect), else
/// stripped; control characters dropped.
fn shown(name: &fragstat::Text, color: bool) -> String {
    if color {
        let clean: Vec<u8> = name
            .as_bytes()
            .iter()
            .copied()
            .filter(|b| !b.is_ascii_control())
            .collect();
        fragstat::Text::new(clean, name.dialect()).ansi()
    } else {
        name.display().chars().filter(|c| !c.is_control()).collect()
    }
}

/// The PING cell: a loopback or LAN round trip is well under a millisecond, so not `0.0`.
fn ping_text(ms: Option<f64>) -> String {
    match ms {
        Some(p) if p < 0.01 => "<0.01".into(),
        Some(p) if p < 1.0 => format!("{p:.2}"),
        Some(p) if p < 10.0 => format!("{p:.1}"),
        Some(p) => format!("{p:.0}"),
        None => "-".into(),
    }
}

fn status(s: Status) -> &'static str {
    crate::view::status_word(s)
}

/// The table of `records`; `view.players` adds player rows, `view.rules` the server
/// variables, `view.header` the header line. The footer ([`Totals::footer`]) is the caller's:
/// it counts servers the filters left out too.
pub fn servers(records: &[Record], view: &crate::output::View) -> String {
    let (players, rules, color) = (view.players, view.rules, view.color);
    let mut rows = vec![vec![
        "ADDRESS".to_string(),
        "STATUS".into(),
        "PING".into(),
        "PLAYERS".into(),
        "BOTS".into(),
        "MAP".into(),
        "NAME".into(),
    ]];
    // Player and rule lines go after their server's row; collect them per row.
    let mut after: Vec<Vec<String>> = vec![Vec::new()];
    for r in records {
        let ping = ping_text(r.rtt_ms);
        let info = r.info.as_ref();
        let counts = info.map_or("-".into(), |i| {
            format!("{}/{}", i.num_players, i.max_players)
        });
        let bots = info
            .and_then(|i| i.num_bots)
            .map_or("-".into(), |b| b.to_string());
        let map = info.map_or("-".into(), |i| clip(&i.map.display(), MAP_WIDTH));
        let name = match (info, &r.error) {
            (Some(i), _) => shown(&i.name, color),
            (None, Some(e)) => format!("({e})"),
            (None, None) => String::new(),
        };
        rows.push(vec![
            r.address.clone().unwrap_or_else(|| "-".into()),
            status(r.status).into(),
            ping,
            counts,
            bots,
            map,
            name,
        ]);
        let mut lines = Vec::new();
        if let Some(i) = info {
            if players {
                if let Some(ps) = i.players.as_ref().filter(|p| !p.is_empty()) {
                    let mut t = vec![vec![
                        "SCORE".to_string(),
                        "PING".into(),
                        "TEAM".into(),
                        "NAME".into(),
                    ]];
                    for p in ps {
                        let opt = |v: Option<i32>| v.map_or("-".into(), |v| v.to_string());
                        t.push(vec![
                            opt(p.score),
                            opt(p.ping),
                            opt(p.team),
                            shown(&p.name, color),
                        ]);
                    }
                    lines.extend(columns(&t).lines().map(|l| format!("    {l}")));
                }
            }
            if rules {
                for (k, v) in i.rules.pairs() {
                    lines.push(format!(
                        "    {} = {}",
                        clip(&text::decode_lossless(k), 64),
                        clip(&text::decode_lossless(v), 200)
                    ));
                }
            }
        }
        after.push(lines);
    }
    let table = columns(&rows);
    let mut out = String::new();
    for (n, (line, extra)) in table.lines().zip(&after).enumerate() {
        if n > 0 || view.header {
            out.push_str(line);
            out.push('\n');
        }
        for l in extra {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// What the footer counts: every server of the scan, shown or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Servers (and entries that could not be asked).
    pub servers: usize,
    /// Of them, those that answered.
    pub online: usize,
    /// Players on the servers that answered.
    pub players: u64,
    /// Servers the filters showed.
    pub shown: usize,
}

impl Totals {
    /// Counts `r`; `shown`: whether the filters keep it.
    pub fn add(&mut self, r: &Record, shown: bool) {
        self.servers += 1;
        if r.status == Status::Online {
            self.online += 1;
        }
        self.players += r.info.as_ref().map_or(0, |i| u64::from(i.num_players));
        self.shown += usize::from(shown);
    }

    /// The table's last line: `6 of 9 servers online, 17 players` over every server asked,
    /// and how many are shown when the filters left some out.
    pub fn footer(&self) -> String {
        let mut line = format!(
            "{} of {} online, {}",
            self.online,
            crate::scan::count(self.servers, "server"),
            crate::scan::count(
                usize::try_from(self.players).unwrap_or(usize::MAX),
                "player"
            )
        );
        if self.shown != self.servers {
            line.push_str(&format!(" ({} shown)", self.shown));
        }
        line.push('\n');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fragstat::core::model::{Dialect, ServerInfo, Text};

    #[test]
    fn pings_under_a_millisecond_are_not_zero() {
        assert_eq!(ping_text(Some(0.04)), "0.04");
        assert_eq!(ping_text(Some(0.001)), "<0.01");
        assert_eq!(ping_text(Some(3.25)), "3.2");
        assert_eq!(ping_text(Some(42.4)), "42");
        assert_eq!(ping_text(None), "-");
    }

    #[test]
    fn names_plain_or_coloured() {
        let t = Text::new(b"^1Red^7Guy\x07".to_vec(), Dialect::Quake);
        assert_eq!(shown(&t, false), "RedGuy");
        assert_eq!(shown(&t, true), "\x1b[31mRed\x1b[37mGuy\x1b[0m");
        let tw = Text::new(b"^1Tee".to_vec(), Dialect::Plain);
        assert_eq!(shown(&tw, true), "^1Tee");
    }

    #[test]
    fn long_addresses_are_never_cut_and_maps_are_marked() {
        let mut info = ServerInfo::default();
        info.map = Text::new(vec![b'm'; 40], Dialect::Quake);
        let addr = "[2001:db8:1234:5678:9abc:def0:1234:5678]:27960";
        let r = Record::online(Some(addr.into()), "q3", info, None);
        let t = servers(&[r], &crate::output::View::default());
        assert!(t.contains(addr), "{t}");
        assert!(
            t.contains(&format!("{}…", "m".repeat(MAP_WIDTH - 1))),
            "{t}"
        );
    }
}
