//! Decoder throughput on real captures (`cargo xtask bench decode`).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragstat_idtech4::{decode_as, encode_server_list, server_info, Idtech4Game, Packet};

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/idtech4/ok")
        .join(name);
    std::fs::read(path).expect("fixture")
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    for (name, game) in [
        (
            "idtech4-quake4-142-info-7players-clantags-latin1.bin",
            Idtech4Game::Quake4,
        ),
        ("doom3-10-seed-int64-7players.bin", Idtech4Game::Doom3),
    ] {
        let bytes = fixture(name);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(name.trim_end_matches(".bin"), |b| {
            b.iter(|| decode_as(game, black_box(&bytes)).unwrap())
        });
        g.bench_function(format!("{}-record", name.trim_end_matches(".bin")), |b| {
            b.iter(|| match decode_as(game, black_box(&bytes)).unwrap() {
                Packet::InfoResponse(r) => server_info(game, &r),
                _ => unreachable!(),
            })
        });
    }
    let servers: Vec<std::net::SocketAddrV4> = (0..231u16)
        .map(|i| std::net::SocketAddrV4::new([10, 0, (i >> 8) as u8, i as u8].into(), 27666))
        .collect();
    let list = encode_server_list(&servers).remove(0);
    g.throughput(Throughput::Bytes(list.len() as u64));
    g.bench_function("servers-231", |b| {
        b.iter(|| decode_as(Idtech4Game::Doom3, black_box(&list)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
