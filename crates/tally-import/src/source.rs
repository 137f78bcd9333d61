//! Opening trace inputs: gzip by magic bytes, byte counting for progress and error positions,
//! content hashing for stable ids, and decompressing a `.sqlite.gz` to a temporary file.
//!
//! Everything that touches the file system for the importers is here; the parsers see `Read`
//! values and never know whether the bytes were compressed.

use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use flate2::read::MultiGzDecoder;
use xxhash_rust::xxh3::Xxh3;

use crate::error::{Error, Result};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// A reader that counts the bytes it delivered into a shared cell.
pub struct CountingReader<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// A buffered plain file.
pub type PlainReader = BufReader<CountingReader<File>>;
/// A buffered gzip stream over a buffered file.
pub type GzipReader = BufReader<MultiGzDecoder<BufReader<CountingReader<File>>>>;

/// The decompressed byte stream, as a concrete type so that byte-wise parsers inline its reads.
pub enum Stream {
    /// Not compressed.
    Plain(PlainReader),
    /// gzip (boxed: the decoder state is large).
    Gzip(Box<GzipReader>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Plain(r) => r.read(buf),
            Self::Gzip(r) => r.read(buf),
        }
    }
}

/// An opened input: a buffered reader over its (decompressed) bytes plus counters.
pub struct Opened {
    /// The decompressed byte stream.
    pub reader: Stream,
    /// Bytes of the *file* read so far (compressed bytes for gzip).
    pub file_bytes: Rc<Cell<u64>>,
    /// The file's size.
    pub file_size: u64,
    /// Whether the file is gzip-compressed.
    pub gzip: bool,
}

/// Refuses an input that is not a regular file, before anything reads it
/// (`docs/importers.md#inputs`): a character or block device, a FIFO, a socket or a directory
/// (symbolic links are followed) gives [`Error::NotAFile`]. A device or pipe may never end
/// (`/dev/zero`) and cannot be read twice, as an import reads each input (hash, then import).
pub fn check_regular(path: &Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a FIFO (a pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(Error::NotAFile {
        path: path.to_path_buf(),
        what,
    })
}

/// Whether the file starts with the gzip magic bytes.
pub fn is_gzip(path: &Path) -> Result<bool> {
    let mut magic = [0u8; 2];
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut filled = 0;
    while filled < 2 {
        match file.read(&mut magic[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(filled == 2 && magic == GZIP_MAGIC)
}

/// Opens `path`, decompressing gzip transparently.
pub fn open(path: &Path) -> Result<Opened> {
    let gzip = is_gzip(path)?;
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let file_size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let file_bytes = Rc::new(Cell::new(0));
    let counting = CountingReader {
        inner: file,
        count: file_bytes.clone(),
    };
    let reader = if gzip {
        Stream::Gzip(Box::new(BufReader::with_capacity(
            1 << 16,
            MultiGzDecoder::new(BufReader::with_capacity(1 << 16, counting)),
        )))
    } else {
        Stream::Plain(BufReader::with_capacity(1 << 16, counting))
    };
    Ok(Opened {
        reader,
        file_bytes,
        file_size,
        gzip,
    })
}

/// A 128-bit XXH3 hash of the file's bytes as stored (12 hex digits are used in ids).
pub fn content_hash(path: &Path) -> Result<u128> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, e)),
        }
    }
    Ok(hasher.digest128())
}

/// The display name of a file (its last component, or the path as given).
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// A local SQLite file to open: the input itself, or its decompressed copy (deleted on drop).
pub enum SqliteFile {
    /// The input is a plain SQLite file.
    Plain(std::path::PathBuf),
    /// The input was gzip; this temporary file holds the decompressed database.
    Temporary(tempfile::NamedTempFile),
}

impl SqliteFile {
    /// The path to open.
    pub fn path(&self) -> &Path {
        match self {
            Self::Plain(p) => p,
            Self::Temporary(t) => t.path(),
        }
    }
}

/// Returns a SQLite file for `path`, decompressing a gzip input to a temporary file first.
pub fn sqlite_file(path: &Path) -> Result<SqliteFile> {
    if !is_gzip(path)? {
        return Ok(SqliteFile::Plain(path.to_path_buf()));
    }
    let opened = open(path)?;
    let mut temp = tempfile::Builder::new()
        .prefix("tally-nsys-")
        .suffix(".sqlite")
        .tempfile()
        .map_err(|e| Error::io(path, e))?;
    let mut reader = opened.reader;
    io::copy(&mut reader, temp.as_file_mut()).map_err(|e| Error::Corrupt {
        path: path.to_path_buf(),
        position: format!("byte {} of the file", opened.file_bytes.get()),
        message: format!("gzip: {e}"),
    })?;
    Ok(SqliteFile::Temporary(temp))
}
