//! `fragstat decode GAME FILE...`: saved datagrams as JSON — one datagram, the parts of one
//! multi-datagram reply, or a saved HTTP master list.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use fragstat::core::registry::{Decoded, DecodedJson, MasterQuery};

use crate::{lookup_game, output};

fn read(file: &Path) -> anyhow::Result<Vec<u8>> {
    if file == Path::new("-") {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .context("reading standard input")?;
        Ok(b)
    } else {
        std::fs::read(file).with_context(|| format!("reading {}", file.display()))
    }
}

/// What the HTTP list parser skipped, as a list's details.
#[derive(Debug, PartialEq, serde::Serialize)]
struct ListDetails {
    /// A saved HTTP list body (not a datagram).
    http: bool,
    /// Entries skipped, each saying why.
    warnings: Vec<String>,
}

pub fn decode_files(game: &str, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let game = match lookup_game(game) {
        Ok(g) => g,
        Err(code) => return Ok(code),
    };
    let bodies: Vec<Vec<u8>> = files.iter().map(|f| read(f)).collect::<Result<_, _>>()?;
    let names = files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    // A saved HTTP list (DDNet's servers.json, the ETQW feed) is text, where every datagram
    // of these games starts with 0xFF.
    if let (Ok(MasterQuery::Http { parse, .. }), [body]) =
        (game.master_query(&Default::default()), bodies.as_slice())
    {
        if body.first().is_some_and(|b| *b != 0xFF) {
            return match parse(body) {
                Ok(list) => {
                    let decoded = Decoded::Servers {
                        servers: list.servers,
                        details: Some(Arc::new(ListDetails {
                            http: true,
                            warnings: list.warnings,
                        })),
                    };
                    print(game.id(), &decoded)
                }
                Err(e) => {
                    eprintln!("error: {names}: {e}");
                    Ok(ExitCode::from(1))
                }
            };
        }
    }
    let parts: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
    match game.decode_parts(&parts) {
        Ok(d) => print(game.id(), &d),
        // Not the parts of one reply: several replies (a getinfo and a getstatus reply, say),
        // each decoded on its own, in a JSON array.
        Err(_) if bodies.len() > 1 => each(game.id(), &game, files, &bodies),
        Err(e) => {
            eprintln!("error: {names}: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

/// Each file decoded on its own: a JSON array of what `decode` prints for one, each with
/// its `file`.
fn each(
    id: &str,
    game: &fragstat::GameRef,
    files: &[PathBuf],
    bodies: &[Vec<u8>],
) -> anyhow::Result<ExitCode> {
    let mut docs = Vec::with_capacity(bodies.len());
    for (f, body) in files.iter().zip(bodies) {
        match game.decode_parts(&[body.as_slice()]) {
            Ok(decoded) => {
                let mut v = serde_json::to_value(DecodedJson {
                    game: id,
                    decoded: &decoded,
                })?;
                if let Some(o) = v.as_object_mut() {
                    o.insert("file".into(), f.display().to_string().into());
                }
                docs.push(v);
            }
            Err(e) => {
                eprintln!(
                    "error: {}: {e} (the files are neither the parts of one reply nor replies each on its own)",
                    f.display()
                );
                return Ok(ExitCode::from(1));
            }
        }
    }
    output::print_line(&serde_json::to_string_pretty(&docs)?)?;
    Ok(ExitCode::SUCCESS)
}

fn print(game: &str, decoded: &Decoded) -> anyhow::Result<ExitCode> {
    let json = serde_json::to_string_pretty(&DecodedJson { game, decoded })?;
    output::print_line(&json)?;
    Ok(ExitCode::SUCCESS)
}
