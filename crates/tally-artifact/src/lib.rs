//! `tally-artifact`: inference evidence artifacts as files: the JSONL reader for schema versions
//! 1–4 ([`read`]) and the writer for v2/v4 ([`write`](mod@write)), exactly as stormlog 0.4.3's
//! `correlation_codec` reads and writes them. The records are `tally-evidence`'s model; reading
//! straight into its `Resolver` ([`read::resolve_input`]) is the evidence commands' fast path.
//!
//! What it does not do: resolve, de-duplicate or account (that is `tally-evidence`, which does
//! no I/O), decide anything about records beyond the wire format's rules, print, or read the
//! clock. It is the part of the evidence half that touches files, standard input, memory maps
//! and gzip, and that starts threads: the parallel parse runs on rayon (its global pool, or a pool
//! of [`read::ReadOptions::threads`] built for one read), and a gzip file or standard input is
//! read by one background thread. The behaviour is specified in `docs/evidence.md`.

pub mod read;
pub mod write;
