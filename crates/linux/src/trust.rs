//! Files a root daemon may trust, and how it opens the ones it writes.
//!
//! The daemon runs as root and acts on what its configuration and journal say, so both must be
//! files that only root (or the daemon's own user) could have written, in directories that
//! nobody else can write into, as sshd's `StrictModes` demands of `~/.ssh`:
//! - a file it reads must be a regular file owned by root or the effective user, and not
//!   writable by group or others;
//! - a directory it keeps state in must be owned the same way and not writable by group or
//!   others (otherwise anyone could rename a planted file over the journal);
//! - a file it creates is opened with `O_NOFOLLOW`, and a temporary file with `O_EXCL` under a
//!   name nobody can predict, so a link planted in its place makes the open fail instead of
//!   making root write through it.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// The largest configuration or journal file read (a journal of 10,000 processes of 100
/// threads each is about 60 MB of JSON: far beyond any real host, and still bounded).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Why a file or directory is not trusted, on one line.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{}: {what}: {error}", path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        error: io::Error,
    },
    #[error("{}: refused: {why}", path.display())]
    Refused { path: PathBuf, why: String },
}

impl TrustError {
    /// True when the file does not exist (the caller may treat that as "nothing there").
    pub fn is_not_found(&self) -> bool {
        matches!(self, TrustError::Io { error, .. } if error.kind() == io::ErrorKind::NotFound)
    }
}

fn refused(path: &Path, why: String) -> TrustError {
    TrustError::Refused {
        path: path.to_path_buf(),
        why,
    }
}

fn io_err<'a>(path: &'a Path, what: &'static str) -> impl FnOnce(io::Error) -> TrustError + 'a {
    move |error| TrustError::Io {
        path: path.to_path_buf(),
        what,
        error,
    }
}

/// The user the daemon runs as.
pub fn effective_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Owner and mode rules shared by files and directories: owned by root or `euid`, and not
/// writable by group or others.
fn check_owner_and_mode(
    path: &Path,
    meta: &Metadata,
    euid: u32,
    kind: &str,
) -> Result<(), TrustError> {
    if meta.uid() != 0 && meta.uid() != euid {
        return Err(refused(
            path,
            format!(
                "the {kind} belongs to uid {}, not to root or the daemon's user (uid {euid})",
                meta.uid()
            ),
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(refused(
            path,
            format!("the {kind} is writable by group or others (mode {mode:04o}); chmod go-w it"),
        ));
    }
    Ok(())
}

/// Checks that `dir` may hold the daemon's state (the journal, the status socket): an existing
/// directory (a link to one is followed), owned by root or the daemon's user, not writable by
/// group or others; and so is every directory above it, both on the path as given and on the
/// path the links lead to, or whoever owns a parent could swap the directory for a link to
/// another one between two starts. A parent writable by others is accepted only with the
/// sticky bit (as `/tmp`): there nobody can rename or remove an entry they do not own.
pub fn check_private_dir(dir: &Path) -> Result<(), TrustError> {
    let meta = std::fs::metadata(dir).map_err(io_err(dir, "cannot stat the directory"))?;
    if !meta.is_dir() {
        return Err(refused(dir, "not a directory".into()));
    }
    let euid = effective_uid();
    check_owner_and_mode(dir, &meta, euid, "directory")?;
    let absolute = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(io_err(dir, "cannot find the current directory"))?
            .join(dir)
    };
    let real = std::fs::canonicalize(dir).map_err(io_err(dir, "cannot resolve the directory"))?;
    for path in [&absolute, &real] {
        for parent in path.ancestors().skip(1) {
            check_parent(parent, euid)?;
        }
    }
    Ok(())
}

/// A directory above the daemon's own: as [`check_owner_and_mode`], except that a sticky
/// directory may be writable by others. The link itself is judged (`lstat`): its target is
/// judged on the resolved path.
fn check_parent(parent: &Path, euid: u32) -> Result<(), TrustError> {
    let meta = std::fs::symlink_metadata(parent)
        .map_err(io_err(parent, "cannot stat a parent directory"))?;
    if meta.file_type().is_symlink() {
        // Only root or the daemon's user may have made the link (links have mode 0777).
        if meta.uid() != 0 && meta.uid() != euid {
            return Err(refused(
                parent,
                format!(
                    "a link above the daemon's directory belongs to uid {}",
                    meta.uid()
                ),
            ));
        }
        return Ok(());
    }
    let sticky = meta.mode() & 0o1000 != 0;
    if sticky && (meta.uid() == 0 || meta.uid() == euid) {
        return Ok(());
    }
    check_owner_and_mode(parent, &meta, euid, "parent directory")
}

/// Reads a configuration file the daemon will act on. A link is followed (configuration
/// management often links /etc files), but the file it reaches must be a regular file of at
/// most [`MAX_FILE_BYTES`], owned by root or the daemon's user and not writable by group or
/// others.
pub fn read_config(path: &Path) -> Result<String, TrustError> {
    let f = open_regular(path, 0)?;
    String::from_utf8(read_checked(path, f)?).map_err(|e| {
        refused(
            path,
            format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// Reads a state file the daemon wrote itself (the journal): as [`read_config`], but a
/// symbolic link is refused outright (`O_NOFOLLOW`). Returns the bytes: whether they are
/// valid is the caller's to judge.
pub fn read_state(path: &Path) -> Result<Vec<u8>, TrustError> {
    let f = open_regular(path, libc::O_NOFOLLOW)?;
    read_checked(path, f)
}

/// Opens a regular file for reading without blocking on a FIFO or touching a device
/// ([`topo::input::open_regular_with`]).
fn open_regular(path: &Path, flags: i32) -> Result<File, TrustError> {
    topo::input::open_regular_with(path, flags).map_err(|e| match e {
        topo::input::InputError::Io { error, .. } => link_or(path, error, "cannot read"),
        topo::input::InputError::Refused { why, .. } => refused(path, why),
    })
}

fn read_checked(path: &Path, f: File) -> Result<Vec<u8>, TrustError> {
    let meta = f.metadata().map_err(io_err(path, "cannot stat"))?;
    if !meta.is_file() {
        return Err(refused(path, not_regular(meta.file_type())));
    }
    check_owner_and_mode(path, &meta, effective_uid(), "file")?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(refused(
            path,
            format!(
                "{} bytes, more than the {MAX_FILE_BYTES}-byte limit",
                meta.len()
            ),
        ));
    }
    let mut bytes = Vec::new();
    f.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err(path, "cannot read"))?;
    Ok(bytes)
}

/// "not a regular file (a FIFO)" and the like.
fn not_regular(t: std::fs::FileType) -> String {
    format!("not a regular file ({})", topo::input::file_kind(t))
}

/// `ELOOP` from an `O_NOFOLLOW` open means the last component is a symbolic link.
fn link_or(path: &Path, e: io::Error, what: &'static str) -> TrustError {
    if e.raw_os_error() == Some(libc::ELOOP) {
        refused(path, "it is a symbolic link".into())
    } else {
        io_err(path, what)(e)
    }
}

/// Creates `path` for writing, mode 0600, failing if anything (a link included) is there.
pub fn create_new(path: &Path) -> Result<File, TrustError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(path)
        .map_err(|e| link_or(path, e, "cannot create"))
}

/// Opens (creating if needed, mode 0600) a file that persists between runs, such as a lock
/// file, without following a link; the file must be a regular file the daemon's user or root
/// owns.
pub fn open_persistent(path: &Path) -> Result<File, TrustError> {
    // A FIFO or a device already there is refused before it is opened; O_NONBLOCK keeps one
    // swapped in afterwards from blocking the open, and the descriptor is checked below.
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            return Err(refused(path, "it is a symbolic link".into()));
        }
        if !meta.is_file() {
            return Err(refused(path, not_regular(meta.file_type())));
        }
    }
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .mode(0o600)
        .open(path)
        .map_err(|e| link_or(path, e, "cannot open"))?;
    let meta = f.metadata().map_err(io_err(path, "cannot stat"))?;
    if !meta.is_file() {
        return Err(refused(path, not_regular(meta.file_type())));
    }
    check_owner_and_mode(path, &meta, effective_uid(), "file")?;
    Ok(f)
}

/// A temporary name beside `path` that another user cannot guess ahead of time: the process
/// ID, the time in nanoseconds and a per-process counter. (Unguessable is a courtesy: the
/// exclusive create is what makes it safe.)
pub fn temp_name(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp.{}.{nanos:x}.{n}", std::process::id()));
    path.with_file_name(name)
}

/// Creates a fresh temporary file beside `path` (see [`temp_name`] and [`create_new`]);
/// retries a few names if one is taken.
pub fn create_temp(path: &Path) -> Result<(PathBuf, File), TrustError> {
    let mut last = None;
    for _ in 0..8 {
        let tmp = temp_name(path);
        match create_new(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| refused(path, "no temporary name could be created".into())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    #[test]
    fn config_must_not_be_writable_by_others() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("c.toml");
        std::fs::write(&p, "policy = \"none\"\n").expect("write");
        chmod(&p, 0o644);
        assert_eq!(read_config(&p).expect("ok"), "policy = \"none\"\n");
        chmod(&p, 0o666);
        let e = read_config(&p).expect_err("world-writable");
        assert!(
            e.to_string()
                .contains("writable by group or others (mode 0666)"),
            "{e}"
        );
        chmod(&p, 0o664);
        assert!(read_config(&p).is_err());
    }

    #[test]
    fn another_users_file_is_refused() {
        if effective_uid() != 0 {
            return; // only root can give a file away; CI and the daemon run as root
        }
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("journal.json");
        std::fs::write(&p, "{}").expect("write");
        nix::unistd::chown(&p, Some(nix::unistd::Uid::from_raw(65534)), None).expect("chown");
        let e = read_state(&p).expect_err("not ours");
        assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
        assert!(read_config(&p).is_err());
    }

    #[test]
    fn special_files_and_links_are_refused() {
        let d = tempfile::tempdir().expect("tmp");
        let e = read_config(Path::new("/dev/zero")).expect_err("device");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let target = d.path().join("t");
        std::fs::write(&target, "{}").expect("write");
        let link = d.path().join("journal.json");
        std::os::unix::fs::symlink(&target, &link).expect("link");
        assert_eq!(read_state(&target).expect("file"), b"{}");
        let e = read_state(&link).expect_err("link");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let e = create_new(&link).expect_err("exists");
        assert!(e.to_string().contains("cannot create"), "{e}");
        let dangling = d.path().join("j.lock");
        std::os::unix::fs::symlink(d.path().join("made-by-root"), &dangling).expect("link");
        let e = open_persistent(&dangling).expect_err("dangling link");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(!d.path().join("made-by-root").exists());
    }

    /// A FIFO as the configuration, the journal or its lock: without the checks the open
    /// blocks until someone writes to it (forever, for a daemon at start or on SIGHUP).
    #[test]
    fn fifos_are_refused_without_blocking() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("homenode.toml");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
        for e in [
            read_config(&p).expect_err("config"),
            read_state(&p).expect_err("journal"),
            open_persistent(&p).expect_err("lock"),
        ] {
            assert_eq!(
                e.to_string(),
                format!("{}: refused: not a regular file (a FIFO)", p.display())
            );
        }
        let link = d.path().join("link.toml");
        std::os::unix::fs::symlink(&p, &link).expect("link");
        let e = read_config(&link).expect_err("link to a FIFO");
        assert!(e.to_string().contains("a FIFO"), "{e}");
        let e = open_persistent(Path::new("/dev/null")).expect_err("device");
        assert!(e.to_string().contains("a character device"), "{e}");
    }

    #[test]
    fn state_directory_rules() {
        let d = tempfile::tempdir().expect("tmp");
        chmod(d.path(), 0o700);
        check_private_dir(d.path()).expect("private");
        chmod(d.path(), 0o1777);
        let e = check_private_dir(d.path()).expect_err("world-writable");
        assert!(e.to_string().contains("directory is writable"), "{e}");
        chmod(d.path(), 0o700);
        let f = d.path().join("f");
        std::fs::write(&f, "").expect("write");
        assert!(
            check_private_dir(&f)
                .expect_err("file")
                .to_string()
                .contains("not a directory")
        );
    }

    /// Whoever can write a directory above the journal's could swap the journal's directory
    /// for a link to another one: such a parent is refused (a sticky one such as `/tmp` is
    /// not), on the path as given and on the path its links lead to.
    #[test]
    fn every_parent_of_the_state_directory_is_checked() {
        let d = tempfile::tempdir().expect("tmp");
        let parent = d.path().join("parent");
        let state = parent.join("state");
        std::fs::create_dir_all(&state).expect("dirs");
        chmod(d.path(), 0o700);
        chmod(&parent, 0o755);
        chmod(&state, 0o700);
        check_private_dir(&state).expect("trusted parents");
        chmod(&parent, 0o777);
        let e = check_private_dir(&state).expect_err("a parent others can write");
        assert!(
            e.to_string().contains("parent directory is writable"),
            "{e}"
        );
        assert!(e.to_string().contains("parent: refused"), "{e}");
        chmod(&parent, 0o1777);
        check_private_dir(&state).expect("a sticky parent");
        // A link from a trusted place into an untrusted one: the target's parents count.
        chmod(&parent, 0o777);
        let elsewhere = d.path().join("trusted");
        std::fs::create_dir(&elsewhere).expect("dir");
        chmod(&elsewhere, 0o755);
        let link = elsewhere.join("state");
        std::os::unix::fs::symlink(&state, &link).expect("link");
        let e = check_private_dir(&link).expect_err("a link into an untrusted parent");
        assert!(
            e.to_string().contains("parent directory is writable"),
            "{e}"
        );
        chmod(&parent, 0o755);
        check_private_dir(&link).expect("a link between trusted places");
        if effective_uid() == 0 {
            // A parent another user owns (they could rename the state directory away).
            nix::unistd::chown(&parent, Some(nix::unistd::Uid::from_raw(65534)), None)
                .expect("chown");
            let e = check_private_dir(&state).expect_err("another user's parent");
            assert!(e.to_string().contains("belongs to uid 65534"), "{e}");
        }
    }

    #[test]
    fn temp_names_differ_and_create_is_exclusive() {
        let d = tempfile::tempdir().expect("tmp");
        let p = d.path().join("journal.json");
        let (a, _fa) = create_temp(&p).expect("a");
        let (b, _fb) = create_temp(&p).expect("b");
        assert_ne!(a, b);
        assert!(a.to_string_lossy().contains("journal.json.tmp."));
        assert!(create_new(&a).is_err());
    }
}
