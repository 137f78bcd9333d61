//! Integration tests of `tally-artifact`, one binary: the reader on files and bytes (conformance
//! files, the error catalogue and check order, the physical layer, Python-isms, batch and thread
//! independence, resolving while reading).

mod read;
