use super::*;

#[test]
fn arrays_blocks_and_counts_name_the_field_at_its_start() {
    let mut r = Reader::new(b"\x01\x02\x03\x04\x05\x06");
    assert_eq!(r.array::<4>("ip").unwrap(), [1, 2, 3, 4]);
    let e = r.array::<4>("port").unwrap_err();
    assert_eq!(
        (e.kind(), e.field(), e.offset()),
        ("truncated", Some("port"), 4)
    );
    let mut r = Reader::with_base(b"ab\x03xyzq", 10);
    r.take("head", 2).unwrap();
    let n = r.count_u8("len", 8).unwrap();
    let mut block = r.sub("block", n).unwrap();
    assert_eq!(block.offset(), 13);
    assert_eq!(block.take_rest(), b"xyz");
    assert!(block.u8("past the block").is_err());
    assert_eq!(r.rest(), b"q");
    let e = Reader::with_base(b"\x10\x00", 5)
        .count_u16_le("n", 8)
        .unwrap_err();
    assert_eq!((e.kind(), e.offset()), ("too_many", 5));
    assert_eq!(Reader::new(b"\x07\0\0\0").count_u32_le("n", 8).unwrap(), 7);
    let mut r = Reader::new(b"x-3\0");
    r.take("x", 1).unwrap();
    let e = r
        .non_negative("num_players", Reader::decimal_cstr)
        .unwrap_err();
    assert_eq!(
        (e.kind(), e.field(), e.offset()),
        ("invalid", Some("num_players"), 1)
    );
}

#[test]
fn varints_round_trip_and_refuse_overlong() {
    for v in [
        0,
        1,
        63,
        64,
        -1,
        -64,
        -65,
        1000,
        i32::MAX,
        i32::MIN,
        123_456_789,
    ] {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        let mut r = Reader::new(&out);
        assert_eq!(r.varint("v").unwrap(), v, "{out:02x?}");
        assert!(r.is_empty());
    }
    let err = Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01])
        .varint("v")
        .unwrap_err();
    assert_eq!(err.kind(), "invalid");
    let err = Reader::new(&[0x80, 0xff, 0xff, 0xff, 0x7f])
        .varint("v")
        .unwrap_err();
    assert_eq!(err.kind(), "invalid", "beyond 32 bits: {err}");
    let err = Reader::with_base(&[0x80], 7).varint("v").unwrap_err();
    assert_eq!((err.kind(), err.offset()), ("truncated", 7));
}

#[test]
fn fixed_width_and_strings() {
    let mut r = Reader::with_base(b"\x01\x00\x00\x00\x3f\x80\x00\x00ab\0cd", 10);
    assert_eq!(r.u32_le("a").unwrap(), 1);
    assert_eq!(r.f32_be("b").unwrap(), 1.0);
    assert_eq!(r.offset(), 18);
    assert_eq!(r.cstr("s").unwrap(), b"ab");
    let e = r.cstr("x").unwrap_err();
    assert_eq!(
        (e.kind(), e.field(), e.offset()),
        ("missing", Some("x"), 23)
    );
    let e = r.u32_le("y").unwrap_err();
    assert_eq!(
        e.to_string(),
        "truncated y at offset 21: needed 4 bytes, 2 left"
    );
}

#[test]
fn positions_are_every_match_in_order() {
    // Haystacks of every length up to 40 over bytes next to the needle (a borrow between
    // bytes would report a neighbour), at every needle value.
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    for needle in 0..=255u8 {
        let near = [
            needle,
            needle ^ 1,
            needle.wrapping_add(1),
            needle.wrapping_sub(1),
            needle ^ 0x80,
            0,
            0xff,
        ];
        for len in 0..=40 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let hay: Vec<u8> = (0..len)
                .map(|i| near[((seed >> (i % 60)) as usize) % near.len()])
                .collect();
            let want: Vec<usize> = hay
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == needle)
                .map(|(i, _)| i)
                .collect();
            assert_eq!(
                positions(&hay, needle).collect::<Vec<_>>(),
                want,
                "{hay:?} {needle}"
            );
        }
    }
}

#[test]
fn decimal_and_bounds() {
    for bad in [
        &b"1a"[..],
        b"a1",
        b"1:",
        b"/1",
        b"-",
        b"+",
        b"12 ",
        b" 12",
        b"1-2",
        b"\xff",
    ] {
        assert!(decimal_i32(bad, "n", 0).is_err(), "{bad:?}");
    }
    assert_eq!(decimal_i32(b"+2147483647", "n", 0).unwrap(), i32::MAX);
    assert_eq!(decimal_i32(b"-2147483648", "n", 0).unwrap(), i32::MIN);
    assert!(decimal_i32(b"2147483648", "n", 0).is_err());
    assert!(decimal_i32(b"9999999999", "n", 0).is_err());
    assert_eq!(decimal_i32(b"0000000007", "n", 0).unwrap(), 7);
    assert_eq!(decimal_i32(b"-12", "n", 0).unwrap(), -12);
    assert!(decimal_i32(b"99999999999", "n", 0).is_err());
    assert!(decimal_i32(b"", "n", 0).is_err());
    let e = bounded(70, 64, "players", 5).unwrap_err();
    assert_eq!(
        e.to_string(),
        "too many players at offset 5: 70, at most 64"
    );
}
