//! The seeded mutation pass every family runs with its normal tests: each input of a corpus
//! (the family's fixtures plus whatever its test adds) mutated thousands of times — bit
//! flips, truncation, inserted and removed bytes, splices with other inputs, inserted
//! fragments of the family's own format — and handed to the family's fuzz oracle (the same
//! one its cargo-fuzz target runs). Deterministic: a seed gives the same inputs every run.

use std::path::Path;

/// What a family adds to the generic mutations.
#[derive(Clone, Copy)]
pub struct Mutator<'a> {
    /// Bytes an insertion picks from: the format's separators and terminators.
    pub bytes: &'a [u8],
    /// Fragments of the format a splice inserts at a random place.
    pub pieces: &'a [&'a [u8]],
    /// A targeted change of the family's own (e.g. another protocol byte at a fixed
    /// offset), or `None`.
    pub special: Option<fn(&mut fastrand::Rng, &mut Vec<u8>)>,
}

impl std::fmt::Debug for Mutator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mutator")
            .field("bytes", &self.bytes)
            .field("pieces", &self.pieces.len())
            .field("special", &self.special.is_some())
            .finish()
    }
}

impl Mutator<'_> {
    /// One to four mutations of `input`; `corpus` supplies the splices.
    pub fn mutate(&self, rng: &mut fastrand::Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
        let mut d = input.to_vec();
        for _ in 0..rng.usize(1..5) {
            let len = d.len().max(1);
            match rng.u8(0..8) {
                0 => d.truncate(rng.usize(0..len)),
                1 if !d.is_empty() => {
                    let i = rng.usize(0..d.len());
                    d[i] ^= 1 << rng.u8(0..8);
                }
                2 if !self.bytes.is_empty() => {
                    let i = rng.usize(0..=d.len());
                    d.insert(i, self.bytes[rng.usize(0..self.bytes.len())]);
                }
                3 if !d.is_empty() => {
                    let i = rng.usize(0..d.len());
                    d.remove(i);
                }
                4 if !corpus.is_empty() => {
                    let other = &corpus[rng.usize(0..corpus.len())];
                    let cut = rng.usize(0..=d.len());
                    let from = rng.usize(0..=other.len());
                    d.truncate(cut);
                    d.extend_from_slice(&other[from..]);
                }
                5 if !self.pieces.is_empty() => {
                    let i = rng.usize(0..=d.len());
                    let piece = self.pieces[rng.usize(0..self.pieces.len())];
                    d.splice(i..i, piece.iter().copied());
                }
                6 if self.special.is_some() => {
                    if let Some(f) = self.special {
                        f(rng, &mut d);
                    }
                }
                _ => {
                    if let Some(b) = d.last().copied() {
                        d.push(b);
                    }
                }
            }
        }
        d
    }

    /// Runs `check` on every input of `corpus` as it is and on `per_input` mutations of it,
    /// from `seed`. `check` is the family's oracle: it panics on what must not happen.
    pub fn run(
        &self,
        seed: u64,
        corpus: &[Vec<u8>],
        per_input: usize,
        mut check: impl FnMut(&[u8]),
    ) {
        assert!(!corpus.is_empty(), "an empty corpus mutates nothing");
        let mut rng = fastrand::Rng::with_seed(seed);
        for input in corpus {
            check(input);
            for _ in 0..per_input {
                let m = self.mutate(&mut rng, input, corpus);
                check(&m);
            }
        }
    }
}

/// Every datagram of a family's fixture tree: `tests/fixtures/<family>/{ok,err}/*.bin`, in
/// name order.
///
/// # Panics
/// When the tree cannot be read.
pub fn fixture_corpus(family: &str) -> Vec<Vec<u8>> {
    let root = crate::repo_root().join("tests/fixtures").join(family);
    let mut paths = Vec::new();
    for dir in [root.join("ok"), root.join("err")] {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        paths.extend(
            entries
                .map(|e| e.expect("dir entry").path())
                .filter(|p| p.extension().is_some_and(|x| x == "bin")),
        );
    }
    paths.sort();
    paths.iter().map(|p| read(p)).collect()
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_mutations_and_every_kind_happens() {
        let m = Mutator {
            bytes: b"\\",
            pieces: &[b"PIECE"],
            special: Some(|_, d| d.insert(0, b'!')),
        };
        let corpus = vec![b"abcdefgh".to_vec(), b"0123456789".to_vec()];
        let run = |seed| {
            let mut out = Vec::new();
            m.run(seed, &corpus, 300, |d| out.push(d.to_vec()));
            out
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        assert_eq!(a.len(), 2 * 301);
        assert!(a.iter().any(|d| d.windows(5).any(|w| w == b"PIECE")));
        assert!(a.iter().any(|d| d.first() == Some(&b'!')));
        assert!(a.iter().any(|d| d.contains(&b'\\')));
        assert!(a.iter().any(|d| d.is_empty()));
        assert!(a.iter().any(|d| d.len() > 12));
    }

    #[test]
    fn fixture_corpora_are_read_in_order() {
        let c = fixture_corpus("quake3");
        assert!(c.len() >= 20);
        assert_eq!(c, fixture_corpus("quake3"));
    }
}
