use std::error::Error as _;
use std::sync::Arc;

use super::*;

fn decode_error() -> DecodeError {
    DecodeError::Invalid {
        field: "clients",
        offset: 12,
        reason: "not a number",
    }
}

#[test]
fn query_errors_map_one_to_one() {
    match Error::from(QueryError::Decode(decode_error())) {
        Error::Decode(got) => {
            assert_eq!(got.field(), Some("clients"));
            assert_eq!(got.offset(), 12);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        Error::from(QueryError::Timeout { attempts: 3 }),
        Error::Timeout { attempts: 3 }
    ));
    assert!(matches!(Error::from(QueryError::Unreachable), Error::Down));
    let e = Error::from(QueryError::Exceeded {
        limit: LimitKind::Bytes,
        max: 10,
    });
    assert!(matches!(
        e,
        Error::Exceeded(Limit {
            kind: LimitKind::Bytes,
            max: 10
        })
    ));
    assert_eq!(
        e.to_string(),
        "exceeded the per-query bytes limit (10 bytes)"
    );
    assert_eq!(
        Error::from(QueryError::Timeout { attempts: 1 }).to_string(),
        "timed out after 1 attempt"
    );
}

/// The decode error is the source of both layers: a user walking `source()` reaches the
/// codec's error, typed, from the engine's and from the facade's.
#[test]
fn decode_errors_keep_their_source_chain() {
    let q = QueryError::Decode(decode_error());
    let src = q.source().and_then(|s| s.downcast_ref::<DecodeError>());
    assert_eq!(src, Some(&decode_error()));
    let e = Error::from(q);
    let src = e.source().and_then(|s| s.downcast_ref::<DecodeError>());
    assert_eq!(src, Some(&decode_error()));
    let enc = Error::from(QueryError::Encode(fragstat_core::EncodeError::Invalid("x")));
    assert!(enc.source().is_some());
}

/// A resolver failure keeps the system's error as the source of the source; an address that
/// cannot be read, or port 0, is the caller's mistake: `InvalidInput`, not `Resolve`.
#[test]
fn resolve_errors_keep_the_resolvers_error_and_bad_ports_are_invalid_input() {
    let io = std::io::Error::other("no such host (test)");
    let failed = ResolveError::Lookup {
        host: "example.invalid".into(),
        source: Arc::new(io),
    };
    let e = resolved("example.invalid:27960", Err(failed)).unwrap_err();
    assert!(matches!(&e, Error::Resolve { target, .. } if target == "example.invalid:27960"));
    let inner = e.source().and_then(|s| s.source()).map(|s| s.to_string());
    assert_eq!(inner.as_deref(), Some("no such host (test)"));

    let bad = fragstat_core::resolve::split("127.0.0.1:99999", 1).unwrap_err();
    let e = resolved("127.0.0.1:99999", Err(bad.into())).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.contains("bad port")),
        "{e:?}"
    );
    let zero = "127.0.0.1:0".parse().unwrap();
    let e = resolved("127.0.0.1:0", Ok(zero)).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.contains("port 0")),
        "{e:?}"
    );
}

/// Master-query refusals stay typed: an unencodable request is `Encode` (with its source).
#[test]
fn master_query_errors_are_typed() {
    let e = Error::from(MasterQueryError::Encode(
        fragstat_core::EncodeError::Invalid("x"),
    ));
    assert!(matches!(e, Error::Encode(_)));
    let e = Error::from(MasterQueryError::option("q3", "no such form"));
    assert!(matches!(&e, Error::InvalidInput(m) if m == "q3: no such form"));
}

/// docs/library.md's error table has one row per variant of [`Error`], in the enum's order:
/// a variant added without a row (or a row for a variant that is gone) fails here.
#[test]
fn the_guides_error_table_lists_every_variant() {
    use strum::VariantNames;
    let guide = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/library.md");
    let text = std::fs::read_to_string(guide).unwrap();
    let section = text
        .split("\n## Errors\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_default();
    let rows: Vec<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .map(|l| {
            let end = l.find(|c: char| !c.is_ascii_alphanumeric() && c != '_');
            l.get(..end.unwrap_or(l.len())).unwrap_or_default()
        })
        .collect();
    assert_eq!(
        rows,
        Error::VARIANTS,
        "docs/library.md (Errors) vs fragstat::Error"
    );
}

/// A copy keeps the variant and its sources (a shared result handed to several callers).
#[test]
fn copies_keep_variants_and_sources() {
    let e = resolved(
        "h:1",
        Err(ResolveError::Lookup {
            host: "h".into(),
            source: Arc::new(std::io::Error::other("boom")),
        }),
    )
    .unwrap_err();
    let c = e.clone();
    assert!(matches!(&c, Error::Resolve { target, .. } if target == "h:1"));
    assert_eq!(c.to_string(), e.to_string());
    let inner = c.source().and_then(|s| s.source()).map(|s| s.to_string());
    assert_eq!(inner.as_deref(), Some("boom"));
    let io = Error::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, "bad"));
    assert!(matches!(io.clone(), Error::Io(e) if e.kind() == std::io::ErrorKind::InvalidInput));
}
