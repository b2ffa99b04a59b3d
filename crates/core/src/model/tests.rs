//! The model's unit tests.

use super::*;

#[derive(Debug, PartialEq, Serialize)]
struct A(u32);
#[derive(Debug, PartialEq, Serialize)]
struct B(u32);

#[test]
fn extra_compares_and_downcasts() {
    let mut x = ServerInfo::default();
    let mut y = ServerInfo::default();
    x.set_extra(A(1));
    y.set_extra(A(1));
    assert_eq!(x, y);
    y.set_extra(B(1));
    assert_ne!(x, y);
    assert_eq!(x.extra_as::<A>(), Some(&A(1)));
    assert_eq!(x.extra_as::<B>(), None);
}

#[test]
fn rules_keep_order_and_duplicates() {
    let mut r: Rules = [("a", "1"), ("b", "2"), ("a", "3")].into_iter().collect();
    assert_eq!(r.get("a"), Some(&b"1"[..]));
    assert_eq!(r.get_int(&["x", "b"]), Some(2));
    r.remove(b"a");
    assert_eq!(r, [("b", "2")].into_iter().collect());
}

/// Each key and value is written as `text::decode_cow` of its own bytes, even where the
/// whole buffer is valid UTF-8 but a span splits a character (`é` = C3 A9 cut between a
/// value and the next key), which the one-check-per-buffer shortcut must not borrow.
#[test]
fn rules_serialize_each_span_as_its_own_bytes() {
    let cases: [&[(&[u8], &[u8])]; 3] = [
        &[(b"k", b"v\xc3"), (b"\xa9k", b"caf\xc3\xa9")],
        &[(b"name", b"caf\xc3\xa9"), (b"x", b"\xe9t\xe9")],
        &[(b"", b""), (b"sv_hostname", b"^1plain ascii")],
    ];
    for pairs in cases {
        let rules: Rules = pairs.iter().copied().collect();
        let expected: serde_json::Map<String, serde_json::Value> = pairs
            .iter()
            .map(|(k, v)| (text::decode_cow(k).into_owned(), text::decode_cow(v).into()))
            .collect();
        assert_eq!(
            serde_json::to_value(&rules).unwrap(),
            serde_json::Value::Object(expected)
        );
    }
    let split: Rules = [(&b"k"[..], &b"v\xc3"[..]), (b"\xa9k", b"w")]
        .into_iter()
        .collect();
    assert_eq!(
        serde_json::to_string(&split).unwrap(),
        r#"{"k":"vÃ","©k":"w"}"#
    );
}
