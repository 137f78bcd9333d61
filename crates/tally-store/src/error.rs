//! The backends' internal error: a [`StoreError`] already, or what SQLite or PostgreSQL said,
//! which the backend's `locate` turns into a [`StoreError`] naming the store (and into
//! [`StoreError::Busy`] when the database stayed locked) before it leaves through the trait.
//!
//! It exists because the contract's error names no database library, so `?` on a `rusqlite`
//! result needs a conversion this crate owns.

pub use tally_contract::StoreError;

/// A failure inside the backend, before it is located.
#[derive(Debug)]
pub(crate) enum Error {
    /// A store error, final as it is.
    Store(StoreError),
    /// A database error whose store path `locate` fills in.
    Sqlite(rusqlite::Error),
    /// A PostgreSQL error whose store URL `postgres::locate` fills in.
    #[cfg(feature = "postgres")]
    Postgres(postgres::Error),
}

impl From<StoreError> for Error {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

#[cfg(feature = "postgres")]
impl From<postgres::Error> for Error {
    fn from(source: postgres::Error) -> Self {
        Self::Postgres(source)
    }
}

impl From<rusqlite::Error> for Error {
    fn from(source: rusqlite::Error) -> Self {
        Self::Sqlite(source)
    }
}
