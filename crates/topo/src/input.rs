//! Opening and reading a file this project did not write: an input a user names (a machine
//! spec, a workload, an experiment, a benchmark report), or a kernel file under `/sys` or
//! `/proc` (possibly in a rooted test tree, where anything may stand in for it).
//!
//! Every such file is opened through [`open_regular`]: the path is checked to name a regular
//! file before it is opened (so opening a device has no side effect), then opened with
//! `O_NONBLOCK` (so a FIFO cannot block the open) and checked again on the descriptor (so
//! nothing swapped in between is read). Reads stop at a stated limit: [`MAX_INPUT_BYTES`] for
//! inputs, [`MAX_KERNEL_FILE_BYTES`] for kernel files, whose size `stat` reports as 0 or
//! 4096 whatever they hold, so the bound is on the bytes read.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// Bytes of an input file.
pub const MAX_INPUT_BYTES: u64 = 4 << 20;

/// Bytes read from one machine-wide kernel file (`/proc/stat`, `/proc/vmstat`, a sysfs
/// file). The largest such file read is `/proc/cpuinfo`, about 1.7 KiB per CPU (the `flags`
/// line), so 16 MiB holds that of a 8,192-CPU machine.
pub const MAX_KERNEL_FILE_BYTES: u64 = 16 << 20;

/// Why an input file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{}: cannot read: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: {why}", path.display())]
    Refused { path: PathBuf, why: String },
}

impl InputError {
    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, InputError::Io { error, .. } if error.kind() == std::io::ErrorKind::NotFound)
    }

    /// The I/O error, if reading failed (rather than the file being refused).
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            InputError::Io { error, .. } => Some(error),
            InputError::Refused { .. } => None,
        }
    }
}

/// What a file that is not a regular file is, for messages.
pub fn file_kind(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Refuses a file type other than a regular file, naming what it is.
pub fn check_regular(path: &Path, t: std::fs::FileType) -> Result<(), InputError> {
    if t.is_file() {
        return Ok(());
    }
    Err(InputError::Refused {
        path: path.to_path_buf(),
        why: format!("not a regular file ({})", file_kind(t)),
    })
}

/// Opens `path` for reading if it is a regular file (a link to one is followed). A FIFO, a
/// device, a socket or a directory is refused without blocking and without the open's side
/// effects: the path is checked first, then opened with `O_NONBLOCK | O_NOCTTY | O_CLOEXEC`,
/// then the descriptor is checked, so a file swapped in between is refused too.
pub fn open_regular(path: &Path) -> Result<File, InputError> {
    open_regular_with(path, 0)
}

/// [`open_regular`] with extra `open` flags (such as `O_NOFOLLOW`).
pub fn open_regular_with(path: &Path, flags: i32) -> Result<File, InputError> {
    let io = |error| InputError::Io {
        path: path.to_path_buf(),
        error,
    };
    let follow = flags & libc::O_NOFOLLOW == 0;
    let before = if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    };
    match before {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(InputError::Refused {
                path: path.to_path_buf(),
                why: "it is a symbolic link".into(),
            });
        }
        Ok(meta) => check_regular(path, meta.file_type())?,
        Err(e) => return Err(io(e)),
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC | flags)
        .open(path)
        .map_err(io)?;
    check_regular(path, f.metadata().map_err(io)?.file_type())?;
    Ok(f)
}

/// Reads at most `limit` bytes of `f`; more is refused, naming the limit. The size `stat`
/// reports is not trusted (kernel files report 0).
pub fn read_bounded(path: &Path, f: File, limit: u64, buf: &mut Vec<u8>) -> Result<(), InputError> {
    buf.clear();
    f.take(limit + 1)
        .read_to_end(buf)
        .map_err(|error| InputError::Io {
            path: path.to_path_buf(),
            error,
        })?;
    if buf.len() as u64 > limit {
        buf.clear();
        return Err(InputError::Refused {
            path: path.to_path_buf(),
            why: format!("longer than the {limit}-byte limit"),
        });
    }
    Ok(())
}

/// Reads a kernel file (`/proc/stat`, a sysfs file) or its stand-in in a rooted tree: a
/// regular file, at most `limit` bytes read.
pub fn read_kernel_file(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let f = open_regular(path)?;
    let mut buf = Vec::new();
    read_bounded(path, f, limit, &mut buf)?;
    Ok(buf)
}

/// Reads an input file: a regular file (a link to one is followed) of at most
/// [`MAX_INPUT_BYTES`], UTF-8 text. `/dev/zero`, a directory or a FIFO is refused before a
/// byte is read.
pub fn read_input(path: &Path) -> Result<String, InputError> {
    read_input_limited(path, MAX_INPUT_BYTES)
}

/// [`read_input`] with another limit.
pub fn read_input_limited(path: &Path, limit: u64) -> Result<String, InputError> {
    let refused = |why: String| InputError::Refused {
        path: path.to_path_buf(),
        why,
    };
    let f = open_regular(path)?;
    let len = f
        .metadata()
        .map_err(|error| InputError::Io {
            path: path.to_path_buf(),
            error,
        })?
        .len();
    if len > limit {
        return Err(refused(format!(
            "{len} bytes, more than the input limit of {limit} bytes"
        )));
    }
    let mut bytes = Vec::new();
    read_bounded(path, f, limit, &mut bytes)?;
    String::from_utf8(bytes).map_err(|e| {
        refused(format!(
            "not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(dir: &Path) -> PathBuf {
        let p = dir.join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .expect("mkfifo runs");
        assert!(status.success(), "mkfifo");
        p
    }

    #[test]
    fn input_files_are_regular_and_small() {
        let e = read_input(Path::new("/dev/zero")).expect_err("device");
        assert!(e.to_string().contains("a character device"), "{e}");
        // A directory that is removed when the test ends, so runs leave nothing in /tmp.
        let d = tempfile::tempdir().expect("tempdir");
        let big = d.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; (MAX_INPUT_BYTES + 1) as usize]).expect("write");
        assert!(
            read_input(&big)
                .expect_err("big")
                .to_string()
                .contains("more than the input limit")
        );
        let e = read_input(d.path()).expect_err("directory");
        assert!(e.to_string().contains("a directory"), "{e}");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        // Without O_NONBLOCK and the check before opening, this open would wait for a writer
        // forever and the test would hang.
        let d = tempfile::tempdir().expect("tempdir");
        let p = fifo(d.path());
        let e = read_input(&p).expect_err("fifo");
        assert_eq!(
            e.to_string(),
            format!("{}: not a regular file (a FIFO)", p.display())
        );
        let e = read_kernel_file(&p, 100).expect_err("fifo");
        assert!(e.to_string().contains("a FIFO"), "{e}");
        // A link to a FIFO or a device is followed and refused just the same.
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).expect("symlink");
        assert!(
            read_input(&link)
                .expect_err("link")
                .to_string()
                .contains("a FIFO")
        );
        let zero = d.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let e = read_kernel_file(&zero, MAX_KERNEL_FILE_BYTES).expect_err("zero");
        assert!(e.to_string().contains("a character device"), "{e}");
        // O_NOFOLLOW refuses the link itself.
        let e = open_regular_with(&link, libc::O_NOFOLLOW).expect_err("nofollow");
        assert!(e.to_string().contains("symbolic link"), "{e}");
    }

    #[test]
    fn kernel_files_are_read_up_to_the_limit() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("stat");
        std::fs::write(&p, b"cpu 1 2 3\n").expect("write");
        assert_eq!(read_kernel_file(&p, 10).expect("fits"), b"cpu 1 2 3\n");
        let e = read_kernel_file(&p, 9).expect_err("too long");
        assert!(
            e.to_string().contains("longer than the 9-byte limit"),
            "{e}"
        );
        assert!(
            read_kernel_file(&d.path().join("absent"), 9)
                .expect_err("absent")
                .is_not_found()
        );
    }
}
