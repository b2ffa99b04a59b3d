//! The game registry: every family crate describes its games as [`Game`] objects, and the
//! facade (`fragstat::games()`, `fragstat::game("q3")`) and the CLI work only through them.
//!
//! A game gives its ports, a server query (an [`Exchange`] producing the shared
//! [`ServerInfo`]), a master query, a decoder for saved datagrams, and emulators (sans-IO
//! [`Service`]s) for tests and demos. Adding a family means one crate that implements this
//! trait plus one line in the facade's table (docs/architecture.md).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::encode::EncodeError;
use crate::exchange::Exchange;
use crate::manners::ServerEngine;
use crate::model::{ExtraRef, MasterEntry, ServerInfo};
#[cfg(doc)]
use crate::service::Service;
use crate::wire::DecodeError;

pub mod catalogue;
mod emulate;
mod meta;
mod options;
pub use catalogue::{CatalogueMaster, EndOfList, ListForm, MasterTransport};
pub use emulate::{emulator, EmuError, EmuListing, EmuMaster, EmuServer, Emulate, EndMarker};
pub use options::MasterOptions;

/// What a server query asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Ask {
    /// The player list.
    pub players: bool,
    /// Every server variable (rules). Families whose rules come with the players fetch both.
    pub rules: bool,
    /// The game's short query instead of its usual one (qfusion's `info <protocol> full
    /// empty`: name, map, counts and game type in one small reply, without players or
    /// rules), for games that have one ([`Game::has_short_query`]); the registry refuses it
    /// for the others (see [`Game::check_ask`]).
    pub short: bool,
    /// The protocol number to name in requests that carry one (the short query's `info
    /// <protocol>`); `None` for the game's own. Requests that name no protocol ignore it.
    pub protocol: Option<i32>,
}

impl Ask {
    /// The short info only (name, map, counts).
    pub fn info() -> Self {
        Ask::default()
    }

    /// With the players (and, where they come together, the rules).
    pub fn players() -> Self {
        Ask {
            players: true,
            ..Ask::default()
        }
    }

    /// With players and every rule.
    pub fn everything() -> Self {
        Ask {
            players: true,
            rules: true,
            ..Ask::default()
        }
    }

    /// The game's short query ([`Ask::short`]).
    pub fn short() -> Self {
        Ask {
            short: true,
            ..Ask::default()
        }
    }

    /// Asks for the player list when `players` is true.
    pub fn with_players(mut self, players: bool) -> Self {
        self.players = players;
        self
    }

    /// Asks for every rule when `rules` is true.
    pub fn with_rules(mut self, rules: bool) -> Self {
        self.rules = rules;
        self
    }

    /// Asks with the game's short query when `short` is true ([`Ask::short`]).
    pub fn with_short(mut self, short: bool) -> Self {
        self.short = short;
        self
    }

    /// Names `protocol` in requests that carry one ([`Ask::protocol`]).
    pub fn with_protocol(mut self, protocol: Option<i32>) -> Self {
        self.protocol = protocol;
        self
    }
}

/// Why a game cannot ask what an [`Ask`] asks for: see [`Game::check_ask`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AskError {
    /// The short query ([`Ask::short`]) of a game that has none.
    #[error("{game} ({title}) has no short query")]
    NoShortQuery {
        /// The game's id.
        game: String,
        /// The game's title.
        title: String,
    },
}

/// Why a game cannot make a master query with the given [`MasterOptions`]: see
/// [`Game::master_query`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MasterQueryError {
    /// An option the game's master has no form for (the extended request, a game name).
    #[error("{game}: {reason}")]
    Option {
        /// The game's id.
        game: String,
        /// What does not fit.
        reason: &'static str,
    },
    /// The game has no master of this protocol to ask.
    #[error("{game} has no {protocol} master to ask ({reason}); query its servers by address")]
    NoMaster {
        /// The game's title.
        game: String,
        /// The protocol a master would speak (`Quake III`).
        protocol: &'static str,
        /// Where its servers list instead, or why none is known.
        reason: &'static str,
    },
    /// The request could not be encoded (a game name holding the protocol's separator…).
    #[error("the request cannot be encoded: {0}")]
    Encode(#[from] EncodeError),
}

impl MasterQueryError {
    /// An option `game`'s master has no form for.
    pub fn option(game: impl Into<String>, reason: &'static str) -> Self {
        MasterQueryError::Option {
            game: game.into(),
            reason,
        }
    }
}

/// A master list parsed from an HTTP body: the servers, and what could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct HttpList {
    /// Servers listed.
    pub servers: Vec<MasterEntry>,
    /// Lines or entries skipped, each saying why (never fatal).
    pub warnings: Vec<String>,
}

/// How a game's master is asked.
#[non_exhaustive]
pub enum MasterQuery {
    /// A UDP exchange with the master (Quake III `getservers`, idTech 4, Teeworlds `req2`).
    Udp(Box<dyn Exchange<Output = Vec<MasterEntry>>>),
    /// An HTTP GET of a list (ETQW's feed, DDNet's `servers.json`): the CLI fetches the URL
    /// given on its command line (or `default_url`) and `parse`s the body.
    Http {
        /// The public list's URL, when there is a well-known one.
        default_url: Option<&'static str>,
        /// Parses the body.
        parse: fn(&[u8]) -> Result<HttpList, DecodeError>,
    },
    /// A TCP stream (CoD4X's master): connect, send `request`, read until the master closes
    /// (within the client's size and time bounds), and `parse` what came.
    Tcp {
        /// The bytes to send once connected.
        request: Vec<u8>,
        /// Parses the whole stream.
        parse: fn(&[u8]) -> Result<HttpList, DecodeError>,
    },
}

impl fmt::Debug for MasterQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MasterQuery::Udp(_) => f.write_str("MasterQuery::Udp(..)"),
            MasterQuery::Http { default_url, .. } => f
                .debug_struct("MasterQuery::Http")
                .field("default_url", default_url)
                .finish_non_exhaustive(),
            MasterQuery::Tcp { request, .. } => f
                .debug_struct("MasterQuery::Tcp")
                .field("request", request)
                .finish_non_exhaustive(),
        }
    }
}

/// A decoded datagram, as `fragstat decode` shows it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Decoded {
    /// A server's reply, in the shared model.
    Server(Box<ServerInfo>),
    /// (Part of) a master's list.
    Servers {
        /// The servers.
        servers: Vec<MasterEntry>,
        /// What else the datagram says (end marker, extended form…), as structured fields.
        details: Option<ExtraRef>,
    },
    /// Any other packet (a request, a challenge, a heartbeat): its kind and fields.
    Packet {
        /// What it is, e.g. `getstatus`, `challengeResponse`.
        kind: String,
        /// Its fields (serializes to a JSON object).
        fields: ExtraRef,
    },
}

/// What the registry knows of a game before any packet: its names, family, ports and how its
/// servers answer. A family's registry entry builds one per game and hands it out from
/// [`Game::meta`]; [`Game`]'s naming methods read it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GameMeta {
    /// The short name used on the command line and in JSON (`q3`, `et`, `doom3`…).
    pub id: Cow<'static, str>,
    /// A human title.
    pub title: Cow<'static, str>,
    /// Other names accepted for it on the command line (qstat's type names among them).
    pub aliases: &'static [&'static str],
    /// The family's id (`quake3`, `idtech4`…).
    pub family: &'static str,
    /// Default game server port.
    pub default_port: u16,
    /// Default master port, for games with UDP masters.
    pub master_port: Option<u16>,
    /// Its public masters ([`catalogue`]): what `fragstat master GAME` asks when no master is
    /// given. [`GameMeta::new`] takes the catalogue's entries for the id.
    pub masters: &'static [CatalogueMaster],
    /// Whether its servers echo the query's challenge (or token) in their replies: see
    /// [`Game::echoes_challenge`].
    pub echoes_challenge: bool,
    /// What to tell a user whose server did not answer: see [`Game::unanswered_hint`].
    pub unanswered_hint: Option<&'static str>,
    /// Whether the game has a short query ([`Ask::short`]): see [`Game::has_short_query`].
    pub short_query: bool,
    /// The start of a URL that has the game's client join a server, its `HOST:PORT`
    /// following (`ddnet://`, `quake3://connect/`), where the client registers a URL
    /// scheme: see [`GameMeta::join_url`].
    pub join_scheme: Option<&'static str>,
    /// Game types (lower case, found anywhere in a server's game type, case-insensitively)
    /// whose scores are race times when the server does not say: see
    /// [`GameMeta::scores_are_times`].
    pub race_gametypes: &'static [&'static str],
    /// Whether its servers may say what their scores count ([`ServerInfo::score_kind`]), so
    /// that a stored record is worth reading for it.
    pub declares_score_kind: bool,
    /// The engine its servers run, for their limits on queries
    /// ([`crate::manners::ServerEngine::limits`]): the client spaces its queries to one
    /// server to them, and the emulators keep them.
    pub engine: ServerEngine,
}

impl GameMeta {
    /// A game of `family` called `id` (`title` for humans) whose servers listen on
    /// `default_port`; no aliases, no master port, challenges echoed, no hint.
    pub fn new(
        family: &'static str,
        id: impl Into<Cow<'static, str>>,
        title: impl Into<Cow<'static, str>>,
        default_port: u16,
    ) -> Self {
        let id = id.into();
        GameMeta {
            masters: catalogue::of(&id),
            id,
            title: title.into(),
            aliases: &[],
            family,
            default_port,
            master_port: None,
            echoes_challenge: true,
            unanswered_hint: None,
            short_query: false,
            join_scheme: None,
            race_gametypes: &[],
            declares_score_kind: false,
            engine: ServerEngine::Unknown,
        }
    }

    /// Sets the aliases.
    pub fn aliases(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }

    /// Sets the master port.
    pub fn master_port(mut self, port: impl Into<Option<u16>>) -> Self {
        self.master_port = port.into();
        self
    }

    /// Sets the catalogue masters ([`GameMeta::masters`]).
    pub fn masters(mut self, masters: &'static [CatalogueMaster]) -> Self {
        self.masters = masters;
        self
    }

    /// Sets whether servers echo the challenge.
    pub fn echoes_challenge(mut self, echoes: bool) -> Self {
        self.echoes_challenge = echoes;
        self
    }

    /// Sets the hint for an unanswered query.
    pub fn unanswered_hint(mut self, hint: impl Into<Option<&'static str>>) -> Self {
        self.unanswered_hint = hint.into();
        self
    }

    /// Sets whether the game has a short query.
    pub fn short_query(mut self, short_query: bool) -> Self {
        self.short_query = short_query;
        self
    }

    /// Sets the engine its servers run ([`GameMeta::engine`]).
    pub fn engine(mut self, engine: ServerEngine) -> Self {
        self.engine = engine;
        self
    }
}

/// One game of a family, as the registry, the facade and the CLI see it: its names and ports
/// ([`GameMeta`]), its queries and its decoder. The emulators are apart, in [`Emulate`].
pub trait Game: Send + Sync + fmt::Debug {
    /// The game's names, family and ports.
    fn meta(&self) -> &GameMeta;
    /// The short name used on the command line and in JSON (`q3`, `et`, `doom3`…).
    fn id(&self) -> &str {
        &self.meta().id
    }
    /// A human title.
    fn title(&self) -> &str {
        &self.meta().title
    }
    /// Other names accepted for it on the command line (qstat's type names among them).
    fn aliases(&self) -> &[&str] {
        self.meta().aliases
    }
    /// The family's id (`quake3`, `idtech4`…).
    fn family(&self) -> &'static str {
        self.meta().family
    }
    /// Default game server port.
    fn default_port(&self) -> u16 {
        self.meta().default_port
    }
    /// Default master port, for games with UDP masters.
    fn master_port(&self) -> Option<u16> {
        self.meta().master_port
    }
    /// The game's public masters ([`GameMeta::masters`], [`catalogue`]), asked when no
    /// master is given.
    fn catalogue(&self) -> &[CatalogueMaster] {
        self.meta().masters
    }
    /// Whether this game's servers echo the query's challenge (or token) in their replies.
    /// When they do, a reply without it is ignored (it could be forged by anyone able to send
    /// from the server's address); when they do not, it is taken and its
    /// [`ServerInfo::unverified`] is set.
    fn echoes_challenge(&self) -> bool {
        self.meta().echoes_challenge
    }
    /// What to tell a user whose server did not answer this game's query, or sent datagrams
    /// that were no answer to it (e.g. "a Teeworlds 0.7 server? query it as `teeworlds07`");
    /// `None` to say nothing more.
    fn unanswered_hint(&self) -> Option<&'static str> {
        self.meta().unanswered_hint
    }
    /// Whether the game has a short query besides its usual one ([`Ask::short`]: qfusion's
    /// `info <protocol>`).
    fn has_short_query(&self) -> bool {
        self.meta().short_query
    }
    /// A URL that has the game's client join the server at `addr`: [`GameMeta::join_url`].
    fn join_url(&self, addr: &str) -> Option<String> {
        self.meta().join_url(addr)
    }
    /// Checks that this game can ask what `ask` asks for: an error naming the game for the
    /// short query of a game that has none. [`Game::server_query`] of a registry game
    /// ([`Entry`]) makes the same check, and a query it refuses fails with
    /// [`QueryError::Encode`](crate::QueryError::Encode) with nothing sent; a front end
    /// calls this first to say so before any query. The error reads `q3 (Quake III Arena) has
    /// no short query`.
    fn check_ask(&self, ask: Ask) -> Result<(), AskError> {
        if ask.short && !self.has_short_query() {
            return Err(AskError::NoShortQuery {
                game: self.id().to_string(),
                title: self.title().to_string(),
            });
        }
        Ok(())
    }
    /// A query of one server. For an [`Ask`] the game cannot ask ([`Game::check_ask`]), a
    /// registry game ([`Entry`]) gives a query that fails at once, sending nothing.
    fn server_query(&self, ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>>;
    /// A query of a master, or why the options do not fit this game.
    fn master_query(&self, options: &MasterOptions) -> Result<MasterQuery, MasterQueryError>;
    /// Decodes one saved datagram (the UDP payload).
    fn decode(&self, datagram: &[u8]) -> Result<Decoded, DecodeError>;
    /// Decodes the datagrams of one reply that spans several (a master's list in pieces;
    /// DDNet's `iext` + `iex+` or `dtsf` parts) as one server or one list. The default: one
    /// datagram is [`Game::decode`]; several must all be parts of a master's list, which are
    /// merged (each server once).
    fn decode_parts(&self, datagrams: &[&[u8]]) -> Result<Decoded, DecodeError> {
        decode_list_parts(|d| self.decode(d), datagrams)
    }
    /// The game's emulators, when its crate was built with them (the family crates'
    /// `emulate` feature); `None` otherwise.
    fn emulator(&self) -> Option<&dyn Emulate> {
        None
    }
}

/// A game of a family as its crate describes it, usually an enum of the family's games
/// (`Quake3Game`, `Idtech4Game`…): what [`Entry`] turns into a registry [`Game`] and
/// [`Family::of`] into the family's list. Methods take the game by value, as a family's
/// own code does.
pub trait FamilyGame: Copy + Send + Sync + fmt::Debug + 'static {
    /// The family's short id (`quake3`).
    const FAMILY: &'static str;
    /// The family's human title.
    const FAMILY_TITLE: &'static str;
    /// The named games, in the order they are listed.
    const ALL: &'static [Self];
    /// The game's names, family and ports.
    fn meta(self) -> GameMeta;
    /// The game called `id` (or one of its aliases, case-insensitively). The default looks
    /// among [`FamilyGame::ALL`]; a family with ids made on the fly (`oob:43`) overrides it.
    fn parse(id: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|g| {
            let m = g.meta();
            m.id.eq_ignore_ascii_case(id) || m.aliases.iter().any(|a| a.eq_ignore_ascii_case(id))
        })
    }
    /// A query of one server: [`Game::server_query`].
    fn server_query(self, ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>>;
    /// A query of a master: [`Game::master_query`].
    fn master_query(self, options: &MasterOptions) -> Result<MasterQuery, MasterQueryError>;
    /// Decodes one datagram: [`Game::decode`].
    fn decode(self, datagram: &[u8]) -> Result<Decoded, DecodeError>;
    /// Decodes a reply in several datagrams: [`Game::decode_parts`]. The default merges the
    /// parts of a master's list ([`decode_list_parts`]).
    fn decode_parts(self, datagrams: &[&[u8]]) -> Result<Decoded, DecodeError> {
        decode_list_parts(|d| self.decode(d), datagrams)
    }
    /// The game's emulators: `Some(&self)` in a family crate built with its `emulate`
    /// feature, `None` (the default) otherwise.
    fn emulator(&self) -> Option<&dyn Emulate> {
        None
    }
}

/// A [`FamilyGame`] as a registry [`Game`], with its [`GameMeta`] made once.
#[derive(Debug, Clone)]
pub struct Entry<G> {
    game: G,
    meta: GameMeta,
}

impl<G: FamilyGame> Entry<G> {
    /// The registry object of `game`.
    pub fn new(game: G) -> Self {
        Entry {
            game,
            meta: game.meta(),
        }
    }

    /// The game.
    pub fn game(&self) -> G {
        self.game
    }
}

impl<G: FamilyGame> Game for Entry<G> {
    fn meta(&self) -> &GameMeta {
        &self.meta
    }
    fn server_query(&self, ask: Ask) -> Box<dyn Exchange<Output = ServerInfo>> {
        if self.check_ask(ask).is_err() {
            return Box::new(Refused);
        }
        Box::new(GameQuery {
            inner: self.game.server_query(ask),
            game: self.game,
            spacing: self.meta.engine.spacing(),
        })
    }
    fn master_query(&self, options: &MasterOptions) -> Result<MasterQuery, MasterQueryError> {
        self.game.master_query(options)
    }
    fn decode(&self, datagram: &[u8]) -> Result<Decoded, DecodeError> {
        self.game.decode(datagram)
    }
    fn decode_parts(&self, datagrams: &[&[u8]]) -> Result<Decoded, DecodeError> {
        self.game.decode_parts(datagrams)
    }
    fn emulator(&self) -> Option<&dyn Emulate> {
        self.game.emulator()
    }
}

/// A registry game's server query: the family's exchange, spaced to the game's engine
/// ([`GameMeta::engine`]), and knowing the game's replies to other queries by its decoder.
struct GameQuery<G> {
    inner: Box<dyn Exchange<Output = ServerInfo>>,
    game: G,
    spacing: Option<crate::manners::Spacing>,
}

impl<G: FamilyGame> Exchange for GameQuery<G> {
    type Output = ServerInfo;
    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, crate::encode::EncodeError> {
        self.inner.requests(attempt)
    }
    fn on_datagram(&mut self, datagram: &[u8]) -> crate::exchange::Verdict<ServerInfo> {
        self.inner.on_datagram(datagram)
    }
    fn on_timeout(&mut self, exhausted: bool) -> Option<Result<ServerInfo, DecodeError>> {
        self.inner.on_timeout(exhausted)
    }
    fn spacing(&self) -> Option<crate::manners::Spacing> {
        self.spacing
    }
    /// What the game's decoder reads as a server's reply (to another request or challenge)
    /// is the game's own; anything else (a request echoed back, another game's packet) is
    /// foreign.
    fn answers_another_query(&self, datagram: &[u8]) -> bool {
        self.inner.answers_another_query(datagram)
            || matches!(self.game.decode(datagram), Ok(Decoded::Server(_)))
    }
}

/// The query of an [`Ask`] a game cannot ask ([`Game::check_ask`]): it ends at its first
/// request, with nothing sent.
#[derive(Debug)]
struct Refused;

impl Exchange for Refused {
    type Output = ServerInfo;
    fn requests(&mut self, _attempt: u32) -> Result<Vec<Vec<u8>>, crate::encode::EncodeError> {
        Err(crate::encode::EncodeError::Invalid(
            "the game has no short query (Ask::short)",
        ))
    }
    fn on_datagram(&mut self, _datagram: &[u8]) -> crate::exchange::Verdict<ServerInfo> {
        crate::exchange::Verdict::Ignore("no request was sent")
    }
}

/// An HTTP response body an emulated HTTP master serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpBody {
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// The bytes.
    pub body: Vec<u8>,
}

/// A shared game object.
pub type GameRef = Arc<dyn Game>;

/// [`Game::decode_parts`]'s default: one datagram decoded, or the pieces of a master's list
/// merged in order, each server once.
pub fn decode_list_parts(
    decode: impl Fn(&[u8]) -> Result<Decoded, DecodeError>,
    datagrams: &[&[u8]],
) -> Result<Decoded, DecodeError> {
    let Some((first, rest)) = datagrams.split_first() else {
        return Err(DecodeError::Invalid {
            field: "datagrams",
            offset: 0,
            reason: "no datagram given",
        });
    };
    if rest.is_empty() {
        return decode(first);
    }
    let mut all: Vec<MasterEntry> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for d in datagrams {
        match decode(d)? {
            Decoded::Servers { servers, .. } => {
                all.extend(servers.into_iter().filter(|s| seen.insert(s.addr)));
            }
            _ => {
                return Err(DecodeError::Invalid {
                    field: "datagrams",
                    offset: 0,
                    reason: "several datagrams are decoded together only as the parts of one reply (a master's list; DDNet's iext + iex+ or dtsf)",
                })
            }
        }
    }
    Ok(Decoded::Servers {
        servers: all,
        details: None,
    })
}

/// A family of games, as a family crate exports it (`pub const FAMILY: Family`).
#[derive(Clone, Copy)]
pub struct Family {
    /// Short id (`quake3`).
    pub id: &'static str,
    /// Human title.
    pub title: &'static str,
    /// Its named games, in the order they are listed.
    pub games: fn() -> Vec<GameRef>,
    /// Finds a game by id or alias, including ids made on the fly (`oob:43`).
    pub find: fn(&str) -> Option<GameRef>,
}

impl Family {
    /// The family of the games `G` ([`FamilyGame::FAMILY`], [`FamilyGame::FAMILY_TITLE`]):
    /// its list is [`FamilyGame::ALL`], found by [`FamilyGame::parse`], each an [`Entry`].
    pub const fn of<G: FamilyGame>() -> Family {
        Family {
            id: G::FAMILY,
            title: G::FAMILY_TITLE,
            games: games_of::<G>,
            find: find_of::<G>,
        }
    }
}

fn games_of<G: FamilyGame>() -> Vec<GameRef> {
    G::ALL
        .iter()
        .map(|g| Arc::new(Entry::new(*g)) as GameRef)
        .collect()
}

fn find_of<G: FamilyGame>(id: &str) -> Option<GameRef> {
    G::parse(id).map(|g| Arc::new(Entry::new(g)) as GameRef)
}

impl fmt::Debug for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Family")
            .field("id", &self.id)
            .field("title", &self.title)
            .finish_non_exhaustive()
    }
}

/// How `fragstat decode` writes a [`Decoded`] datagram as JSON: a server reply is a
/// [`crate::record::Record`] (docs/json.md) with a null address; a list is
/// `{"packet": "servers", "servers": [...], "details": {...}}`; any other packet
/// `{"packet": KIND, "fields": {...}}`.
#[derive(Debug)]
pub struct DecodedJson<'a> {
    /// The game id written into a server record.
    pub game: &'a str,
    /// The datagram.
    pub decoded: &'a Decoded,
}

impl serde::Serialize for DecodedJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.decoded {
            Decoded::Server(info) => {
                crate::record::Record::online(None, self.game, (**info).clone(), None).serialize(s)
            }
            Decoded::Servers { servers, details } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("packet", "servers")?;
                m.serialize_entry("servers", servers)?;
                m.serialize_entry("details", details)?;
                m.end()
            }
            Decoded::Packet { kind, fields } => {
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("packet", kind)?;
                m.serialize_entry("fields", fields)?;
                m.end()
            }
        }
    }
}
