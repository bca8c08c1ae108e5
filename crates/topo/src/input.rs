//! Reading an input file a user names (a machine spec, a workload, an experiment): a regular
//! file of bounded size, so that `/dev/zero` or a multi-gigabyte file is refused with one line
//! before a byte is read.

use std::path::Path;

/// Bytes of an input file.
pub const MAX_INPUT_BYTES: u64 = 4 << 20;

/// Why an input file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{}: cannot read: {error}", path.display())]
    Io {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
    #[error("{}: {why}", path.display())]
    Refused {
        path: std::path::PathBuf,
        why: String,
    },
}

/// Reads an input file: a regular file (a link to one is followed) of at most
/// [`MAX_INPUT_BYTES`], UTF-8 text. `/dev/zero`, a directory or a FIFO is refused before a
/// byte is read.
pub fn read_input(path: &Path) -> Result<String, InputError> {
    use std::io::Read as _;
    let io = |error| InputError::Io {
        path: path.to_path_buf(),
        error,
    };
    let refused = |why: String| InputError::Refused {
        path: path.to_path_buf(),
        why,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let meta = f.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(refused("not a regular file".into()));
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(refused(format!(
            "{} bytes, more than the input limit of {MAX_INPUT_BYTES} bytes",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    f.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
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

    #[test]
    fn input_files_are_regular_and_small() {
        let e = read_input(Path::new("/dev/zero")).expect_err("device");
        assert!(e.to_string().contains("not a regular file"), "{e}");
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
        assert!(read_input(d.path()).is_err());
    }
}
