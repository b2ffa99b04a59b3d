//! The master catalogue: each game's public masters, as their engines, their own
//! configuration files and curated public lists name them, each entry with the source it
//! comes from and the date it was checked.
//!
//! `fragstat master GAME` and `Client::master_list(&game, [])` ask every master of the
//! game's catalogue ([`crate::registry::Game::catalogue`]) when no master is given, and merge
//! their lists. An entry says how to ask ([`ListForm`], [`CatalogueMaster::protocols`]) and
//! how its list ends ([`EndOfList`]): a master without an end-of-list marker is done when it
//! has been quiet for the client's quiet period ([`crate::defaults::MASTER_QUIET`]).
//!
//! The hosts are real: tests never ask them. A test points every entry at an emulated master
//! on loopback ([`CatalogueMaster::pointed_at`]), which keeps the entry's quirks.

use std::borrow::Cow;
use std::fmt;
use std::net::SocketAddr;

mod table;

/// How a catalogue master is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum MasterTransport {
    /// One UDP request, a list in any number of datagrams.
    Udp,
    /// A TCP stream the master closes after its list (CoD4X's masters).
    Tcp,
    /// An HTTP GET of a list (DDNet's `servers.json`, IW4x, the ETQW feed).
    Http,
}

/// `udp`, `tcp`, `http`: as the JSON writes it.
impl fmt::Display for MasterTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MasterTransport::Udp => "udp",
            MasterTransport::Tcp => "tcp",
            MasterTransport::Http => "http",
        })
    }
}

/// The request a catalogue master is asked with (Quake III `getservers` dialects; the other
/// families' masters take their game's own request, [`ListForm::Own`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListForm {
    /// The request the game's own client sends, as the registry makes it.
    Own,
    /// `getservers <protocol> <keywords>`: no game name (id's Q3A, W:ET, Raven and
    /// Activision games; dpmaster techinfo.txt :270-273).
    Anonymous,
    /// `getservers <name> <protocol> <keywords>` with this game name (dpmaster's named
    /// games: a master may answer an anonymous request with another game's servers).
    Named(&'static str),
    /// `getservers <protocol>` alone: no game name, no keywords (RtCW's legacy form; id's
    /// wolfmaster answers nothing else).
    Short,
    /// `getserversExt <name> <protocol> …` (dpmaster ≥ 2.0: IPv6 servers too).
    Ext(&'static str),
    /// An HTTP GET of [`CatalogueMaster::url`].
    Http,
}

/// How a catalogue master's list ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EndOfList {
    /// `\EOT\0\0\0` on the last datagram (dpmaster ≥ 2.0, techinfo.txt :292-313).
    LastPacket,
    /// A bare `\EOT` on every datagram; only `\EOT\0\0\0` or `\EOF` ends the list
    /// (Activision's masters; pyq3serverlist reader.py:70-73).
    EveryPacket,
    /// No marker at all: the list is whole when the master has been quiet for the quiet
    /// period (id's and etmaster.net's masters per GameserverLister's reader choice, the
    /// Tremulous and Unvanquished masters per their source).
    Quiet,
    /// The master closes the TCP stream after its list (CoD4X).
    Close,
    /// The HTTP body is the whole list.
    Body,
    /// No marker, but a datagram with room for more entries is the last: idTech 4's
    /// `servers` datagrams carry no count and no marker, and the master fills each one
    /// (1,400 bytes) before starting the next. The list ends after a short settle for
    /// reordered datagrams, not after the quiet period.
    ShortPacket,
    /// No source says: an end marker ends the list, else the quiet period does.
    Unstated,
}

/// A kind of catalogue quirk: what an emulated master must show for each
/// ([`CatalogueMaster::quirks`]). Deliberately exhaustive, so that a new kind cannot be added
/// without the catalogue test's match naming its emulator test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Quirk {
    /// Asked with the game's own request ([`ListForm::Own`]).
    OwnForm,
    /// Asked anonymously ([`ListForm::Anonymous`]).
    Anonymous,
    /// Asked with a game name the master needs ([`ListForm::Named`]).
    Named,
    /// Asked with the short form only ([`ListForm::Short`]).
    Short,
    /// Asked with `getserversExt` ([`ListForm::Ext`]).
    Ext,
    /// Asked for several protocols ([`CatalogueMaster::protocols`]).
    SeveralProtocols,
    /// An end marker on the last datagram ([`EndOfList::LastPacket`]).
    EndOnLast,
    /// A bare marker on every datagram ([`EndOfList::EveryPacket`]).
    EndOnEvery,
    /// No end marker ([`EndOfList::Quiet`], [`EndOfList::Unstated`]).
    NoEnd,
    /// A datagram that is not full ends the list ([`EndOfList::ShortPacket`]).
    EndOnShort,
    /// A TCP master ([`MasterTransport::Tcp`]).
    Tcp,
    /// An HTTP list ([`MasterTransport::Http`]).
    Http,
}

/// One public master of a game, as the catalogue lists it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct CatalogueMaster {
    /// Host name (or address).
    pub host: Cow<'static, str>,
    /// Port (for HTTP masters, the URL's).
    pub port: u16,
    /// How it is reached.
    pub transport: MasterTransport,
    /// The request it is asked with.
    pub form: ListForm,
    /// How its list ends.
    pub end: EndOfList,
    /// The protocols to ask it for, one request each, in order; empty: the game's own.
    pub protocols: &'static [i32],
    /// The list's URL, for HTTP masters.
    pub url: Option<Cow<'static, str>>,
    /// The public source naming it (repository, path and line, or URL), and whether it is a
    /// fact read in source code or a claim (a curated list, prose, a measurement).
    pub source: &'static str,
    /// When the source was checked (`YYYY-MM-DD`).
    pub checked: &'static str,
}

/// The date the issue-33 research checked its sources.
pub const CHECKED_2026_11_28: &str = "2026-11-28";

impl CatalogueMaster {
    /// A UDP master.
    pub const fn udp(
        host: &'static str,
        port: u16,
        form: ListForm,
        end: EndOfList,
        protocols: &'static [i32],
        source: &'static str,
    ) -> Self {
        CatalogueMaster {
            host: Cow::Borrowed(host),
            port,
            transport: MasterTransport::Udp,
            form,
            end,
            protocols,
            url: None,
            source,
            checked: CHECKED_2026_11_28,
        }
    }

    /// A TCP master (asked only where the family has a TCP master query).
    pub const fn tcp(
        host: &'static str,
        port: u16,
        form: ListForm,
        protocols: &'static [i32],
        source: &'static str,
    ) -> Self {
        CatalogueMaster {
            host: Cow::Borrowed(host),
            port,
            transport: MasterTransport::Tcp,
            form,
            end: EndOfList::Close,
            protocols,
            url: None,
            source,
            checked: CHECKED_2026_11_28,
        }
    }

    /// An HTTP list at `url` (of `host`, port `port`).
    pub const fn http(
        host: &'static str,
        port: u16,
        url: &'static str,
        source: &'static str,
    ) -> Self {
        CatalogueMaster {
            host: Cow::Borrowed(host),
            port,
            transport: MasterTransport::Http,
            form: ListForm::Http,
            end: EndOfList::Body,
            protocols: &[],
            url: Some(Cow::Borrowed(url)),
            source,
            checked: CHECKED_2026_11_28,
        }
    }

    /// What to ask: `HOST:PORT` (`[v6]:PORT`), or the URL of an HTTP list.
    pub fn address(&self) -> String {
        if let Some(url) = &self.url {
            return url.to_string();
        }
        if self.host.contains(':') && !self.host.starts_with('[') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The same entry, quirks and all, at `addr` instead of its public host: for tests (never
    /// ask the real hosts) and local mirrors. An HTTP list keeps its path, over plain HTTP.
    pub fn pointed_at(mut self, addr: SocketAddr) -> Self {
        self.host = Cow::Owned(addr.ip().to_string());
        self.port = addr.port();
        if let Some(url) = &self.url {
            let rest = url.split_once("://").map_or(url.as_ref(), |(_, r)| r);
            let path = rest.find('/').and_then(|i| rest.get(i..)).unwrap_or("/");
            self.url = Some(Cow::Owned(format!("http://{addr}{path}")));
        }
        self
    }

    /// The quirks this entry's query shows ([`Quirk`]).
    pub fn quirks(&self) -> Vec<Quirk> {
        let mut q = Vec::new();
        match self.transport {
            MasterTransport::Tcp => q.push(Quirk::Tcp),
            MasterTransport::Http => q.push(Quirk::Http),
            MasterTransport::Udp => {}
        }
        match self.form {
            ListForm::Own => q.push(Quirk::OwnForm),
            ListForm::Anonymous => q.push(Quirk::Anonymous),
            ListForm::Named(_) => q.push(Quirk::Named),
            ListForm::Short => q.push(Quirk::Short),
            ListForm::Ext(_) => q.push(Quirk::Ext),
            ListForm::Http => {}
        }
        if self.protocols.len() > 1 {
            q.push(Quirk::SeveralProtocols);
        }
        match self.end {
            EndOfList::LastPacket => q.push(Quirk::EndOnLast),
            EndOfList::EveryPacket => q.push(Quirk::EndOnEvery),
            EndOfList::Quiet | EndOfList::Unstated => q.push(Quirk::NoEnd),
            EndOfList::ShortPacket => q.push(Quirk::EndOnShort),
            EndOfList::Close | EndOfList::Body => {}
        }
        q
    }
}

impl fmt::Display for CatalogueMaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.address())
    }
}

impl fmt::Display for ListForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListForm::Own => f.write_str("own"),
            ListForm::Anonymous => f.write_str("anonymous"),
            ListForm::Named(n) => write!(f, "named {n}"),
            ListForm::Short => f.write_str("short"),
            ListForm::Ext(n) => write!(f, "ext {n}"),
            ListForm::Http => f.write_str("http"),
        }
    }
}

impl fmt::Display for EndOfList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EndOfList::LastPacket => "eot-last",
            EndOfList::EveryPacket => "eot-every",
            EndOfList::Quiet => "none",
            EndOfList::Close => "close",
            EndOfList::Body => "body",
            EndOfList::Unstated => "unstated",
            EndOfList::ShortPacket => "short-datagram",
        })
    }
}

impl serde::Serialize for CatalogueMaster {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(7))?;
        m.serialize_entry("address", &self.address())?;
        m.serialize_entry("transport", &self.transport)?;
        m.serialize_entry("form", &self.form.to_string())?;
        m.serialize_entry("end", &self.end.to_string())?;
        m.serialize_entry("protocols", self.protocols)?;
        m.serialize_entry("source", self.source)?;
        m.serialize_entry("checked", self.checked)?;
        m.end()
    }
}

/// The catalogue of the game called `id` (a registry id, not an alias); empty for a game
/// without one.
pub fn of(id: &str) -> &'static [CatalogueMaster] {
    table::of(id)
}

/// Every game id that has a catalogue, with its masters.
pub fn all() -> &'static [(&'static str, &'static [CatalogueMaster])] {
    table::ALL
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every entry names a public source and a real date, and asks something.
    #[test]
    fn every_entry_names_a_source_and_a_date() {
        let mut n = 0;
        for (game, masters) in all() {
            assert!(
                !masters.is_empty(),
                "{game}: an empty catalogue is no catalogue"
            );
            for m in *masters {
                n += 1;
                assert!(m.source.len() > 10, "{game} {m}: source {:?}", m.source);
                let d: Vec<&str> = m.checked.split('-').collect();
                assert!(
                    d.len() == 3
                        && d[0].len() == 4
                        && d.iter().all(|p| p.parse::<u16>().is_ok())
                        && (1..=12).contains(&d[1].parse::<u8>().unwrap_or(0))
                        && (1..=31).contains(&d[2].parse::<u8>().unwrap_or(0)),
                    "{game} {m}: date {:?}",
                    m.checked
                );
                assert!(!m.host.is_empty() && m.port != 0, "{game} {m}");
                assert_eq!(
                    m.transport == MasterTransport::Http,
                    m.url.is_some(),
                    "{game} {m}"
                );
            }
        }
        assert!(n > 40, "{n} entries");
    }

    /// The numbers issue 33 fixed: Warfork is asked for 27, RtCW for 60 and 57 (id's
    /// wolfmaster with the short form), Q3Rally with its name, Xonotic at its six masters.
    #[test]
    fn the_numbers_of_issue_33() {
        assert!(of("warfork").iter().all(|m| m.protocols == [27]));
        let rtcw = of("rtcw");
        assert!(rtcw.iter().all(|m| m.protocols == [60, 57]));
        let wolf = rtcw.iter().find(|m| m.host == "wolfmaster.idsoftware.com");
        assert_eq!(wolf.map(|m| m.form), Some(ListForm::Short));
        assert!(of("q3rally")
            .iter()
            .all(|m| m.form == ListForm::Named("Q3Rally")));
        let x: Vec<String> = of("xonotic").iter().map(CatalogueMaster::address).collect();
        assert_eq!(
            x,
            [
                "master1.xonotic.org:42863",
                "master2.xonotic.org:27950",
                "master3.xonotic.org:27950",
                "master4.xonotic.org:42863",
                "dpm4.xonotic.xyz:27777",
                "dpm6.xonotic.xyz:27777"
            ]
        );
        assert!(of("nosuchgame").is_empty());
    }

    #[test]
    fn pointed_at_keeps_the_quirks_and_the_path() {
        let at: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let wolf = of("rtcw")[0].clone().pointed_at(at);
        assert_eq!(wolf.address(), "127.0.0.1:4000");
        assert_eq!(wolf.form, of("rtcw")[0].form);
        let ddnet = of("ddnet")[0].clone().pointed_at(at);
        assert_eq!(
            ddnet.address(),
            "http://127.0.0.1:4000/ddnet/15/servers.json"
        );
        let v6 = of("q3")[0].clone().pointed_at("[::1]:5".parse().unwrap());
        assert_eq!(v6.address(), "[::1]:5");
    }
}
