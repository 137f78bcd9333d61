//! Where a file's bytes come from, one batch of whole lines at a time, with memory bounded by the
//! batch size: a regular file is memory-mapped window by window (each window unmapped once its
//! batch is decoded), gzip data (recognised by its magic bytes `1f 8b`, whatever the name) and
//! anything that cannot be mapped (standard input, pipes) are read by a background thread into
//! batch buffers, so decompression overlaps parsing. In-memory bytes are cut the same way.
//!
//! Batches end just after a line terminator (see [`lines::cut_at_line_end`]); a line longer than
//! the batch size makes its batch grow to hold it, up to [`lines::LONGEST_WINDOW`]: a source that
//! finds no line end in that many bytes stops with [`read_error`]'s "line too long" rather than
//! reading on (`/dev/zero` would otherwise fill the memory). A file that reports a size of 0
//! (`/proc/cpuinfo`, and other kernel files whose size is not known in advance) is read as a
//! stream, not mapped. Nothing here parses JSON.

use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use memmap2::{Mmap, MmapOptions};

use tally_evidence::error::{Error, Origin};
use tally_evidence::model::Text;

use super::lines::{self, LONGEST_WINDOW};

/// An artifact to read: a file, or standard input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// A file path (plain or gzip-compressed JSONL).
    Path(PathBuf),
    /// Standard input (plain or gzip-compressed JSONL).
    Stdin,
}

impl Input {
    /// The input a command-line argument names: `-` is standard input, anything else a path.
    pub fn from_arg(arg: impl AsRef<OsStr>) -> Self {
        let arg = arg.as_ref();
        if arg == "-" {
            Self::Stdin
        } else {
            Self::Path(PathBuf::from(arg))
        }
    }

    /// The name errors and origins use: the path as given, or `-`.
    pub fn name(&self) -> Text {
        Text::from(self.to_string())
    }
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Path(path) => write!(f, "{}", path.display()),
            Self::Stdin => f.write_str("-"),
        }
    }
}

impl From<PathBuf> for Input {
    fn from(path: PathBuf) -> Self {
        Self::Path(path)
    }
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// One batch of whole lines.
pub(crate) enum Chunk<'a> {
    /// Part of caller-owned bytes.
    Slice(&'a [u8]),
    /// The first `.1` bytes of a mapped window.
    Mapped(Mmap, usize),
    /// Bytes read from a stream.
    Owned(Vec<u8>),
}

impl Deref for Chunk<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Chunk::Slice(bytes) => bytes,
            Chunk::Mapped(map, len) => &map[..*len],
            Chunk::Owned(bytes) => bytes,
        }
    }
}

impl Chunk<'_> {
    /// Maps a mapped window's pages in one go (where the kernel can), rather than one page
    /// fault per few pages while the batch is parsed. Called on a parse thread.
    pub(crate) fn prefault(&self) {
        #[cfg(target_os = "linux")]
        if let Chunk::Mapped(map, len) = self {
            // Advice is a hint; a kernel without it faults the pages in as they are read.
            let _ = map.advise_range(memmap2::Advice::PopulateRead, 0, *len);
        }
    }
}

/// A source of batches.
pub(crate) struct Source<'a> {
    kind: SourceKind<'a>,
    batch_bytes: usize,
}

enum SourceKind<'a> {
    Slice { data: &'a [u8], pos: usize },
    Mapped { file: File, len: u64, pos: u64 },
    Stream(Receiver<io::Result<Vec<u8>>>),
}

impl<'a> Source<'a> {
    /// Batches of caller-owned bytes.
    pub(crate) fn slice(data: &'a [u8], batch_bytes: usize) -> Self {
        Self {
            kind: SourceKind::Slice { data, pos: 0 },
            batch_bytes: batch_bytes.max(1),
        }
    }

    /// The next batch, or `None` at the end of the input.
    pub(crate) fn next_chunk(&mut self) -> io::Result<Option<Chunk<'a>>> {
        let batch = self.batch_bytes;
        match &mut self.kind {
            SourceKind::Slice { data, pos } => {
                let data: &'a [u8] = data;
                let batch = tapered(batch, (data.len() - *pos) as u64);
                let Some(cut) = cut_window(data.len() as u64, *pos as u64, batch, |s, e| {
                    Ok(&data[s as usize..e as usize])
                })?
                else {
                    return Ok(None);
                };
                let chunk = &data[*pos..*pos + cut.1];
                *pos += cut.1;
                Ok(Some(Chunk::Slice(chunk)))
            }
            SourceKind::Mapped { file, len, pos } => {
                let batch = tapered(batch, len.saturating_sub(*pos));
                let Some((map, cut)) =
                    cut_window(*len, *pos, batch, |s, e| map_window(file, s, e))?
                else {
                    return Ok(None);
                };
                *pos += cut as u64;
                Ok(Some(Chunk::Mapped(map, cut)))
            }
            SourceKind::Stream(rx) => match rx.recv() {
                Ok(Ok(bytes)) => Ok(Some(Chunk::Owned(bytes))),
                Ok(Err(e)) => Err(e),
                // The reader thread ended: all its batches were received.
                Err(_) => Ok(None),
            },
        }
    }
}

impl Source<'static> {
    /// Opens an input.
    pub(crate) fn open(input: &Input, batch_bytes: usize) -> io::Result<Self> {
        match input {
            Input::Stdin => Ok(Self {
                kind: stream(io::stdin(), batch_bytes.max(1))?,
                batch_bytes: batch_bytes.max(1),
            }),
            Input::Path(path) => Self::file(File::open(path)?, batch_bytes),
        }
    }

    /// Reads a file just opened: a regular file of known size is mapped from its start (unless
    /// it is gzip), anything else (a pipe, a device, a file reporting size 0) is a stream.
    pub(crate) fn file(mut file: File, batch_bytes: usize) -> io::Result<Self> {
        let batch_bytes = batch_bytes.max(1);
        let meta = file.metadata()?;
        // Kernel files (`/proc`, `/sys`) report size 0 whatever they hold: only a stream reads
        // them to their end.
        if !meta.is_file() || meta.len() == 0 {
            return Ok(Self {
                kind: stream(file, batch_bytes)?,
                batch_bytes,
            });
        }
        let (head, n) = read_head(&mut file)?;
        if head[..n] == GZIP_MAGIC {
            return Ok(Self {
                kind: stream(Cursor::new(head).chain(file), batch_bytes)?,
                batch_bytes,
            });
        }
        Ok(Self {
            kind: SourceKind::Mapped {
                file,
                len: meta.len(),
                pos: 0,
            },
            batch_bytes: mapped_batch(meta.len(), batch_bytes),
        })
    }
}

/// Marks the error of a source that found no line end within [`LONGEST_WINDOW`] bytes.
#[derive(Debug)]
struct LineTooLong;

impl fmt::Display for LineTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a line is longer than the reader's limit")
    }
}

impl std::error::Error for LineTooLong {}

fn line_too_long() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, LineTooLong)
}

/// The reader's error for a failed [`Source::next_chunk`] of input `name` whose next batch would
/// have started at `line`: a line that is too long is that line's error (the batch starts at a
/// line start), anything else the input's I/O error.
pub(crate) fn read_error(name: &Text, line: u64, error: io::Error) -> Error {
    if error.get_ref().is_some_and(|e| e.is::<LineTooLong>()) {
        super::context::located(lines::too_long(), Origin::at(name.clone(), line))
    } else {
        Error::Io {
            name: name.clone(),
            source: error,
        }
    }
}

/// The batch size for a mapped file of `len` bytes: `batch_bytes`, or less for a file of fewer
/// than [`MIN_BATCHES`] batches (down to [`MIN_BATCH_BYTES`]): the first batch is parsed before
/// anything else can start, and the last one resolved after everything else has ended.
fn mapped_batch(len: u64, batch_bytes: usize) -> usize {
    at_most_a_share(batch_bytes, len, MIN_BATCHES)
}

/// `batch_bytes`, or a `parts`th of `bytes` when that is smaller, but not below
/// [`MIN_BATCH_BYTES`] (unless `batch_bytes` itself is).
fn at_most_a_share(batch_bytes: usize, bytes: u64, parts: u64) -> usize {
    let share = usize::try_from(bytes / parts).unwrap_or(usize::MAX);
    batch_bytes.min(share.max(MIN_BATCH_BYTES))
}

/// The size of the next batch of an input with `remaining` bytes left: `batch_bytes`, shrinking
/// towards the end to a [`TAPER`]th of what is left (down to [`MIN_BATCH_BYTES`]). The last
/// batch's records are delivered after every other batch is decoded, with nothing left to run
/// beside them: a 16 MiB last batch kept one core idle for about 30 ms on the 1M-record
/// benchmark, a 1 MiB one for 2 ms.
fn tapered(batch_bytes: usize, remaining: u64) -> usize {
    at_most_a_share(batch_bytes, remaining, TAPER)
}

/// How many batches the rest of an input is at least cut into, near its end (see [`tapered`]).
const TAPER: u64 = 4;

/// Batches a mapped file is cut into at least (when they stay above [`MIN_BATCH_BYTES`]).
const MIN_BATCHES: u64 = 32;

/// The smallest batch [`mapped_batch`] chooses.
const MIN_BATCH_BYTES: usize = 1 << 20;

/// Cuts the next batch of a random-access input of `len` bytes at `pos`: views a window of
/// `batch` bytes (doubling it while it holds no line end) through `view`, and returns the view
/// with the batch's length.
fn cut_window<V: Deref<Target = [u8]>>(
    len: u64,
    pos: u64,
    batch: usize,
    mut view: impl FnMut(u64, u64) -> io::Result<V>,
) -> io::Result<Option<(V, usize)>> {
    if pos >= len {
        return Ok(None);
    }
    let mut want = batch as u64;
    let longest = LONGEST_WINDOW as u64;
    loop {
        let end = pos.saturating_add(want).min(len);
        let window = view(pos, end)?;
        if let Some(cut) = lines::cut_at_line_end(&window, end == len) {
            return Ok(Some((window, cut)));
        }
        // Not at the end, so the window holds `want` bytes, all of them one line's.
        if want >= longest {
            return Err(line_too_long());
        }
        want = want.saturating_mul(2).min(longest);
    }
}

fn map_window(file: &File, start: u64, end: u64) -> io::Result<Mmap> {
    let len = usize::try_from(end - start)
        .map_err(|_| io::Error::other("a batch window does not fit in memory"))?;
    // SAFETY: the map is read-only and private to this reader. Like every reader of a memory
    // map, it assumes the file is not truncated or rewritten while it is being read; tally reads
    // finished artifacts. Every byte is then treated as untrusted input (UTF-8 and JSON checked).
    #[allow(unsafe_code)]
    let map = unsafe { MmapOptions::new().offset(start).len(len).map(file)? };
    // Advice is a hint; a kernel that ignores it reads the same bytes.
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(map)
}

/// Reads up to two bytes (for the gzip magic) from the start of a file.
fn read_head(reader: &mut impl Read) -> io::Result<([u8; 2], usize)> {
    let mut head = [0u8; 2];
    let mut n = 0;
    while n < head.len() {
        match reader.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((head, n))
}

/// Starts the reader thread for a stream (decompressing it when it starts with the gzip magic).
fn stream<R: Read + Send + 'static>(
    mut reader: R,
    batch_bytes: usize,
) -> io::Result<SourceKind<'static>> {
    let (tx, rx) = sync_channel(1);
    std::thread::Builder::new()
        .name("tally-evidence-read".into())
        .spawn(move || {
            let (head, n) = match read_head(&mut reader) {
                Ok(head) => head,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            let head = Cursor::new(head[..n].to_vec());
            if head.get_ref()[..] == GZIP_MAGIC {
                let inner = BufReader::with_capacity(256 << 10, head.chain(reader));
                fill_batches(flate2::read::MultiGzDecoder::new(inner), batch_bytes, &tx);
            } else {
                fill_batches(head.chain(reader), batch_bytes, &tx);
            }
        })?;
    Ok(SourceKind::Stream(rx))
}

/// Reads `reader` to its end in batches of whole lines, sending each; stops early when the
/// receiver is gone (the load failed), on a read error, or at a line longer than the limit (the
/// error sent as the last item).
fn fill_batches(mut reader: impl Read, batch_bytes: usize, tx: &SyncSender<io::Result<Vec<u8>>>) {
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let mut buf = std::mem::take(&mut carry);
        let mut filled = buf.len();
        let mut target = batch_bytes.max(filled + 1);
        let mut at_end = false;
        let cut = loop {
            buf.resize(target, 0);
            while filled < target {
                match reader.read(&mut buf[filled..target]) {
                    Ok(0) => {
                        at_end = true;
                        break;
                    }
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
            if let Some(cut) = lines::cut_at_line_end(&buf[..filled], at_end) {
                break cut;
            }
            // Not at the end, so `target` bytes are there, all of them one line's (the buffer
            // starts at a line start): past the limit, stop reading rather than grow.
            if target >= LONGEST_WINDOW {
                let _ = tx.send(Err(line_too_long()));
                return;
            }
            target = target.saturating_mul(2).min(LONGEST_WINDOW);
        };
        carry.extend_from_slice(&buf[cut..filled]);
        buf.truncate(cut);
        if !buf.is_empty() && tx.send(Ok(buf)).is_err() {
            return;
        }
        if at_end {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_mapped_files_are_cut_finer() {
        const MIB: usize = 1 << 20;
        assert_eq!(mapped_batch(1 << 30, 16 * MIB), 16 * MIB);
        assert_eq!(mapped_batch(64 << 20, 16 * MIB), 2 * MIB);
        assert_eq!(mapped_batch(5 << 20, 16 * MIB), MIB);
        assert_eq!(mapped_batch(100, 16 * MIB), MIB);
        // An explicit small batch stays.
        assert_eq!(mapped_batch(1 << 30, 4096), 4096);
    }

    #[test]
    fn batches_shrink_towards_the_end() {
        const MIB: usize = 1 << 20;
        assert_eq!(tapered(16 * MIB, 1 << 30), 16 * MIB);
        assert_eq!(tapered(16 * MIB, 32 << 20), 8 * MIB);
        assert_eq!(tapered(16 * MIB, 2 << 20), MIB);
        assert_eq!(tapered(16 * MIB, 100), MIB);
        assert_eq!(tapered(4096, 100), 4096);
    }

    #[test]
    fn a_tapered_slice_still_yields_every_line_once() {
        // About 5 MiB: two batches of 4 MiB without the taper.
        let text: String = (0..400_000).map(|i| format!("line {i}\n")).collect();
        let mut source = Source::slice(text.as_bytes(), 4 << 20);
        let mut sizes = Vec::new();
        let mut joined = Vec::new();
        while let Some(chunk) = source.next_chunk().expect("in memory") {
            sizes.push(chunk.len());
            joined.extend_from_slice(&chunk);
        }
        assert_eq!(joined, text.as_bytes());
        assert!(sizes.len() > 2, "{sizes:?}");
        assert!(sizes.iter().all(|&n| n <= 4 << 20), "{sizes:?}");
    }
}
