//! The MMDB table swapped while the tracker runs ([`Countries::reload`], SIGHUP in
//! `fragstat track`): a good file is swapped in, a bad one leaves the table in use.

use std::path::PathBuf;

use fragstat_tracker::geoip::Countries;

/// The MMDB the tests use: `$FRAGSTAT_GEOIP_MMDB`, else where `cargo xtask test` installs
/// the CC0 package (`target/geoip`).
fn mmdb() -> Option<PathBuf> {
    let path = std::env::var_os("FRAGSTAT_GEOIP_MMDB")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
                "../../target/geoip/node_modules/@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb",
            )
        });
    if path.is_file() {
        return Some(path);
    }
    let msg = format!(
        "GeoIP test database not at {} (run `cargo xtask test`, or set FRAGSTAT_GEOIP_MMDB)",
        path.display()
    );
    assert!(!fragstat_testkit::in_ci(), "{msg}");
    eprintln!("SKIPPED (not in CI): {msg}");
    None
}

#[test]
fn reload_swaps_a_good_file_in_and_keeps_the_table_on_a_bad_one() {
    let Some(real) = mmdb() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("countries.mmdb");
    std::fs::write(&path, b"not an mmdb yet").unwrap();
    // (A public address from tests/fixtures/quake3, looked up in the file only.)
    let de = "188.40.71.213:27970";

    let c = Countries::none();
    assert_eq!(c.country_of_addr(de), None);
    // A bad file: refused, naming it; still no table.
    let e = c.reload(&path).unwrap_err();
    assert!(e.to_string().contains("countries.mmdb"), "{e}");
    assert!(!c.has_geoip());
    // The real one, renamed over it: swapped in.
    let tmp = dir.path().join("countries.mmdb.new");
    std::fs::copy(&real, &tmp).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    c.reload(&path).unwrap();
    assert!(c.has_geoip());
    assert_eq!(c.country_of_addr(de).as_deref(), Some("DE"));
    assert!(c.build_epoch().unwrap() > 1_600_000_000);
    // Truncated in place (a copy caught half-way): refused, the table in use stays.
    let bytes = std::fs::read(&real).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert!(c.reload(&path).is_err());
    assert_eq!(c.country_of_addr(de).as_deref(), Some("DE"));
    // Gone: the same.
    std::fs::remove_file(&path).unwrap();
    assert!(c.reload(&path).is_err());
    assert_eq!(c.country_of_addr(de).as_deref(), Some("DE"));
}
