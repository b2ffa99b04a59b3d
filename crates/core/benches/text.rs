//! Colour-code handling on names as a scan meets them (`cargo bench -p fragstat-core --bench
//! text`): 10,000 names, most without a caret (the borrowed fast path), the rest coloured the
//! ways real servers colour them. Throughput is the names' bytes.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fragstat_core::model::Dialect;
use fragstat_core::text;

/// Names from public captures and fixtures (colours.md §4.2) and plain ones, 7 in 10 plain.
const NAMES: [&[u8]; 20] = [
    b"UnnamedPlayer",
    b"Grunt",
    b"[fs] bot Sarge",
    b"Anarki",
    b"xX_Sniper_Xx",
    b"Visor",
    b"player123",
    b"Doom",
    b"Major",
    b"Hunter",
    b"Bitterman",
    b"Klesk",
    b"Orbb",
    b"Slash",
    b"^w*ES*^3Bro^7chillin",
    b"^9[^1OUT^9LAW^1]^9Ms^1Storm^7",
    b"^x555[^x0BF\xe5\x8a\x9b^x777] ^xBBBIn^1t^7eger",
    b"^Kf^Et^=W^2}{^qJ^*e^:V^K,^*aRa",
    b"^1R^2a^3i^4n^5b^6o^7w",
    b"caf\xe9 ^^ ^4d^5a^4n^5g^4e^5r",
];

fn names() -> Vec<Vec<u8>> {
    (0..10_000)
        .map(|i| NAMES[i % NAMES.len()].to_vec())
        .collect()
}

fn bench(c: &mut Criterion) {
    let names = names();
    let bytes: usize = names.iter().map(Vec::len).sum();
    let mut g = c.benchmark_group("text");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("quake/strip_colors_into", |b| {
        let mut out = Vec::with_capacity(bytes);
        b.iter(|| {
            out.clear();
            for n in &names {
                text::strip_colors_into(black_box(n), &mut out);
            }
            black_box(out.len())
        })
    });
    g.bench_function("quake/display_cow", |b| {
        b.iter(|| {
            names
                .iter()
                .map(|n| text::display_cow(black_box(n)).len())
                .sum::<usize>()
        })
    });
    g.bench_function("quake/runs", |b| {
        b.iter(|| {
            names
                .iter()
                .map(|n| text::runs(black_box(n)).len())
                .sum::<usize>()
        })
    });
    g.bench_function("quake/to_ansi", |b| {
        b.iter(|| {
            names
                .iter()
                .map(|n| text::to_ansi(black_box(n)).len())
                .sum::<usize>()
        })
    });
    // The per-engine dialects (since the dialects came in; no "before" for these).
    for d in [
        Dialect::IdTech3,
        Dialect::DarkPlaces,
        Dialect::Daemon,
        Dialect::Quake4,
    ] {
        g.bench_function(format!("{d}/strip_into"), |b| {
            let mut out = Vec::with_capacity(bytes);
            b.iter(|| {
                out.clear();
                for n in &names {
                    d.strip_into(black_box(n), &mut out);
                }
                black_box(out.len())
            })
        });
        g.bench_function(format!("{d}/display_cow"), |b| {
            b.iter(|| {
                names
                    .iter()
                    .map(|n| d.display_cow(black_box(n)).len())
                    .sum::<usize>()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
