//! [`Dialect`]: which colour codes a game's engine draws (docs/protocols/colours.md).

use std::fmt;

use serde::{Serialize, Serializer};

/// How a game writes its strings: which `^` colour codes its engine draws, and how.
///
/// Each variant is one engine's rule, as its own text-drawing loop applies it
/// (docs/protocols/colours.md gives the source line of every rule, its colour table and the
/// games that use it). All but [`Dialect::Plain`] are 8-bit bytes, shown as UTF-8 when
/// valid, else ISO-8859-1. The [`text`](crate::text) functions ([`Dialect::tokens`], [`Dialect::display`],
/// [`Dialect::runs`], [`Dialect::ansi`], [`Dialect::html`]) show a string in a dialect.
///
/// ```
/// use fragstat_core::model::Dialect;
/// let d: Dialect = "dp".parse().unwrap();
/// assert_eq!(d, Dialect::DarkPlaces);
/// assert_eq!(d.display(b"^xF80Orange ^^"), "Orange ^");
/// assert_eq!(Dialect::Ioq3.display(b"^xF80Orange ^^"), "F80Orange ^^");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Dialect {
    /// `quake`: fragstat's generic rule, the widest of them, for engines not known more
    /// precisely (`oob:NN` protocols): `^^` is a caret, DarkPlaces' `^x` + three hex digits
    /// an RGB colour, `^` + any other byte a code of the 8-colour id table
    /// (`(c - '0') & 7`), a `^` at the end is kept.
    #[default]
    Quake,
    /// `plain`: no colour codes, `^` is a literal character (Teeworlds and DDNet, UTF-8;
    /// Medal of Honor: Allied Assault, whose names show no codes — unverified).
    Plain,
    /// `idq3`: id Quake III 1.32 `Q_IsColorString` (`code/game/q_shared.h:532-533`): `^` +
    /// any byte but NUL and `^`, colour `(c - '0') & 7` of 8 (`q_math.c:43-53`). Also RtCW,
    /// SoF2, Reaction, Jedi Outcast 1.02, Tremulous 1.1.
    IdTech3,
    /// `wet`: Wolfenstein: Enemy Territory 2.60 (`src/game/q_shared.h:521-547`) and Smokin'
    /// Guns: the `idq3` rule with a 32-colour table (`(c - '0') & 31`), `^*` the default
    /// colour (`src/client/cl_scrn.c:233-243`).
    Wet,
    /// `etl`: ET: Legacy (`src/qcommon/q_shared.h:909-930`): as `wet`, but of ASCII only
    /// `isgraph` bytes are codes (`^ ` is not); bytes of 0x80 and above are.
    Etl,
    /// `ioq3`: ioquake3 since 2007 (`code/qcommon/q_shared.c:26-46`) and its standalone
    /// games (OpenArena on ioquake3, World of Padman, Q3Rally, Tremulous 1.2+): `^` + an
    /// ASCII letter or digit, colour `(c - '0') & 7` of 8.
    Ioq3,
    /// `urt`: Urban Terror 4.x (`code/qcommon/q_shared.h:352-364`): `^0`-`^9`, 10 colours.
    UrbanTerror,
    /// `jk`: Jedi Academy retail and Jedi Outcast 1.04 (`codemp/game/q_shared.h:1147` of
    /// the Raven source): `^0`-`^7` only, 8 colours.
    JediKnight,
    /// `openjk`: OpenJK (`shared/qcommon/q_color.h:16`): `^0`-`^9`, `^8` orange, `^9` grey.
    OpenJk,
    /// `dp`: DarkPlaces, Xonotic, Nexuiz (`common.c:1265-1349`, `gl_draw.c:1189-1219`):
    /// `^0`-`^9` (`^8` white at half alpha), `^x` + three hex digits RGB, `^^` shows one
    /// `^`, any other `^` is shown.
    DarkPlaces,
    /// `daemon`: Dæmon / Unvanquished (`src/common/Color.cpp:160-215`): `^^` shows `^`,
    /// `^*` the default colour, `^0`-`^O` and `^a`-`^o` a 32-colour table, `^x` + three
    /// hex digits and `^#` + six RGB; any other `^` is shown.
    Daemon,
    /// `idtech4`: Doom 3 (dhewm3 `idStr::IsColor`, `neo/idlib/Str.h:1015-1017`), Prey, and
    /// the nearest known rule for ETQW: `^` + any byte but NUL and space — `^^` included —
    /// colour `c & 15` of 16, `^0` the default colour (`neo/ui/DeviceContext.cpp`).
    Idtech4,
    /// `quake4`: Quake 4 (Raven's `idStr::IsEscape`, `source/idlib/Str.cpp:1774-1834`):
    /// `^0`-`^9` and `^:` (16 colours, `^0` the default), `^c` + three digits RGB in ninths,
    /// `^i` + three bytes an icon, `^r` reset, `^+`/`^-` brightness, `^n` + one byte; a
    /// `^` followed by `^` or anything else is shown.
    Quake4,
    /// `qfusion`: Warsow, Warfork (`Q_GrabCharFromColorString`,
    /// `source/common/helpers/q_libc.cpp:113-150`): `^0`-`^9`, `^^` shows `^`, any other
    /// `^` is shown.
    Qfusion,
    /// `cod`: Call of Duty 1, 2, 4 and IW4x, **best effort** (the clients are closed):
    /// `^0`-`^9` as CoD4X's `ColorIndex` (`src/q_shared.h:161`, `& 7`), the names'
    /// `^^` + digit idiom as a colour, and the IW material escape `^` 0x01 (an icon),
    /// inferred from captures.
    CallOfDuty,
}

impl Dialect {
    /// Every dialect, in declaration order.
    pub const ALL: [Dialect; 15] = [
        Dialect::Quake,
        Dialect::Plain,
        Dialect::IdTech3,
        Dialect::Wet,
        Dialect::Etl,
        Dialect::Ioq3,
        Dialect::UrbanTerror,
        Dialect::JediKnight,
        Dialect::OpenJk,
        Dialect::DarkPlaces,
        Dialect::Daemon,
        Dialect::Idtech4,
        Dialect::Quake4,
        Dialect::Qfusion,
        Dialect::CallOfDuty,
    ];

    /// The dialect's id, as JSON and the tracker's database write it (`"quake"`, `"idq3"`…).
    pub const fn id(&self) -> &'static str {
        match self {
            Dialect::Quake => "quake",
            Dialect::Plain => "plain",
            Dialect::IdTech3 => "idq3",
            Dialect::Wet => "wet",
            Dialect::Etl => "etl",
            Dialect::Ioq3 => "ioq3",
            Dialect::UrbanTerror => "urt",
            Dialect::JediKnight => "jk",
            Dialect::OpenJk => "openjk",
            Dialect::DarkPlaces => "dp",
            Dialect::Daemon => "daemon",
            Dialect::Idtech4 => "idtech4",
            Dialect::Quake4 => "quake4",
            Dialect::Qfusion => "qfusion",
            Dialect::CallOfDuty => "cod",
        }
    }
}

/// An id that names no [`Dialect`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownDialect(pub String);

impl fmt::Display for UnknownDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown text dialect {:?} (known: ", self.0)?;
        for (i, d) in Dialect::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(d.id())?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for UnknownDialect {}

impl std::str::FromStr for Dialect {
    type Err = UnknownDialect;

    /// The dialect of an id ([`Dialect::id`]).
    fn from_str(s: &str) -> Result<Self, UnknownDialect> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.id() == s)
            .ok_or_else(|| UnknownDialect(s.to_owned()))
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl Serialize for Dialect {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}
