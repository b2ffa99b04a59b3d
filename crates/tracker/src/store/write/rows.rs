//! The rows a round writes, typed: each struct owns its column names and its values in one
//! declaration ([`row!`]), so an `INSERT`'s column list and the values bound to it cannot
//! drift. A row names a server or a player of the round by its index ([`ServerIx`],
//! [`PlayerIx`]) until [`apply`](super::apply) knows its id ([`Ids`]).

use super::Val;

/// A server of the round: an index into [`RoundPlan::servers`](super::RoundPlan).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::store) struct ServerIx(pub(in crate::store) usize);

/// A player identity of the round: an index into [`RoundPlan::players`](super::RoundPlan).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::store) struct PlayerIx(pub(in crate::store) usize);

/// The ids the database gave a round's rows: each server's (by [`ServerIx`]; 0 for none), each
/// new player identity's (by [`PlayerIx`]) and each opened session's (by its index in
/// [`RoundPlan::opens`](super::RoundPlan)).
#[derive(Debug, Default, Clone, PartialEq)]
pub(in crate::store) struct Ids {
    pub(in crate::store) servers: Vec<i64>,
    pub(in crate::store) players: Vec<Option<i64>>,
    pub(in crate::store) sessions: Vec<Option<i64>>,
}

impl Ids {
    fn server(&self, s: ServerIx) -> i64 {
        self.servers.get(s.0).copied().unwrap_or(0)
    }
    fn player(&self, p: PlayerIx) -> Option<i64> {
        self.players.get(p.0).copied().flatten()
    }
}

/// A column's value, bound ([`Val`]).
pub(in crate::store) trait Col {
    fn val(&self, ids: &Ids) -> Val;
}

/// A column's value, a number written as an SQL literal or in an array.
pub(in crate::store) trait Num {
    fn num(&self, ids: &Ids) -> Option<i64>;
}

impl Col for i64 {
    fn val(&self, _: &Ids) -> Val {
        Val::I(Some(*self))
    }
}
impl Col for Option<i64> {
    fn val(&self, _: &Ids) -> Val {
        Val::I(*self)
    }
}
impl Col for Option<bool> {
    fn val(&self, _: &Ids) -> Val {
        Val::I(self.map(i64::from))
    }
}
impl Col for bool {
    fn val(&self, _: &Ids) -> Val {
        Val::I(Some(i64::from(*self)))
    }
}
impl Col for u64 {
    /// A hash, stored as its bits.
    fn val(&self, _: &Ids) -> Val {
        Val::I(Some(i64::from_ne_bytes(self.to_ne_bytes())))
    }
}
impl Col for Option<f64> {
    fn val(&self, _: &Ids) -> Val {
        Val::F(*self)
    }
}
impl Col for String {
    fn val(&self, _: &Ids) -> Val {
        Val::S(Some(self.clone()))
    }
}
impl Col for &'static str {
    fn val(&self, _: &Ids) -> Val {
        Val::S(Some((*self).to_string()))
    }
}
impl Col for Option<String> {
    fn val(&self, _: &Ids) -> Val {
        Val::S(self.clone())
    }
}
impl Col for Vec<u8> {
    fn val(&self, _: &Ids) -> Val {
        Val::B(Some(self.clone()))
    }
}
impl Col for Option<Vec<u8>> {
    fn val(&self, _: &Ids) -> Val {
        Val::B(self.clone())
    }
}
impl Col for ServerIx {
    fn val(&self, ids: &Ids) -> Val {
        Val::I(Some(ids.server(*self)))
    }
}
impl Col for PlayerIx {
    fn val(&self, ids: &Ids) -> Val {
        Val::I(ids.player(*self))
    }
}
impl Num for i64 {
    fn num(&self, _: &Ids) -> Option<i64> {
        Some(*self)
    }
}
impl Num for Option<i64> {
    fn num(&self, _: &Ids) -> Option<i64> {
        *self
    }
}
impl Num for ServerIx {
    fn num(&self, ids: &Ids) -> Option<i64> {
        Some(ids.server(*self))
    }
}

/// A row whose values are bound ([`insert`](super::insert)).
pub(in crate::store) trait Bound {
    /// Its columns, in the order of its values.
    const COLUMNS: &'static [&'static str];
    /// Its values, in the order of [`Bound::COLUMNS`].
    fn values(&self, ids: &Ids) -> Vec<Val>;
}

/// A row of numbers, written as SQL literals or arrays ([`number_rows`](super::number_rows)).
pub(in crate::store) trait Numbers {
    /// Its columns, in the order of its numbers.
    const COLUMNS: &'static [&'static str];
    /// Its numbers, in the order of [`Numbers::COLUMNS`], each given to `f`.
    fn numbers(&self, ids: &Ids, f: &mut dyn FnMut(Option<i64>));
}

/// A row type: its columns (`field: Type => "column"`) as a struct, and its column names and
/// values from that one list ([`Bound`] or [`Numbers`]).
macro_rules! row {
    ($kind:ident $(#[$m:meta])* $name:ident {
        $($(#[$fm:meta])* $field:ident : $ty:ty => $col:literal),* $(,)?
    }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default, PartialEq)]
        pub(in crate::store) struct $name {
            $($(#[$fm])* pub(in crate::store) $field: $ty),*
        }
        row!(@$kind $name [$($col),*] $($field),*);
    };
    (@bound $name:ident [$($col:literal),*] $($field:ident),*) => {
        impl Bound for $name {
            const COLUMNS: &'static [&'static str] = &[$($col),*];
            fn values(&self, ids: &Ids) -> Vec<Val> {
                vec![$(Col::val(&self.$field, ids)),*]
            }
        }
    };
    (@numbers $name:ident [$($col:literal),*] $($field:ident),*) => {
        impl Numbers for $name {
            const COLUMNS: &'static [&'static str] = &[$($col),*];
            fn numbers(&self, ids: &Ids, f: &mut dyn FnMut(Option<i64>)) {
                $(f(Num::num(&self.$field, ids));)*
            }
        }
    };
}

row! { bound
    /// A new or changed server: all its columns (the `servers` upsert).
    ServerUpsert {
        addr: String => "addr",
        game: String => "game",
        first_seen: i64 => "first_seen",
        last_seen: i64 => "last_seen",
        last_online: Option<i64> => "last_online",
        status: &'static str => "status",
        error: Option<String> => "error",
        name_raw: Option<Vec<u8>> => "name_raw",
        name: Option<String> => "name",
        dialect: Option<String> => "dialect",
        map: Option<String> => "map",
        gametype: Option<String> => "gametype",
        num_players: Option<i64> => "num_players",
        max_players: Option<i64> => "max_players",
        num_bots: Option<i64> => "num_bots",
        rtt_ms: Option<f64> => "rtt_ms",
        password: Option<bool> => "password",
        country: Option<String> => "country",
        up_since: Option<i64> => "up_since",
        down_since: Option<i64> => "down_since",
        record: String => "record",
        record_hash: u64 => "record_hash",
        unlisted_since: Option<i64> => "unlisted_since",
    }
}

row! { bound
    /// A server's state changed (a `server_changes` row).
    ChangeRow {
        server: ServerIx => "server_id",
        at: i64 => "at",
        online: bool => "online",
        name_raw: Option<Vec<u8>> => "name_raw",
        dialect: Option<String> => "dialect",
        map: Option<String> => "map",
        gametype: Option<String> => "gametype",
        max_players: Option<i64> => "max_players",
        password: Option<bool> => "password",
    }
}

row! { bound
    /// A player identity a session opens for (inserted, or its last sighting updated).
    PlayerInsert {
        name_raw: Vec<u8> => "name_raw",
        dialect: &'static str => "dialect",
        name: String => "name",
        first_seen: i64 => "first_seen",
        last_seen: i64 => "last_seen",
        server: ServerIx => "last_server_id",
    }
}

row! { bound
    /// A session opened.
    SessionOpen {
        player: PlayerIx => "player_id",
        server: ServerIx => "server_id",
        nth: i64 => "nth",
        joined: i64 => "joined",
        last_seen: i64 => "last_seen",
        score: Option<i64> => "last_score",
        team: Option<i64> => "team",
        is_bot: Option<bool> => "is_bot",
        clan: Option<Vec<u8>> => "clan_raw",
    }
}

row! { numbers
    /// One server's numbers this round (a `series` row, copied into `server_latest`).
    SeriesRow {
        server: ServerIx => "server_id",
        at: i64 => "at",
        status: i64 => "status",
        players: Option<i64> => "players",
        bots: Option<i64> => "bots",
        rtt: Option<i64> => "rtt",
    }
}

row! { numbers
    /// An open session closed (`left` set) or refreshed.
    SessionUpdate {
        id: i64 => "id",
        last_seen: i64 => "last_seen",
        left: Option<i64> => "left_at",
        score: Option<i64> => "last_score",
        team: Option<i64> => "team",
        /// 1 a bot, 0 a human, NULL: as written before (the bots are decided per round:
        /// crate::bots).
        is_bot: Option<i64> => "is_bot",
    }
}

row! { numbers
    /// A player's last sighting (the latest of its sessions' updates this round).
    Sighting {
        player: i64 => "id",
        last_seen: i64 => "last_seen",
        server: i64 => "last_server_id",
    }
}

row! { bound
    /// The round's row.
    RoundInsert {
        at: i64 => "at",
        finished: i64 => "finished",
        servers: i64 => "servers",
        online: i64 => "online",
        players: i64 => "players",
    }
}
