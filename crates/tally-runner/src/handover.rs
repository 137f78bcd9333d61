//! Opening the files an evaluate command hands over (`TALLY_UNITS_FILE`, `TALLY_EVIDENCE_FILE`;
//! `docs/evaluate-protocol.md` §4c): whatever the command left at those paths, reading them never
//! blocks and never holds more than a documented maximum.
//!
//! Owns: the rules. A path is opened **without blocking** (`O_NONBLOCK`: a FIFO opens at once,
//! with no writer to wait for; `O_NOCTTY`), following symbolic links; the descriptor it gives
//! must be a **regular file** — a FIFO, socket, device or directory, or a symbolic link to one,
//! is refused with what it is — checked on that descriptor (`fstat`), so what is read is what was
//! checked; and a file is read only up to its maximum ([`MAX_UNITS_BYTES`],
//! [`MAX_EVIDENCE_BYTES`]), whatever size it reports (a file of `/proc` reports 0). The runner
//! reads them after every process of the sample has ended, so nothing writes them any more: a
//! regular file of bounded size is read in bounded time.
//!
//! Deliberately absent: what the files mean (`units`, the evidence accountant).

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The most a units file may hold: 16 MiB (about 400,000 units of a typical id and value).
pub const MAX_UNITS_BYTES: u64 = 16 << 20;

/// The most an evidence file may hold: 16 GiB (some 40 million records; tally resolves and
/// accounts all of them before the sample is recorded).
pub const MAX_EVIDENCE_BYTES: u64 = 16 << 30;

/// Opens the hand-over file at `path` by the rules of this module: `Ok(None)` when nothing is
/// there, the open file and its metadata when it is a regular file, else the reason, one clause
/// (``it is a FIFO (named pipe), not a regular file``).
pub fn open_regular(path: &Path) -> Result<Option<(File, Metadata)>, String> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return match std::fs::read_link(path) {
                Ok(target) => Err(format!(
                    "it is a symbolic link to {}, which does not exist",
                    target.display()
                )),
                Err(_) => Ok(None),
            };
        }
        // A socket cannot be opened at all (ENXIO): say what it is.
        Err(err) => {
            return Err(match std::fs::metadata(path) {
                Ok(meta) if !meta.is_file() => not_regular(path, &meta),
                _ => format!("it could not be opened ({err})"),
            });
        }
    };
    let meta = file
        .metadata()
        .map_err(|err| format!("it could not be examined ({err})"))?;
    if !meta.is_file() {
        return Err(not_regular(path, &meta));
    }
    Ok(Some((file, meta)))
}

/// Reads an open hand-over file to its end, refusing one that holds more than `max` bytes
/// (reading at most one byte more). `what` names the file in the reason (`a units file`).
pub fn read_bounded(file: &File, max: u64, what: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|err| format!("it could not be read ({err})"))?;
    if bytes.len() as u64 > max {
        return Err(too_large(max, what));
    }
    Ok(bytes)
}

/// The reason for a file larger than `max` bytes.
pub fn too_large(max: u64, what: &str) -> String {
    format!(
        "it holds more than {}, the most {what} may hold",
        human_bytes(max)
    )
}

/// `16 MiB (16777216 bytes)`: a power-of-two maximum as people write it, and exactly.
fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB ({b} bytes)", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB ({b} bytes)", b >> 20),
        b => format!("{b} bytes"),
    }
}

/// What a path that is not a regular file is, as the reason's clause.
fn not_regular(path: &Path, meta: &Metadata) -> String {
    let kind = file_kind(meta);
    match std::fs::read_link(path) {
        Ok(target) => format!(
            "it is a symbolic link to {}, {kind}, not a regular file",
            target.display()
        ),
        Err(_) => format!("it is {kind}, not a regular file"),
    }
}

fn file_kind(meta: &Metadata) -> String {
    let kind = meta.file_type();
    if kind.is_fifo() {
        "a FIFO (named pipe)".into()
    } else if kind.is_socket() {
        "a socket".into()
    } else if kind.is_char_device() {
        format!(
            "a character device ({}:{})",
            major(meta.rdev()),
            minor(meta.rdev())
        )
    } else if kind.is_block_device() {
        format!(
            "a block device ({}:{})",
            major(meta.rdev()),
            minor(meta.rdev())
        )
    } else if kind.is_dir() {
        "a directory".into()
    } else {
        "not a file".into()
    }
}

/// The major number of a Linux device number (glibc's `gnu_dev_major`).
fn major(dev: u64) -> u64 {
    ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff)
}

/// The minor number of a Linux device number (glibc's `gnu_dev_minor`).
fn minor(dev: u64) -> u64 {
    ((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo runs");
        assert!(status.success());
    }

    #[test]
    fn nothing_there_is_none_and_a_regular_file_opens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("units.json");
        assert!(open_regular(&path).unwrap().is_none());
        std::fs::write(&path, "{}").unwrap();
        let (file, meta) = open_regular(&path).unwrap().unwrap();
        assert_eq!(meta.len(), 2);
        assert_eq!(read_bounded(&file, 2, "a units file").unwrap(), b"{}");
        let (file, _) = open_regular(&path).unwrap().unwrap();
        assert_eq!(
            read_bounded(&file, 1, "a units file").unwrap_err(),
            "it holds more than 1 bytes, the most a units file may hold"
        );
    }

    #[test]
    fn fifos_devices_directories_and_links_to_them_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        // Opening a FIFO for reading would wait for a writer: this returns at once.
        assert_eq!(
            open_regular(&fifo).unwrap_err(),
            "it is a FIFO (named pipe), not a regular file"
        );
        let link = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert_eq!(
            open_regular(&link).unwrap_err(),
            "it is a symbolic link to /dev/zero, a character device (1:5), not a regular file"
        );
        assert_eq!(
            open_regular(dir.path()).unwrap_err(),
            "it is a directory, not a regular file"
        );
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(
            open_regular(&dangling)
                .unwrap_err()
                .ends_with("nowhere, which does not exist")
        );
        let socket_path = dir.path().join("socket");
        let _socket = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
        assert_eq!(
            open_regular(&socket_path).unwrap_err(),
            "it is a socket, not a regular file"
        );
    }

    #[test]
    fn a_file_reporting_size_zero_is_read_up_to_the_maximum() {
        let (file, meta) = open_regular(Path::new("/proc/self/status"))
            .unwrap()
            .unwrap();
        assert_eq!(meta.len(), 0);
        assert!(
            read_bounded(&file, 1 << 20, "x")
                .unwrap()
                .starts_with(b"Name:")
        );
        let (file, _) = open_regular(Path::new("/proc/self/status"))
            .unwrap()
            .unwrap();
        assert!(read_bounded(&file, 10, "x").is_err());
    }

    #[test]
    fn maxima_read_as_people_write_them() {
        assert_eq!(human_bytes(MAX_UNITS_BYTES), "16 MiB (16777216 bytes)");
        assert_eq!(
            human_bytes(MAX_EVIDENCE_BYTES),
            "16 GiB (17179869184 bytes)"
        );
        assert_eq!(human_bytes(1000), "1000 bytes");
    }
}
