//! CoD4X's TCP list stream as `CL_GetServersThread` reads it (CoD4x_Client_pub
//! `src/cl_main.c:1382-1533` @`b4524803`; research notes §1.3).

use super::*;

fn a(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

const HEAD: &[u8] = b"\xff\xff\xff\xffgetserversResponse";

#[test]
fn the_request_as_the_client_sends_it() {
    // `"\xff\xff\xff\xffgetservers %d %s"` with PROTOCOL_VERSION 21 and the keywords each
    // followed by a space (`CL_GlobalServers_f`), sent with its NUL (`strlen + 1`).
    assert_eq!(
        request(PROTOCOL, &["full", "empty"]),
        b"\xff\xff\xff\xffgetservers 21 full empty \0"
    );
}

/// The form pyq3serverlist and GameserverLister read (`00 00 00 00 04` + IPv4 + port, a
/// fixed 12-byte stride): four opaque bytes and the address type 4.
#[test]
fn the_ipv4_only_form_the_python_listers_read() {
    let bytes = [
        HEAD,
        b"\\\0\0\0\0\x04\xc0\x00\x02\x01\x71\x20",
        b"\\\0\0\0\0\x04\xc0\x00\x02\x02\x71\x21",
        b"\\EOF",
    ]
    .concat();
    crate::fuzzing::check_cod4x_stream(&bytes);
    let l = decode_stream(&bytes).unwrap();
    assert_eq!((l.end, l.stopped.as_ref()), (Some(End::Eof), None));
    let e = l.master_entries();
    assert_eq!(e.len(), 2);
    assert_eq!(
        (e[0].addr, e[1].addr),
        (a("192.0.2.1:28960"), a("192.0.2.2:28961"))
    );
    assert!(e[0].addresses.is_empty());
}

/// An entry of up to three addresses, IPv6 (type 5: 16 + 2 bytes), and `\EOT` with NULs
/// after it; the header only once, whatever TCP's segments were.
#[test]
fn ipv6_and_several_addresses_in_one_entry() {
    let v6 = b"\x05\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x09\x71\x22";
    let bytes = [
        HEAD,
        b"\n\0",
        b"\\\x01\x02\x03\x04\x04\xc0\x00\x02\x01\x71\x20",
        v6,
        b"\\\0\0\0\0",
        v6,
        b"\\EOT\0\0\0",
    ]
    .concat();
    crate::fuzzing::check_cod4x_stream(&bytes);
    let l = decode_stream(&bytes).unwrap();
    assert_eq!(l.prefix, b"\n\0");
    assert_eq!(l.entries[0].tag, [1, 2, 3, 4]);
    assert_eq!(
        (l.end, l.trailing.as_slice(), l.stopped.as_ref()),
        (Some(End::Eot), &b"\0\0\0"[..], None)
    );
    let e = l.master_entries();
    assert_eq!(e.len(), 2);
    // The client keeps an entry's IPv4 address (`if(addresses[n].type != NA_IP)`).
    assert_eq!(e[0].addr, a("192.0.2.1:28960"));
    assert_eq!(e[0].addresses, ["192.0.2.1:28960", "[2001:db8::9]:28962"]);
    assert_eq!(e[1].addr, a("[2001:db8::9]:28962"));
}

#[test]
fn a_malformed_entry_stops_reading_and_keeps_what_came() {
    let bytes = [
        HEAD,
        b"\\\0\0\0\0\x04\xc0\x00\x02\x01\x71\x20",
        b"\\\0\0\0\0\x07\xc0\x00\x02\x02\x71\x21",
    ]
    .concat();
    let l = decode_stream(&bytes).unwrap();
    assert_eq!(l.entries.len(), 1);
    let e = l.stopped.unwrap();
    assert_eq!((e.field(), e.offset()), (Some("address type"), 39));
    // Four addresses: no `\` after the third.
    let v4 = b"\x04\xc0\x00\x02\x01\x71\x20";
    let bytes = [HEAD, b"\\\0\0\0\0", v4, v4, v4, v4].concat();
    let l = decode_stream(&bytes).unwrap();
    assert_eq!((l.entries.len(), l.entries[0].addrs.len()), (1, 3));
    assert_eq!(l.stopped.unwrap().field(), Some("entry"));
    // Truncated in an address.
    let l = decode_stream(&[HEAD, b"\\\0\0\0\0\x04\xc0\x00"].concat()).unwrap();
    assert!(matches!(l.stopped, Some(DecodeError::Truncated { .. })));
    // Not a list at all.
    assert!(decode_stream(b"\xff\xff\xff\xffgetserversRespons").is_err());
    assert!(decode_stream(b"HTTP/1.1 200 OK\r\n\r\n").is_err());
}

#[test]
fn render_reads_back() {
    let entries = vec![
        Cod4xEntry::new(vec![a("192.0.2.1:28960"), a("[2001:db8::1]:28960")]),
        Cod4xEntry::new(vec![a("[::1]:28961")]),
    ];
    let bytes = render(entries.clone());
    assert!(bytes.ends_with(b"\\EOF"));
    assert_eq!(decode_stream(&bytes).unwrap().entries, entries);
    let parsed = parse_list(&bytes).unwrap();
    assert_eq!(parsed.servers.len(), 2);
    assert!(parsed.warnings.is_empty());
}
