//! The shared model every family decodes into: a [`ServerInfo`] with its [`Player`]s and
//! ordered raw [`Rules`], a [`MasterEntry`] per listed server, and [`Text`] that keeps the raw
//! bytes with the family's text [`Dialect`].
//!
//! Fields a game does not send are `None` (never a guessed zero). What only one family has
//! goes into the typed [`Extra`] part (ETQW xp and kills, Warsow match state, DDNet map
//! CRC/size…): any `Debug + Serialize + PartialEq` type, downcast with [`ServerInfo::extra_as`].
//!
//! ```
//! use fragstat_core::model::{Dialect, ServerInfo, Text};
//! let mut info = ServerInfo::default();
//! info.name = Text::new(b"^1Red^7 Server".to_vec(), Dialect::Quake);
//! info.rules.push("g_gametype", "4");
//! info.gametype = Some("ctf".into());
//! assert_eq!(info.name.display(), "Red Server");
//! assert_eq!(info.rules.get("g_gametype"), Some(&b"4"[..]));
//! // A Teeworlds name has no colour codes: `^` is a literal character there.
//! assert_eq!(Text::new(b"a^1b".to_vec(), Dialect::Plain).display(), "a^1b");
//! // DarkPlaces shows `^^` as one caret; ioquake3 draws both.
//! assert_eq!(Text::new(b"^^1x".to_vec(), Dialect::DarkPlaces).display(), "^1x");
//! assert_eq!(Text::new(b"^^1x".to_vec(), Dialect::Ioq3).display(), "^x");
//! ```

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::text;

mod caps;
mod dialect;
mod score;

pub use caps::{keep_first, WarningCap, MAX_PLAYERS, MAX_WARNINGS};
pub use dialect::{Dialect, UnknownDialect};
pub use score::{ScoreKind, UnknownScoreKind};

/// A string from the wire: raw bytes, lossless, plus the dialect that says how to show them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Text {
    bytes: Vec<u8>,
    dialect: Dialect,
}

impl Text {
    /// Text from raw bytes.
    pub fn new(bytes: impl Into<Vec<u8>>, dialect: Dialect) -> Self {
        Text {
            bytes: bytes.into(),
            dialect,
        }
    }

    /// The raw bytes, exactly as sent.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The raw bytes, moved out.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// True when there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// For display: colour codes stripped as the dialect's engine draws them
    /// ([`Dialect::display`]), decoded as UTF-8 when valid, else ISO-8859-1; Plain text is
    /// UTF-8 with replacement characters where it is not valid.
    pub fn display(&self) -> String {
        self.display_cow().into_owned()
    }

    /// Lossless and reversible: 8-bit text maps every byte to the code point of the same
    /// value (ISO-8859-1; see [`text::latin1`]); Plain text is its UTF-8 (ISO-8859-1 if
    /// invalid).
    pub fn raw(&self) -> String {
        self.raw_cow().into_owned()
    }

    /// [`Text::display`], borrowed when nothing needs changing (no colour code to strip,
    /// valid UTF-8): what serialization uses.
    pub fn display_cow(&self) -> Cow<'_, str> {
        match self.dialect {
            Dialect::Plain => String::from_utf8_lossy(&self.bytes),
            d => d.display_cow(&self.bytes),
        }
    }

    /// Calls `f` with [`Text::display_cow`], without allocating for short ASCII text with
    /// colour codes (names and maps, written by the thousand in a scan's NDJSON).
    #[inline]
    pub(crate) fn with_shown<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        if self.dialect != Dialect::Plain && self.bytes.contains(&b'^') {
            let mut buf = [0u8; 128];
            if let Some(t) = self.dialect.display_ascii_in(&self.bytes, &mut buf) {
                return f(t);
            }
        }
        f(&self.display_cow())
    }

    /// [`Text::raw`], borrowed when the bytes are the same characters (ASCII 8-bit text,
    /// valid UTF-8 Plain text).
    pub fn raw_cow(&self) -> Cow<'_, str> {
        match self.dialect {
            Dialect::Plain => text::decode_cow(&self.bytes),
            _ => text::latin1_cow(&self.bytes),
        }
    }

    /// For a terminal: the dialect's colour codes as ANSI colours ([`Dialect::ansi`] with
    /// [`text::AnsiColors::Auto`]); Plain text as [`Text::display`].
    pub fn ansi(&self) -> String {
        self.ansi_with(text::AnsiColors::Auto)
    }

    /// [`Text::ansi`] with a choice of colours (24-bit, or the 16 basic ones).
    pub fn ansi_with(&self, colors: text::AnsiColors) -> String {
        match self.dialect {
            Dialect::Plain => self.display(),
            d => d.ansi(&self.bytes, colors),
        }
    }

    /// The colour runs of the text, for HTML and images ([`Dialect::runs`]); Plain text is
    /// one run in the default colour.
    pub fn runs(&self) -> Vec<text::Run> {
        match self.dialect {
            Dialect::Plain if self.bytes.is_empty() => Vec::new(),
            Dialect::Plain => vec![text::Run::new(None, self.display())],
            d => d.runs(&self.bytes),
        }
    }

    /// The text as HTML: escaped, in coloured `<span>`s ([`Dialect::html`]).
    pub fn html(&self) -> String {
        text::runs_html(&self.runs())
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_cow())
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.with_shown(|t| s.serialize_str(t))
    }
}

/// An ordered list of raw key/value pairs as they appeared on the wire (server variables,
/// "rules" in qstat's words).
///
/// Keys and values are bytes. Lookup is by exact key; when a key repeats, [`Rules::get`]
/// returns the first, as the engines' `Info_ValueForKey` does. Stored as one byte buffer plus
/// ranges, so a reply's rules cost two allocations however many there are; a decoder can copy
/// a whole infostring into the buffer at once and add its pairs by position
/// ([`Rules::over`], [`Rules::push_span`]).
#[derive(Debug, Clone, Default)]
pub struct Rules {
    buf: Vec<u8>,
    /// `(key start, key end, value start, value end)` in `buf`.
    spans: Vec<Span>,
}

/// Where one pair's key and value lie in a [`Rules`] buffer.
type Span = (u32, u32, u32, u32);

/// Iterator over the pairs of [`Rules`], in wire order.
#[derive(Debug, Clone)]
pub struct Pairs<'a> {
    buf: &'a [u8],
    spans: std::slice::Iter<'a, Span>,
}

impl<'a> Pairs<'a> {
    fn get(&self, &(k, ke, v, ve): &Span) -> (&'a [u8], &'a [u8]) {
        (
            self.buf.get(k as usize..ke as usize).unwrap_or_default(),
            self.buf.get(v as usize..ve as usize).unwrap_or_default(),
        )
    }
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        let span = self.spans.next()?;
        Some(self.get(span))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.spans.size_hint()
    }
}

impl DoubleEndedIterator for Pairs<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let span = self.spans.next_back()?;
        Some(self.get(span))
    }
}

impl ExactSizeIterator for Pairs<'_> {}

impl PartialEq for Rules {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.pairs().eq(other.pairs())
    }
}

impl Eq for Rules {}

impl Rules {
    /// No pairs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `bytes` bytes of keys and values.
    pub fn with_capacity(bytes: usize) -> Self {
        Rules {
            buf: Vec::with_capacity(bytes),
            // A pair takes at least 2 bytes, most far more: room for a pair per 16 bytes
            // keeps a typical reply to one allocation here.
            spans: Vec::with_capacity(bytes / 16),
        }
    }

    /// The pairs in wire order.
    pub fn pairs(&self) -> Pairs<'_> {
        Pairs {
            buf: &self.buf,
            spans: self.spans.iter(),
        }
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The value of the first pair whose key is `key`.
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.get_bytes(key.as_bytes())
    }

    /// The value of the first pair whose key is exactly `key` (bytes).
    pub fn get_bytes(&self, key: &[u8]) -> Option<&[u8]> {
        self.pairs().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The value of the first present key of `keys`, parsed as a decimal integer (surrounding
    /// spaces allowed).
    pub fn get_int(&self, keys: &[&str]) -> Option<i64> {
        keys.iter().find_map(|k| {
            let v = self.get(k)?;
            std::str::from_utf8(v).ok()?.trim().parse().ok()
        })
    }

    /// The value of the first present key of `keys`.
    pub fn get_any(&self, keys: &[&str]) -> Option<&[u8]> {
        keys.iter().find_map(|k| self.get(k))
    }

    /// Sets `key` to `value`: the first pair whose key is exactly `key` gets the value and
    /// keeps its place; without one, the pair is appended.
    ///
    /// ```
    /// use fragstat_core::model::Rules;
    /// let mut r: Rules = [("a", "1"), ("b", "2")].into_iter().collect();
    /// r.set("a", "9");
    /// r.set("c", "3");
    /// assert_eq!(r, [("a", "9"), ("b", "2"), ("c", "3")].into_iter().collect());
    /// ```
    pub fn set(&mut self, key: &str, value: impl AsRef<[u8]>) {
        self.set_where(key, value.as_ref(), |k| k == key.as_bytes());
    }

    /// [`Rules::set`] with keys matched ASCII case-insensitively, as idTech 4's dictionaries
    /// match them; the existing key keeps its spelling.
    ///
    /// ```
    /// use fragstat_core::model::Rules;
    /// let mut r: Rules = [("si_Name", "x")].into_iter().collect();
    /// r.set_ci("si_name", "y");
    /// assert_eq!(r, [("si_Name", "y")].into_iter().collect());
    /// ```
    pub fn set_ci(&mut self, key: &str, value: impl AsRef<[u8]>) {
        self.set_where(key, value.as_ref(), |k| {
            k.eq_ignore_ascii_case(key.as_bytes())
        });
    }

    fn set_where(&mut self, key: &str, value: &[u8], matches: impl Fn(&[u8]) -> bool) {
        let Some(at) = self.pairs().position(|(k, _)| matches(k)) else {
            self.push(key, value);
            return;
        };
        let mut out = Rules::with_capacity(self.buf.len() + value.len());
        for (i, (k, v)) in self.pairs().enumerate() {
            out.push(k, if i == at { value } else { v });
        }
        *self = out;
    }

    /// Appends a pair at the end (wire order).
    ///
    /// # Panics
    /// Never for real data: rules over 4 GiB cannot be stored.
    pub fn push(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let pos = |n: usize| u32::try_from(n).expect("rules under 4 GiB");
        let k = pos(self.buf.len());
        self.buf.extend_from_slice(key.as_ref());
        let v = pos(self.buf.len());
        self.buf.extend_from_slice(value.as_ref());
        self.spans.push((k, v, v, pos(self.buf.len())));
    }

    /// Rules over a copy of `bytes` (an infostring, say), with no pairs yet: add them by
    /// position with [`Rules::push_span`], which copies nothing.
    ///
    /// ```
    /// use fragstat_core::model::Rules;
    /// let mut r = Rules::over(b"\\a\\1\\bb\\2");
    /// assert!(r.push_span(1..2, 3..4) && r.push_span(5..7, 8..9));
    /// assert!(!r.push_span(5..7, 8..10), "past the end");
    /// assert_eq!(r, [("a", "1"), ("bb", "2")].into_iter().collect());
    /// ```
    pub fn over(bytes: &[u8]) -> Self {
        Rules {
            buf: bytes.to_vec(),
            // A pair takes at least 2 bytes, most far more (see `with_capacity`).
            spans: Vec::with_capacity(bytes.len() / 16),
        }
    }

    /// Appends the pair whose key is `key` and value is `value` of the buffer given to
    /// [`Rules::over`] (positions in it). False, and nothing added, when a range is reversed
    /// or runs past the buffer.
    pub fn push_span(
        &mut self,
        key: std::ops::Range<usize>,
        value: std::ops::Range<usize>,
    ) -> bool {
        let len = self.buf.len();
        let fits = |r: &std::ops::Range<usize>| r.start <= r.end && r.end <= len;
        let pos = |n: usize| u32::try_from(n).ok();
        match (
            fits(&key) && fits(&value),
            pos(key.start),
            pos(key.end),
            pos(value.start),
            pos(value.end),
        ) {
            (true, Some(k), Some(ke), Some(v), Some(ve)) => {
                self.spans.push((k, ke, v, ve));
                true
            }
            _ => false,
        }
    }

    /// Removes every pair whose key is `key`.
    pub fn remove(&mut self, key: &[u8]) {
        let buf = &self.buf;
        self.spans
            .retain(|&(k, ke, _, _)| buf.get(k as usize..ke as usize) != Some(key));
    }
}

impl<K: AsRef<[u8]>, V: AsRef<[u8]>> FromIterator<(K, V)> for Rules {
    fn from_iter<T: IntoIterator<Item = (K, V)>>(iter: T) -> Self {
        let mut rules = Rules::new();
        for (k, v) in iter {
            rules.push(k, v);
        }
        rules
    }
}

/// A JSON object in wire order; bytes decoded as UTF-8 when valid, else ISO-8859-1. A
/// repeated key is written once per occurrence, as sent.
impl Serialize for Rules {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.len()))?;
        // One UTF-8 check of the whole buffer instead of one per key and value: a span that
        // falls on character boundaries of valid UTF-8 is valid UTF-8 itself. A span that does
        // not (or a buffer that is not UTF-8) is decoded on its own, so each key and value
        // reads exactly as `text::decode_cow` of its bytes.
        let whole = std::str::from_utf8(&self.buf).ok();
        let piece = |a: u32, b: u32| -> Cow<'_, str> {
            let (a, b) = (a as usize, b as usize);
            match whole.and_then(|w| w.get(a..b)) {
                Some(t) => Cow::Borrowed(t),
                None => text::decode_cow(self.buf.get(a..b).unwrap_or_default()),
            }
        };
        for &(k, ke, v, ve) in &self.spans {
            map.serialize_entry(&piece(k, ke), &piece(v, ve))?;
        }
        map.end()
    }
}

/// A family-specific part of a record: any `Debug + Serialize + PartialEq` type is one.
///
/// ```
/// use fragstat_core::model::{Extra, ServerInfo};
/// #[derive(Debug, PartialEq, serde::Serialize)]
/// struct MapCrc { crc: u32 }
/// let mut info = ServerInfo::default();
/// info.set_extra(MapCrc { crc: 7 });
/// assert_eq!(info.extra_as::<MapCrc>(), Some(&MapCrc { crc: 7 }));
/// ```
pub trait Extra: Any + fmt::Debug + Send + Sync + erased_serde::Serialize {
    /// For downcasting.
    fn as_any(&self) -> &dyn Any;
    /// Equality across the trait object (false for different types).
    fn dyn_eq(&self, other: &dyn Extra) -> bool;
}

impl<T: Any + fmt::Debug + Send + Sync + Serialize + PartialEq> Extra for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn dyn_eq(&self, other: &dyn Extra) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }
}

erased_serde::serialize_trait_object!(Extra);

/// A shared, typed family-specific part.
pub type ExtraRef = Arc<dyn Extra>;

fn extra_eq(a: &Option<ExtraRef>, b: &Option<ExtraRef>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.dyn_eq(&**b),
        _ => false,
    }
}

/// One player (or spectator, or bot) on a server.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Player {
    /// Name, raw.
    pub name: Text,
    /// Clan tag, where the game sends one (Quake 4, ETQW, Teeworlds).
    pub clan: Option<Text>,
    /// Score (frags, points), where sent.
    pub score: Option<i32>,
    /// Ping in milliseconds as the server reports it.
    pub ping: Option<i32>,
    /// Team number as the game numbers them, where sent.
    pub team: Option<i32>,
    /// A bot, where the game says so (or the family can tell reliably).
    pub is_bot: Option<bool>,
    /// A spectator, where the game says so.
    pub is_spectator: Option<bool>,
    /// Family-specific per-player fields (ETQW xp, kills, deaths…).
    pub extra: Option<ExtraRef>,
}

impl PartialEq for Player {
    fn eq(&self, o: &Self) -> bool {
        self.name == o.name
            && self.clan == o.clan
            && self.score == o.score
            && self.ping == o.ping
            && self.team == o.team
            && self.is_bot == o.is_bot
            && self.is_spectator == o.is_spectator
            && extra_eq(&self.extra, &o.extra)
    }
}

impl Player {
    /// A player with this name and nothing else known.
    pub fn new(name: Text) -> Self {
        Player {
            name,
            ..Player::default()
        }
    }
}

/// What a server says about itself: the record every family's server query produces.
///
/// Construct with `ServerInfo::default()` and set fields (the struct grows, so literal
/// construction is reserved to this crate).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServerInfo {
    /// Server name, raw.
    pub name: Text,
    /// Map name (as shown: ETQW's `maps/<name>.entities` becomes `<name>`; the raw value
    /// stays in `rules`).
    pub map: Text,
    /// Game type: the game's own name for the mode where the game defines one (Quake III
    /// `0` → `ffa`), else the value as sent. The raw value stays in `rules`.
    pub gametype: Option<String>,
    /// Server or game version, where sent.
    pub version: Option<String>,
    /// Clients on the server (bots and spectators included): what browsers show.
    pub num_players: u32,
    /// Client slots.
    pub max_players: u32,
    /// Bots among the clients, where known.
    pub num_bots: Option<u32>,
    /// Spectators among the clients, where known.
    pub num_spectators: Option<u32>,
    /// A password is needed to join, where known.
    pub password: Option<bool>,
    /// What the players' scores count, where the server says so.
    pub score_kind: Option<ScoreKind>,
    /// Where the server's list places it, as written there (DDNet's `eu:de`: continent, then
    /// ISO 3166-1 alpha-2 country in lower case); a probed record gets it from the list.
    pub location: Option<String>,
    /// Players, when the query asked for them and the game sent them.
    pub players: Option<Vec<Player>>,
    /// Every key/value the server sent, raw, in wire order.
    pub rules: Rules,
    /// The family-specific part, if any.
    pub extra: Option<ExtraRef>,
    /// Oddities met while decoding that did not stop it (skipped lines, trailing bytes…),
    /// each with its byte offset where one applies.
    pub warnings: Vec<String>,
    /// The reply looks cut short (a last line without its newline, a missing terminator):
    /// what is here was read, more may have been sent.
    pub truncated: bool,
    /// The reply carried no challenge or token of this query (the game's servers do not
    /// echo one, e.g. Warsow's short `info`): it came from the server's address, but anyone
    /// able to send from that address could have written it.
    pub unverified: bool,
}

impl PartialEq for ServerInfo {
    fn eq(&self, o: &Self) -> bool {
        self.name == o.name
            && self.map == o.map
            && self.gametype == o.gametype
            && self.version == o.version
            && self.num_players == o.num_players
            && self.max_players == o.max_players
            && self.num_bots == o.num_bots
            && self.num_spectators == o.num_spectators
            && self.password == o.password
            && self.score_kind == o.score_kind
            && self.location == o.location
            && self.players == o.players
            && self.rules == o.rules
            && extra_eq(&self.extra, &o.extra)
            && self.warnings == o.warnings
            && self.truncated == o.truncated
            && self.unverified == o.unverified
    }
}

impl ServerInfo {
    /// The keys of the JSON object [`ServerInfo`] serializes to, in order (a caller writing a
    /// record for a server that did not answer writes each as `null`).
    pub const JSON_FIELDS: [&'static str; 19] = [
        "name",
        "name_raw",
        "map",
        "gametype",
        "version",
        "num_players",
        "max_players",
        "num_bots",
        "num_spectators",
        "password",
        "score_kind",
        "location",
        "players",
        "rules",
        "extra",
        "warnings",
        "truncated",
        "unverified",
        "dialect",
    ];

    /// Sets the family-specific part.
    pub fn set_extra<T: Extra>(&mut self, extra: T) {
        self.extra = Some(Arc::new(extra));
    }

    /// The family-specific part, if it is a `T`.
    pub fn extra_as<T: Extra>(&self) -> Option<&T> {
        self.extra.as_deref()?.as_any().downcast_ref::<T>()
    }
}

/// One server of a master's list.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MasterEntry {
    /// The address to query.
    pub addr: SocketAddr,
    /// What the master says of the server, where its list carries that (DDNet's HTTP master).
    pub info: Option<ServerInfo>,
    /// Every address the master gave for the server, as written (e.g. `tw-0.6+udp://…`,
    /// `tw-0.7+udp://…`), where it gives several.
    pub addresses: Vec<String>,
}

impl MasterEntry {
    /// An entry with an address only.
    pub fn new(addr: SocketAddr) -> Self {
        MasterEntry {
            addr,
            info: None,
            addresses: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;
