//! [`MasterOptions`]: how a master is asked (the extended request, a game name, a protocol,
//! and for catalogue masters the request form, the end of the list and the quiet period).

use super::catalogue::{EndOfList, ListForm};
#[cfg(doc)]
use super::MasterQueryError;

/// How to ask a master for its list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MasterOptions {
    /// Use the extended request where the family has one (Quake III `getserversExt`, which
    /// lists IPv6 servers too).
    pub ext: bool,
    /// The game name the master knows the game by, overriding the game's own.
    pub gamename: Option<String>,
    /// The protocol number to ask the master for, overriding the game's own (Warsow 0.3's
    /// `getservers Warsow 9`, older releases of a game). Families whose master request names
    /// no protocol, or that do not take another, ignore it.
    pub protocol: Option<i32>,
    /// The request form a catalogue master is asked with ([`ListForm`]); `None` (and
    /// [`ListForm::Own`]): the game's own. [`MasterOptions::ext`] wins over it. A family
    /// without that form refuses it ([`MasterQueryError::Option`]).
    pub form: Option<ListForm>,
    /// How the master's list ends ([`EndOfList`]), when the catalogue says: with
    /// [`EndOfList::EveryPacket`] a bare `\EOT` does not end a Quake III list. `None`: any
    /// end marker on a datagram that is not full ends it.
    pub end: Option<EndOfList>,
    /// Once a datagram of the list has come, the list is whole when the master has been quiet
    /// this long (masters without an end marker); `None`: the query's attempt timeout.
    /// Families whose lists end otherwise (a count, a handshake) ignore it.
    pub quiet: Option<std::time::Duration>,
}

impl MasterOptions {
    /// Sets [`MasterOptions::ext`].
    pub fn with_ext(mut self, ext: bool) -> Self {
        self.ext = ext;
        self
    }
    /// Sets [`MasterOptions::gamename`].
    pub fn with_gamename(mut self, gamename: Option<String>) -> Self {
        self.gamename = gamename;
        self
    }
    /// Sets [`MasterOptions::protocol`].
    pub fn with_protocol(mut self, protocol: Option<i32>) -> Self {
        self.protocol = protocol;
        self
    }
    /// Sets [`MasterOptions::form`].
    pub fn with_form(mut self, form: Option<ListForm>) -> Self {
        self.form = form;
        self
    }
    /// Sets [`MasterOptions::end`].
    pub fn with_end(mut self, end: Option<EndOfList>) -> Self {
        self.end = end;
        self
    }
    /// Sets [`MasterOptions::quiet`].
    pub fn with_quiet(mut self, quiet: Option<std::time::Duration>) -> Self {
        self.quiet = quiet;
        self
    }
}
