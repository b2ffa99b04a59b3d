//! Servers' countries: what the server or its list declares, else a local GeoIP lookup of its
//! address.
//!
//! The rule, first match wins:
//!
//! 1. **Declared by its list.** DDNet's master list (`servers.json`) gives each server a
//!    `location` such as `eu:de` (continent, then the ISO 3166-1 alpha-2 country in lower
//!    case); it lands in the record's `location` (records stored before that field had it
//!    in the Teeworlds extra, `extra.location`, and read back with it), and the round copies
//!    it there from the list for servers probed over UDP. A location without a country (`eu`,
//!    `as:`) declares none.
//! 2. **Declared by its name** ([`name_tag_country`]; `country_from_name = false` turns it
//!    off): a clear tag at the start or the end of the name, colour codes stripped first —
//!    `[DE] …`, `(NL) …`, `{FR} …`, `|US| …`, `US | …`, and the same at the end (`… [DE]`,
//!    `… | DE`) — holding a code ISO 3166-1 has assigned, in upper case. `UK` is read as `GB`
//!    (the code ISO reserves for the United Kingdom's own use); `EU` and the other codes that
//!    name no country (`UN`, `EL`, unassigned ones such as `XK`) are not tags; and the
//!    assigned codes these games' names use for something else — [`AMBIGUOUS_TAGS`]: `CA`
//!    (Clan Arena), `DM` (deathmatch), `ET` (Enemy Territory), `TW` (Teeworlds), `AI`
//!    (bots), `GG`, `TV` — are not read as countries. A tag in the middle of a name, a lower
//!    case one (`[de]`, mostly a clan's or a community's) or two tags that disagree
//!    (`[DE] … [NL]`) declare nothing. A tag names where a server's players are meant to
//!    come from as often as where it runs (`[RU] DDraceNetwork` hosted in Germany): it is
//!    taken as the server's word, over its address.
//! 3. **GeoIP**: the server's IP address looked up in the MMDB file the operator names
//!    (`geoip = "PATH"`), in memory, never over the network. Both common layouts are read: a
//!    top-level `country_code` (the ip-location-db databases) and GeoIP2/GeoLite2's
//!    `country.iso_code`.
//!
//! Codes are ISO 3166-1 alpha-2 in upper case; anything else a source says is dropped.
//!
//! The MMDB file can be replaced while the tracker runs: [`Countries::reload`] (on SIGHUP,
//! `fragstat track`) reads the new file and swaps it in; a file that cannot be read leaves
//! the old table in use.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, RwLock};

use fragstat::core::record::Record;
use serde::Deserialize;

/// Why an MMDB file could not be used.
#[derive(Debug, thiserror::Error)]
#[error("GeoIP database {path}: {reason}")]
pub struct GeoIpError {
    /// The file.
    pub path: String,
    /// What went wrong.
    pub reason: String,
}

/// Reads the MMDB file at `path` into memory.
fn read_mmdb(path: &Path) -> Result<Mmdb, GeoIpError> {
    maxminddb::Reader::open_readfile(path).map_err(|e| GeoIpError {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// Finds servers' countries; see the module docs for the rule.
pub struct Countries {
    /// The MMDB table, swapped whole by [`Countries::reload`].
    reader: RwLock<Option<Arc<Mmdb>>>,
    name_tags: bool,
}

/// An MMDB file read into memory.
type Mmdb = maxminddb::Reader<Vec<u8>>;

impl std::fmt::Debug for Countries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Countries")
            .field(
                "geoip",
                &self.mmdb().map(|r| r.metadata.database_type.clone()),
            )
            .field("name_tags", &self.name_tags)
            .finish()
    }
}

/// What a lookup reads from a record of the database: either layout.
#[derive(Deserialize)]
struct GeoRecord<'a> {
    #[serde(borrow)]
    country_code: Option<&'a str>,
    #[serde(borrow)]
    country: Option<GeoCountry<'a>>,
}

#[derive(Deserialize)]
struct GeoCountry<'a> {
    #[serde(borrow)]
    iso_code: Option<&'a str>,
}

/// `de` / `DE` → `DE`; anything but two ASCII letters → `None`.
pub fn iso_code(s: &str) -> Option<String> {
    let s = s.trim();
    (s.len() == 2 && s.bytes().all(|b| b.is_ascii_alphabetic())).then(|| s.to_ascii_uppercase())
}

/// The country of a DDNet `location` (`eu:de` → `DE`); `None` without one.
pub fn location_country(location: &str) -> Option<String> {
    iso_code(location.rsplit_once(':')?.1)
}

/// Every code ISO 3166-1 has assigned (alpha-2), sorted: the 249 of the standard's list
/// (Debian's `iso-codes`, `iso_3166-1.json`).
pub const ISO_3166_ALPHA2: [&str; 249] = [
    "AD", "AE", "AF", "AG", "AI", "AL", "AM", "AO", "AQ", "AR", "AS", "AT", "AU", "AW", "AX", "AZ",
    "BA", "BB", "BD", "BE", "BF", "BG", "BH", "BI", "BJ", "BL", "BM", "BN", "BO", "BQ", "BR", "BS",
    "BT", "BV", "BW", "BY", "BZ", "CA", "CC", "CD", "CF", "CG", "CH", "CI", "CK", "CL", "CM", "CN",
    "CO", "CR", "CU", "CV", "CW", "CX", "CY", "CZ", "DE", "DJ", "DK", "DM", "DO", "DZ", "EC", "EE",
    "EG", "EH", "ER", "ES", "ET", "FI", "FJ", "FK", "FM", "FO", "FR", "GA", "GB", "GD", "GE", "GF",
    "GG", "GH", "GI", "GL", "GM", "GN", "GP", "GQ", "GR", "GS", "GT", "GU", "GW", "GY", "HK", "HM",
    "HN", "HR", "HT", "HU", "ID", "IE", "IL", "IM", "IN", "IO", "IQ", "IR", "IS", "IT", "JE", "JM",
    "JO", "JP", "KE", "KG", "KH", "KI", "KM", "KN", "KP", "KR", "KW", "KY", "KZ", "LA", "LB", "LC",
    "LI", "LK", "LR", "LS", "LT", "LU", "LV", "LY", "MA", "MC", "MD", "ME", "MF", "MG", "MH", "MK",
    "ML", "MM", "MN", "MO", "MP", "MQ", "MR", "MS", "MT", "MU", "MV", "MW", "MX", "MY", "MZ", "NA",
    "NC", "NE", "NF", "NG", "NI", "NL", "NO", "NP", "NR", "NU", "NZ", "OM", "PA", "PE", "PF", "PG",
    "PH", "PK", "PL", "PM", "PN", "PR", "PS", "PT", "PW", "PY", "QA", "RE", "RO", "RS", "RU", "RW",
    "SA", "SB", "SC", "SD", "SE", "SG", "SH", "SI", "SJ", "SK", "SL", "SM", "SN", "SO", "SR", "SS",
    "ST", "SV", "SX", "SY", "SZ", "TC", "TD", "TF", "TG", "TH", "TJ", "TK", "TL", "TM", "TN", "TO",
    "TR", "TT", "TV", "TW", "TZ", "UA", "UG", "UM", "US", "UY", "UZ", "VA", "VC", "VE", "VG", "VI",
    "VN", "VU", "WF", "WS", "YE", "YT", "ZA", "ZM", "ZW",
];

/// Name tags read as another code: `UK`, which ISO 3166-1 reserves for the United Kingdom's
/// own use, is `GB`.
pub const TAG_ALIASES: [(&str, &str); 1] = [("UK", "GB")];

/// Assigned codes that these games' server names use for something else more often than for
/// a country, so not read from a name: `AI` (bots), `CA` (Clan Arena), `DM` (deathmatch),
/// `ET` (Enemy Territory), `GG` ("good game"), `TV` (spectator relays), `TW` (Teeworlds).
pub const AMBIGUOUS_TAGS: [&str; 7] = ["AI", "CA", "DM", "ET", "GG", "TV", "TW"];

/// The country two tag letters name: an assigned upper-case code that is not ambiguous
/// ([`AMBIGUOUS_TAGS`]), or an alias of one ([`TAG_ALIASES`]).
fn tag_code(letters: &[u8]) -> Option<String> {
    let &[a, b] = letters else {
        return None;
    };
    if !(a.is_ascii_uppercase() && b.is_ascii_uppercase()) {
        return None;
    }
    let code: String = [char::from(a), char::from(b)].into_iter().collect();
    if let Some((_, to)) = TAG_ALIASES.iter().find(|(from, _)| *from == code) {
        return Some((*to).to_string());
    }
    if AMBIGUOUS_TAGS.contains(&code.as_str()) {
        return None;
    }
    ISO_3166_ALPHA2
        .binary_search(&code.as_str())
        .is_ok()
        .then_some(code)
}

/// The brackets a tag may stand in.
const TAG_BRACKETS: [(u8, u8); 4] = [(b'[', b']'), (b'(', b')'), (b'{', b'}'), (b'|', b'|')];

/// The two letters of a tag that `name` starts with: `[XX]`, `(XX)`, `{XX}`, `|XX|`, or
/// `XX` followed by `|` (spaces between allowed).
fn leading_tag(name: &[u8]) -> Option<&[u8]> {
    if let [open, _, _, close, ..] = name {
        if TAG_BRACKETS.contains(&(*open, *close)) {
            return name.get(1..3);
        }
    }
    let rest = name.get(2..)?;
    let rest = rest.trim_ascii_start();
    (rest.first() == Some(&b'|'))
        .then(|| name.get(..2))
        .flatten()
}

/// The two letters of a tag that `name` ends with: `[XX]`, `(XX)`, `{XX}`, `|XX|`, or `XX`
/// after `|` (spaces between allowed).
fn trailing_tag(name: &[u8]) -> Option<&[u8]> {
    let n = name.len();
    if let [.., open, _, _, close] = name {
        if TAG_BRACKETS.contains(&(*open, *close)) {
            return name.get(n - 3..n - 1);
        }
    }
    let rest = name.get(..n.checked_sub(2)?)?;
    let rest = rest.trim_ascii_end();
    (rest.last() == Some(&b'|'))
        .then(|| name.get(n - 2..))
        .flatten()
}

/// The country a server's name declares by a clear tag at its start or end (the name as
/// shown: colour codes stripped): see the module docs for the forms and the codes taken.
/// `None` when it has none, or a tag at each end and they disagree.
///
/// ```
/// use fragstat_tracker::geoip::name_tag_country;
/// assert_eq!(name_tag_country("[DE] Frankfurt Instagib").as_deref(), Some("DE"));
/// assert_eq!(name_tag_country("Clan Arena | UK").as_deref(), Some("GB"));
/// assert_eq!(name_tag_country("[EU] Unique Block"), None);
/// assert_eq!(name_tag_country("DDNet GER [DE] Novice"), None);
/// ```
pub fn name_tag_country(name: &str) -> Option<String> {
    let name = name.trim().as_bytes();
    let lead = leading_tag(name).and_then(tag_code);
    let trail = trailing_tag(name).and_then(tag_code);
    match (lead, trail) {
        (Some(a), Some(b)) if a != b => None,
        (a, b) => a.or(b),
    }
}

/// The location a record declares (its list's, e.g. DDNet's `eu:de`), if any.
pub fn declared_location(record: &Record) -> Option<&str> {
    record.info.as_ref()?.location.as_deref()
}

impl Countries {
    /// No GeoIP database: declared locations and name tags only.
    pub fn none() -> Countries {
        Countries {
            reader: RwLock::new(None),
            name_tags: true,
        }
    }

    /// Whether servers' names may declare their country ([`name_tag_country`]; on unless
    /// turned off, config `country_from_name`).
    pub fn with_name_tags(mut self, on: bool) -> Countries {
        self.name_tags = on;
        self
    }

    /// Reads the MMDB file at `path` into memory.
    pub fn open(path: &Path) -> Result<Countries, GeoIpError> {
        Ok(Countries {
            reader: RwLock::new(Some(Arc::new(read_mmdb(path)?))),
            name_tags: true,
        })
    }

    /// Reads the MMDB file at `path` again and swaps it in for the table in use (lookups
    /// under way finish with the old one). When it cannot be read, the table in use stays.
    pub fn reload(&self, path: &Path) -> Result<(), GeoIpError> {
        let new = Arc::new(read_mmdb(path)?);
        if let Ok(mut r) = self.reader.write() {
            *r = Some(new);
        }
        Ok(())
    }

    /// The table in use.
    fn mmdb(&self) -> Option<Arc<Mmdb>> {
        self.reader.read().ok()?.clone()
    }

    /// The table's build time (Unix seconds, from its metadata), when one is loaded.
    pub fn build_epoch(&self) -> Option<u64> {
        self.mmdb().map(|r| r.metadata.build_epoch)
    }

    /// Opens `path` when given, else [`Countries::none`].
    pub fn from_config(path: Option<&Path>) -> Result<Countries, GeoIpError> {
        path.map_or_else(|| Ok(Countries::none()), Countries::open)
    }

    /// Whether a GeoIP database is loaded.
    pub fn has_geoip(&self) -> bool {
        self.mmdb().is_some()
    }

    /// The country (ISO alpha-2, upper case) the database gives `ip`.
    pub fn lookup(&self, ip: IpAddr) -> Option<String> {
        let reader = self.mmdb()?;
        // IPv4-mapped IPv6 addresses are looked up as the IPv4 address they are.
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let rec: GeoRecord<'_> = reader.lookup(ip).ok().flatten()?;
        rec.country_code
            .or(rec.country.and_then(|c| c.iso_code))
            .and_then(iso_code)
    }

    /// The country of a server: declared by its list (DDNet's `location`), else by a tag in
    /// its name (when on), else GeoIP of its address.
    pub fn country(&self, record: &Record) -> Option<String> {
        if let Some(c) = declared_location(record).and_then(location_country) {
            return Some(c);
        }
        if self.name_tags {
            let tagged = record
                .info
                .as_ref()
                .and_then(|i| name_tag_country(&i.name.display_cow()));
            if tagged.is_some() {
                return tagged;
            }
        }
        let addr: SocketAddr = record.address.as_deref()?.parse().ok()?;
        self.lookup(addr.ip())
    }

    /// The country of a server known only by its address (`ip:port`): GeoIP.
    pub fn country_of_addr(&self, addr: &str) -> Option<String> {
        let addr: SocketAddr = addr.parse().ok()?;
        self.lookup(addr.ip())
    }
}

/// A country code as a flag: its two regional-indicator symbols (an emoji flag where the
/// font has one, the two letters boxed where not); `None` for anything but two letters.
pub fn flag(code: &str) -> Option<String> {
    let code = iso_code(code)?;
    Some(
        code.bytes()
            .filter_map(|b| char::from_u32(0x1F1E6 + u32::from(b - b'A')))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_locations() {
        assert_eq!(location_country("eu:de").as_deref(), Some("DE"));
        assert_eq!(location_country("na:us").as_deref(), Some("US"));
        assert_eq!(location_country("eu"), None);
        assert_eq!(location_country("as:"), None);
        assert_eq!(location_country("eu:deu"), None);
        assert_eq!(iso_code("1x"), None);
        assert_eq!(flag("de").as_deref(), Some("\u{1F1E9}\u{1F1EA}"));
        assert_eq!(flag("<b"), None);
        let none = Countries::none();
        assert!(!none.has_geoip());
        assert_eq!(none.country_of_addr("192.0.2.1:27960"), None);
        let e = Countries::open(Path::new("/nonexistent/x.mmdb")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/x.mmdb"), "{e}");
    }

    #[test]
    fn the_code_list_is_sorted_and_whole() {
        assert!(ISO_3166_ALPHA2.windows(2).all(|w| w[0] < w[1]));
        assert!(ISO_3166_ALPHA2
            .iter()
            .all(|c| iso_code(c).as_deref() == Some(*c)));
        for (from, to) in TAG_ALIASES {
            assert!(ISO_3166_ALPHA2.binary_search(&from).is_err(), "{from}");
            assert!(ISO_3166_ALPHA2.binary_search(&to).is_ok(), "{to}");
        }
        for c in AMBIGUOUS_TAGS {
            assert!(ISO_3166_ALPHA2.binary_search(&c).is_ok(), "{c}: assigned");
        }
    }

    /// Names as servers write them (their shown text: colour codes already stripped).
    #[test]
    fn name_tags() {
        for (name, country) in [
            // Leading tags, each bracket.
            ("[DE] Frankfurt Instagib", Some("DE")),
            ("[RU] DDraceNetwork", Some("RU")),
            ("(NL) Tourney 1v1 | q3dm17", Some("NL")),
            ("{FR} Defrag VQ3 Run", Some("FR")),
            ("|US| Chicago CTF 24/7", Some("US")),
            ("BR | Clan Arena Sao Paulo", Some("BR")),
            ("PL| Gores Novice", Some("PL")),
            ("  [SE]Stockholm FFA  ", Some("SE")),
            // Trailing ones.
            ("Unique Gores [FI]", Some("FI")),
            ("Terminal 24/7 [US]", Some("US")),
            ("Instagib CTF | DE", Some("DE")),
            ("Freeze Tag (AU)", Some("AU")),
            ("KoG Gores |CL|", Some("CL")),
            // The same tag at both ends.
            ("[JP] Tokyo DM [JP]", Some("JP")),
            // UK is GB.
            ("[UK] London Rocket Arena", Some("GB")),
            ("Midlands FFA | UK", Some("GB")),
            // Not countries: regions, unassigned or reserved codes, game words.
            ("[EU] Unique Block", None),
            ("[XK] Pristina", None),
            ("[UN] Peacekeepers", None),
            ("[DM] q3dm17 only", None),
            ("[CA] Clan Arena", None),
            ("[ET] Oasis", None),
            ("[TW] Teeworlds DM", None),
            ("[AI] bots only", None),
            ("Sunday Cup [GG]", None),
            // Two countries: neither.
            ("[DE] Frankfurt [NL]", None),
            // A refused tag at one end, a country at the other: the country.
            ("[EU] Block | DE", Some("DE")),
            // Not clear tags: in the middle, lower case, clan tags, words, cut.
            ("DDNet GER [DE] Novice", None),
            ("Official [NL] Server", None),
            ("[de] Kneipe", None),
            ("[De] Kneipe", None),
            ("[DDNet] Tutorial", None),
            ("[DEU] Berlin", None),
            ("DEAD | zombies", None),
            ("US-East Instagib", None),
            ("Gores [PL", None),
            ("[PL Gores", None),
            ("", None),
            ("|", None),
            ("[]", None),
            ("[D]", None),
            ("DE", None),
            ("[ÄÖ] Ümlaut", None),
            ("x [Ü]", None),
            ("Ω | 🇩🇪", None),
        ] {
            assert_eq!(name_tag_country(name).as_deref(), country, "{name:?}");
        }
    }

    /// The rule's order: the list's location, then the name's tag (colours stripped in the
    /// name's own dialect), then GeoIP (none here); tags off, the name says nothing.
    #[test]
    fn a_list_location_beats_a_name_tag() {
        use fragstat::core::model::{Dialect, ServerInfo, Text};
        let record = |name: &[u8], dialect, location: Option<&str>| {
            let mut info = ServerInfo::default();
            info.name = Text::new(name.to_vec(), dialect);
            info.location = location.map(str::to_string);
            Record::online(Some("192.0.2.1:27960".into()), "q3", info, None)
        };
        let c = Countries::none();
        let quake = record(b"^1[^7NL^1] ^7Dutch Defrag", Dialect::Ioq3, None);
        assert_eq!(c.country(&quake).as_deref(), Some("NL"));
        let dp = record(b"^x00f[^7SE^x00f]^7 Nexuiz CTF", Dialect::DarkPlaces, None);
        assert_eq!(c.country(&dp).as_deref(), Some("SE"));
        let tee = record(b"[RU] DDraceNetwork", Dialect::Plain, Some("eu:de"));
        assert_eq!(c.country(&tee).as_deref(), Some("DE"), "the list wins");
        let tee = record(b"[RU] DDraceNetwork", Dialect::Plain, Some("eu"));
        assert_eq!(
            c.country(&tee).as_deref(),
            Some("RU"),
            "a list without a country"
        );
        let off = Countries::none().with_name_tags(false);
        assert_eq!(off.country(&quake), None);
        assert_eq!(off.country(&tee), None);
        let failed = Record::failed(
            Some("192.0.2.1:27960".into()),
            "q3",
            fragstat::core::record::Status::Timeout,
            "x".into(),
        );
        assert_eq!(c.country(&failed), None, "no name, no tag");
    }

    /// A record stored before `location` was the model's (DDNet's in its `extra`) still
    /// declares it when read back, as a new one does.
    #[test]
    fn a_stored_record_declares_its_location_old_or_new() {
        let head = r#"{"address": "192.0.2.1:8303", "game": "ddnet", "status": "online",
            "name_raw": "[RU] x", "map": "", "num_players": 0, "max_players": 0"#;
        let c = Countries::none();
        for tail in [
            r#", "extra": {"protocol": "http", "location": "eu:de"}}"#,
            r#", "location": "eu:de", "extra": {"protocol": "http"}}"#,
        ] {
            let r: Record = serde_json::from_str(&format!("{head}{tail}")).unwrap();
            assert_eq!(declared_location(&r), Some("eu:de"), "{tail}");
            assert_eq!(c.country(&r).as_deref(), Some("DE"), "{tail}");
        }
    }
}
