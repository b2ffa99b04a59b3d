//! Decoder throughput on real captures (`cargo xtask bench decode`).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragstat_quake3_oob::{decode, encode_server_list, EotStyle};

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/quake3/ok")
        .join(name);
    std::fs::read(path).expect("fixture")
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    for name in [
        "q3-status-et-jaymod-41players.bin",
        "q3-info-cpma-v2c.bin",
        "q3-status-ioq3-cpma-fsmanifest-newlines.bin",
    ] {
        let bytes = fixture(name);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(name.trim_end_matches(".bin"), |b| {
            b.iter(|| decode(black_box(&bytes)).unwrap())
        });
    }
    let servers: Vec<std::net::SocketAddr> = (0..196u16)
        .map(|i| std::net::SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 27960)))
        .collect();
    let list = encode_server_list(&servers, false, EotStyle::LastPacket, 1400).remove(0);
    g.throughput(Throughput::Bytes(list.len() as u64));
    g.bench_function("getserversResponse-196", |b| {
        b.iter(|| decode(black_box(&list)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
