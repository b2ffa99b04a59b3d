//! Servers' countries: what the server declares, else a local GeoIP lookup of its address.
//!
//! The rule, first match wins:
//!
//! 1. **Declared by the server or its list.** DDNet's master list (`servers.json`) gives each
//!    server a `location` such as `eu:de` (continent, then the ISO 3166-1 alpha-2 country in
//!    lower case); it lands in the record's Teeworlds extra (`extra.location`), and the round
//!    copies it there from the list for servers probed over UDP. A location without a country
//!    (`eu`, `as:`) declares none.
//! 2. **GeoIP**: the server's IP address looked up in the MMDB file the operator names
//!    (`geoip = "PATH"`), in memory, never over the network. Both common layouts are read: a
//!    top-level `country_code` (the ip-location-db databases) and GeoIP2/GeoLite2's
//!    `country.iso_code`.
//!
//! Name tags such as `[DE]` are **not** used: on the real lists they name a community's
//! language or a clan as often as a location (`[EU]`, `[RU] DDraceNetwork` hosted in
//! Germany), so they would contradict the address more often than they would correct it.
//!
//! Codes are ISO 3166-1 alpha-2 in upper case; anything else a source says is dropped.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

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

/// Finds servers' countries; see the module docs for the rule.
pub struct Countries {
    reader: Option<maxminddb::Reader<Vec<u8>>>,
}

impl std::fmt::Debug for Countries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Countries")
            .field(
                "geoip",
                &self.reader.as_ref().map(|r| &r.metadata.database_type),
            )
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

/// The location a record declares (DDNet's `extra.location`), if any.
pub fn declared_location(record: &Record) -> Option<&str> {
    let info = record.info.as_ref()?;
    info.extra_as::<fragstat::teeworlds::view::ServerExtra>()?
        .location
        .as_deref()
}

impl Countries {
    /// No GeoIP database: declared locations only.
    pub fn none() -> Countries {
        Countries { reader: None }
    }

    /// Reads the MMDB file at `path` into memory.
    pub fn open(path: &Path) -> Result<Countries, GeoIpError> {
        let err = |reason: String| GeoIpError {
            path: path.display().to_string(),
            reason,
        };
        let reader = maxminddb::Reader::open_readfile(path).map_err(|e| err(e.to_string()))?;
        Ok(Countries {
            reader: Some(reader),
        })
    }

    /// Opens `path` when given, else [`Countries::none`].
    pub fn from_config(path: Option<&Path>) -> Result<Countries, GeoIpError> {
        path.map_or_else(|| Ok(Countries::none()), Countries::open)
    }

    /// Whether a GeoIP database is loaded.
    pub fn has_geoip(&self) -> bool {
        self.reader.is_some()
    }

    /// The country (ISO alpha-2, upper case) the database gives `ip`.
    pub fn lookup(&self, ip: IpAddr) -> Option<String> {
        let reader = self.reader.as_ref()?;
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

    /// The country of a server: declared (DDNet's `location`), else GeoIP of its address.
    pub fn country(&self, record: &Record) -> Option<String> {
        if let Some(c) = declared_location(record).and_then(location_country) {
            return Some(c);
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
}
