//! Decoder throughput on real captures (`cargo xtask bench decode`).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragstat_etqw::{decode, feed, server_info, Packet};

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/etqw/ok")
        .join(name);
    std::fs::read(path).expect("fixture")
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    for name in [
        "etqw-15-infoex-30bots-slotgap.bin",
        "etqw-14-info-22players-ranked-clantags.bin",
    ] {
        let bytes = fixture(name);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(name.trim_end_matches(".bin"), |b| {
            b.iter(|| decode(black_box(&bytes)).unwrap())
        });
        g.bench_function(format!("{}-record", name.trim_end_matches(".bin")), |b| {
            b.iter(|| match decode(black_box(&bytes)).unwrap() {
                Packet::InfoResponse(r) => server_info(&r, bytes.len()),
                _ => unreachable!(),
            })
        });
    }
    let body: String = (0..10_000u32)
        .map(|i| format!("10.{}.{}.{}:27733\n", i >> 16, (i >> 8) & 255, i & 255))
        .collect();
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("feed-10000-lines", |b| {
        b.iter(|| feed::parse(black_box(body.as_bytes())).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
