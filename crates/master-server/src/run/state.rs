//! The state file: checked, read strictly or moved aside when unusable, written atomically.

use std::path::{Path, PathBuf};

use tracing::warn;

use crate::{Snapshot, SNAPSHOT_VERSION};

/// Largest state file read (65,536 servers take ~10 MB).
const MAX_STATE_BYTES: u64 = 64 << 20;

fn state_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Checks that the state file can be written: its directory exists and takes a new file, and
/// the path is not a directory. The error names the path.
pub fn check_state_path(path: &Path) -> std::io::Result<()> {
    let dir = state_dir(path);
    let named = |what: String| std::io::Error::other(format!("{}: {what}", path.display()));
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(named(format!("{} is not a directory", dir.display()))),
        Err(e) => return Err(named(format!("directory {}: {e}", dir.display()))),
    }
    if path.is_dir() {
        return Err(named("is a directory".into()));
    }
    tempfile::NamedTempFile::new_in(dir)
        .map(drop)
        .map_err(|e| named(format!("cannot write in {}: {e}", dir.display())))
}

/// Reads a state file strictly (`Ok(None)` when there is none): a file that is not a state
/// file of this version is an error.
pub fn load_state(path: &Path) -> std::io::Result<Option<Snapshot>> {
    match read_state(path) {
        Ok(s) => Ok(s),
        Err(StateError::Io(e)) => Err(e),
        Err(StateError::Bad(why)) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {why}", path.display()),
        )),
    }
}

enum StateError {
    Io(std::io::Error),
    Bad(String),
}

fn read_state(path: &Path) -> Result<Option<Snapshot>, StateError> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StateError::Io(e)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_STATE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(StateError::Io)?;
    if bytes.len() as u64 > MAX_STATE_BYTES {
        return Err(StateError::Bad(format!(
            "larger than {} MiB",
            MAX_STATE_BYTES >> 20
        )));
    }
    #[derive(serde::Deserialize)]
    struct Versioned {
        version: u32,
    }
    let v: Versioned = serde_json::from_slice(&bytes)
        .map_err(|e| StateError::Bad(format!("not a master state file: {e}")))?;
    if v.version != SNAPSHOT_VERSION {
        return Err(StateError::Bad(format!(
            "state file version {} (this master reads version {SNAPSHOT_VERSION})",
            v.version
        )));
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| StateError::Bad(format!("not a master state file: {e}")))
}

/// Reads the state file; one that is corrupt, too large or of another version is moved aside
/// (`FILE.bad-UNIXTIME`) with a warning and the master starts empty, instead of failing to
/// start (which systemd would turn into a restart loop). Only an I/O error is an error.
pub fn load_or_move_aside(path: &Path) -> std::io::Result<Option<Snapshot>> {
    match read_state(path) {
        Ok(s) => Ok(s),
        Err(StateError::Io(e)) => Err(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        )),
        Err(StateError::Bad(why)) => {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let mut aside = path.as_os_str().to_owned();
            aside.push(format!(".bad-{secs}"));
            let aside = PathBuf::from(aside);
            std::fs::rename(path, &aside)?;
            warn!(path = %path.display(), moved_to = %aside.display(), reason = %why, "state file not usable: moved aside, starting empty");
            Ok(None)
        }
    }
}

/// Writes a state file atomically: a new temporary file (unique name, created exclusively,
/// never through a symbolic link) in the same directory, fsync, rename, fsync of the
/// directory.
pub fn save_state(path: &Path, snapshot: &Snapshot) -> std::io::Result<()> {
    use std::io::Write;
    let dir = state_dir(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(".fragstat-master-state")
        .tempfile_in(dir)?;
    tmp.write_all(&serde_json::to_vec_pretty(snapshot).map_err(std::io::Error::other)?)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
