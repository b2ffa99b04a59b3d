//! The fixture tree: `tests/fixtures/<family>/{ok,err}/<case>.{bin,json,decoded}`
//! (tests/fixtures/README.md). Listing only; the runner in `tests/tests/fixtures.rs` decodes.

use std::path::{Path, PathBuf};

/// The two folders every family has.
pub const KINDS: [Kind; 2] = [Kind::Ok, Kind::Err];

/// Which folder a case is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `ok/`: real replies that must decode.
    Ok,
    /// `err/`: malformed or foreign datagrams, each with the error or the flags it must give.
    Err,
}

impl Kind {
    /// The folder name.
    pub fn dir(self) -> &'static str {
        match self {
            Kind::Ok => "ok",
            Kind::Err => "err",
        }
    }
}

/// One fixture: a datagram and its metadata.
#[derive(Debug, Clone)]
pub struct Case {
    /// The family folder (`quake3`).
    pub family: String,
    /// `ok` or `err`.
    pub kind: Kind,
    /// The file stem.
    pub name: String,
    /// The datagram (`<name>.bin`).
    pub bin: PathBuf,
    /// Provenance and expectation (`<name>.json`).
    pub json: PathBuf,
    /// The full-decode snapshot (`<name>.decoded`).
    pub decoded: PathBuf,
}

impl Case {
    /// `family/kind/name`, for messages.
    pub fn label(&self) -> String {
        format!("{}/{}/{}", self.family, self.kind.dir(), self.name)
    }
}

/// `tests/fixtures`.
pub fn root() -> PathBuf {
    crate::repo_root().join("tests/fixtures")
}

/// The family folders under `root`, sorted.
pub fn families(root: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(root).map_err(|e| format!("{}: {e}", root.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", root.display()))?;
        if entry.path().is_dir() {
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(format!("no family folders in {}", root.display()));
    }
    Ok(out)
}

/// Every `<family>/{ok,err}` folder under `root` (for fuzz corpora), sorted.
pub fn case_dirs(root: &Path) -> Result<Vec<(String, Kind, PathBuf)>, String> {
    let mut out = Vec::new();
    for family in families(root)? {
        for kind in KINDS {
            out.push((family.clone(), kind, root.join(&family).join(kind.dir())));
        }
    }
    Ok(out)
}

/// Every case under `root`, sorted by family, kind and name; or every problem with the tree:
/// a family without an `ok/` or `err/` folder, an empty folder, a file other than a case's
/// `.bin`, `.json` and `.decoded` (a `.decoded` may be missing: the runner writes it with
/// `UPDATE_EXPECT=1`), a stray file in a family folder.
pub fn cases(root: &Path) -> Result<Vec<Case>, Vec<String>> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let families = families(root).map_err(|e| vec![e])?;
    for family in families {
        let fdir = root.join(&family);
        match std::fs::read_dir(&fdir) {
            Ok(entries) => {
                for e in entries.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if !KINDS.iter().any(|k| k.dir() == name) {
                        problems.push(format!(
                            "{}: only ok/ and err/ belong in a family folder",
                            e.path().display()
                        ));
                    }
                }
            }
            Err(e) => problems.push(format!("{}: {e}", fdir.display())),
        }
        for kind in KINDS {
            let dir = fdir.join(kind.dir());
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) => {
                    problems.push(format!(
                        "{}: {e} (every family has ok/ and err/)",
                        dir.display()
                    ));
                    continue;
                }
            };
            let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            files.sort();
            let mut found = 0;
            for path in &files {
                let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
                    problems.push(format!("{}: no file name", path.display()));
                    continue;
                };
                match ext {
                    "bin" => {
                        let json = path.with_extension("json");
                        if !json.is_file() {
                            problems.push(format!("{}: no {stem}.json beside it", path.display()));
                            continue;
                        }
                        found += 1;
                        out.push(Case {
                            family: family.clone(),
                            kind,
                            name: stem,
                            bin: path.clone(),
                            json,
                            decoded: path.with_extension("decoded"),
                        });
                    }
                    "json" | "decoded" => {
                        if !path.with_extension("bin").is_file() {
                            problems.push(format!("{}: no {stem}.bin beside it", path.display()));
                        }
                    }
                    _ => problems.push(format!(
                        "{}: not a fixture file (.bin, .json, .decoded)",
                        path.display()
                    )),
                }
            }
            if found == 0 {
                problems.push(format!("{}: no cases", dir.display()));
            }
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// Every datagram of `tests/fixtures/<family>/<kind>` (`kind`: `ok` or `err`), sorted by
/// name, with its path: for a family's own tests over its fixtures.
///
/// # Panics
/// When the folder cannot be read or holds no `.bin`.
pub fn datagrams(family: &str, kind: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = root().join(family).join(kind);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no cases in {}", dir.display());
    paths
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, bytes)
        })
        .collect()
}

/// The `.json` beside a fixture's `.bin`, parsed.
///
/// # Panics
/// When it is missing or not JSON.
pub fn metadata(bin: &Path) -> serde_json::Value {
    let path = bin.with_extension("json");
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for f in files {
            let p = dir.path().join(f);
            if f.ends_with('/') {
                std::fs::create_dir_all(&p).expect("mkdir");
            } else {
                std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
                std::fs::write(&p, b"x").expect("write");
            }
        }
        dir
    }

    #[test]
    fn lists_cases_and_refuses_broken_trees() {
        let t = tree(&[
            "f/ok/a.bin",
            "f/ok/a.json",
            "f/ok/a.decoded",
            "f/err/b.bin",
            "f/err/b.json",
        ]);
        let found = cases(t.path()).expect("a good tree");
        let labels: Vec<String> = found.iter().map(Case::label).collect();
        assert_eq!(labels, ["f/ok/a", "f/err/b"]);

        let t = tree(&["f/ok/a.bin", "f/ok/a.json", "f/err/"]);
        let e = cases(t.path()).expect_err("empty err/");
        assert!(e.len() == 1 && e[0].ends_with("no cases"), "{e:?}");

        let t = tree(&[
            "f/ok/a.bin",
            "f/err/b.bin",
            "f/err/b.json",
            "f/err/c.decoded",
            "f/x.bin",
        ]);
        let e = cases(t.path()).expect_err("stray files");
        assert_eq!(e.len(), 4, "{e:?}");

        let t = tree(&["f/ok/a.bin", "f/ok/a.json"]);
        let e = cases(t.path()).expect_err("no err/");
        assert!(e[0].contains("every family has ok/ and err/"), "{e:?}");

        let t = tree(&[]);
        assert!(cases(t.path()).is_err(), "no family at all");
    }
}
