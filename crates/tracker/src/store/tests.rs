//! Unit tests of the storage module.

use super::read::contains_pattern;
use super::*;

#[test]
fn passwords_are_hidden() {
    for (url, shown) in [
        ("postgres://u:pw@h:5432/db", "postgres://u:***@h:5432/db"),
        ("postgres://u:p@w@h/db", "postgres://u:***@h/db"),
        (
            "postgres://u@h/db?password=pw&sslmode=require",
            "postgres://u@h/db?password=***&sslmode=require",
        ),
        (
            "postgres://h/db?user=u&password=pw",
            "postgres://h/db?user=u&password=***",
        ),
        ("postgres://u@h/d:b@x", "postgres://u@h/d:b@x"),
        ("track.db", "track.db"),
    ] {
        assert_eq!(redact(url), shown, "{url}");
    }
}

/// The two backends' migrations are one schema: identical but for the byte-string type.
#[test]
fn migrations_are_the_same_schema() {
    let lite = SQLITE.iter().collect::<Vec<_>>();
    let pg = POSTGRES.iter().collect::<Vec<_>>();
    assert_eq!(lite.len(), pg.len());
    for (a, b) in lite.iter().zip(&pg) {
        assert_eq!(a.version, b.version);
        assert_eq!(a.description, b.description);
        // Comments aside, and BLOB spelled BYTEA.
        let code = |sql: &str| -> Vec<String> {
            sql.lines()
                .map(|l| {
                    l.split("--")
                        .next()
                        .unwrap_or_default()
                        .trim_end()
                        .to_string()
                })
                .filter(|l| !l.is_empty())
                .collect()
        };
        assert_eq!(code(&a.sql.replace("BLOB", "BYTEA")), code(&b.sql));
    }
}

#[test]
fn like_patterns_escape_wildcards() {
    assert_eq!(contains_pattern("A_b%c\\"), "%a\\_b\\%c\\\\%");
    assert_eq!(database_url("x.db"), "sqlite://x.db?mode=rwc");
    assert_eq!(database_url("postgres://h/d"), "postgres://h/d");
}

/// Dialects are stored as their ids and read back; rows from before the per-engine
/// dialects (`quake`, `plain`) read as those, an unknown id as the generic rule.
#[test]
fn dialects_read_back_from_their_ids() {
    use fragstat::core::model::Dialect;
    for d in Dialect::ALL {
        assert_eq!(text_of(b"^^1x".to_vec(), Some(d.id())).dialect(), d);
    }
    assert_eq!(
        text_of(b"x".to_vec(), Some("quake")).dialect(),
        Dialect::Quake
    );
    assert_eq!(
        text_of(b"x".to_vec(), Some("plain")).dialect(),
        Dialect::Plain
    );
    assert_eq!(
        text_of(b"x".to_vec(), Some("klingon")).dialect(),
        Dialect::Quake
    );
    assert_eq!(text_of(b"x".to_vec(), None).dialect(), Dialect::Quake);
    assert_eq!(text_of(b"^^1x".to_vec(), Some("dp")).display(), "^1x");
}
