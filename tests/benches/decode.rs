//! Decoder throughput over the whole fixture corpus, every family, through the registry
//! (`game.decode(bytes)`: the datagram decoded and mapped to the shared record), as
//! `cargo xtask bench decode` runs it. One benchmark per family decodes every
//! `tests/fixtures/<family>/ok/*.bin` once per iteration; throughput is the corpus's bytes.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragstat_testkit::fixtures::{cases, root, Kind};

fn bench(c: &mut Criterion) {
    let all = cases(&root()).expect("fixture corpus");
    let mut families: Vec<String> = all.iter().map(|c| c.family.clone()).collect();
    families.dedup();
    let mut g = c.benchmark_group("corpus");
    for family in families {
        // (game, datagram) of every ok/ fixture of the family; the game is the JSON's.
        let datagrams: Vec<(fragstat::GameRef, Vec<u8>)> = all
            .iter()
            .filter(|c| c.family == family && c.kind == Kind::Ok)
            .map(|c| {
                let meta: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&c.json).expect("json")).expect("json");
                let id = meta["game"].as_str().expect("game id");
                let game = fragstat::game(id).expect("game in the registry");
                (game, std::fs::read(&c.bin).expect("bin"))
            })
            .collect();
        let bytes: usize = datagrams.iter().map(|(_, d)| d.len()).sum();
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function(
            format!("{family} ({} datagrams, {bytes} bytes)", datagrams.len()),
            |b| {
                b.iter(|| {
                    for (game, d) in &datagrams {
                        black_box(game.decode(black_box(d)).expect("ok fixture decodes"));
                    }
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
