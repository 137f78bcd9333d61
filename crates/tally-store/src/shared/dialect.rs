//! The two SQL dialects' differences that shared statements meet: placeholders (`?1` in
//! SQLite, `$1` in PostgreSQL) and how a row hands out a column ([`Cells`]).

use crate::error::{Error, StoreError};

/// A statement written with `?N` placeholders, spelled with PostgreSQL's `$N`. A `?` not
/// followed by a digit (none of the shared statements has one, in text or otherwise) is kept.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn dollar(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

/// A result row of either driver, read column by column (integers are `i64` on both: SQLite's
/// `INTEGER`, PostgreSQL's `BIGINT`).
pub(crate) trait Cells {
    /// An integer column (`None` for SQL `NULL`).
    fn int(&self, idx: usize) -> Result<Option<i64>, Error>;
    /// A text column.
    fn text(&self, idx: usize) -> Result<Option<String>, Error>;
    /// A floating-point column.
    fn real(&self, idx: usize) -> Result<Option<f64>, Error>;

    /// A `NOT NULL` integer column as any integer type that holds it.
    fn number<T: TryFrom<i64>>(&self, idx: usize, what: &str) -> Result<T, Error> {
        self.opt_number(idx, what)?
            .ok_or_else(|| bad(what, "it is NULL".to_owned()))
    }

    /// A nullable integer column as any integer type that holds it.
    fn opt_number<T: TryFrom<i64>>(&self, idx: usize, what: &str) -> Result<Option<T>, Error> {
        self.int(idx)?
            .map(|v| T::try_from(v).map_err(|_| bad(what, format!("{v} is out of range"))))
            .transpose()
    }

    /// A `NOT NULL` text column.
    fn string(&self, idx: usize, what: &str) -> Result<String, Error> {
        self.text(idx)?
            .ok_or_else(|| bad(what, "it is NULL".to_owned()))
    }
}

/// A stored value that cannot be what the schema allows.
pub(crate) fn bad(what: &str, why: String) -> Error {
    StoreError::invalid(format!("stored {what}"), why).into()
}

impl Cells for rusqlite::Row<'_> {
    fn int(&self, idx: usize) -> Result<Option<i64>, Error> {
        Ok(self.get(idx)?)
    }

    fn text(&self, idx: usize) -> Result<Option<String>, Error> {
        Ok(self.get(idx)?)
    }

    fn real(&self, idx: usize) -> Result<Option<f64>, Error> {
        Ok(self.get(idx)?)
    }
}

#[cfg(feature = "postgres")]
impl Cells for postgres::Row {
    fn int(&self, idx: usize) -> Result<Option<i64>, Error> {
        Ok(self.try_get(idx)?)
    }

    fn text(&self, idx: usize) -> Result<Option<String>, Error> {
        Ok(self.try_get(idx)?)
    }

    fn real(&self, idx: usize) -> Result<Option<f64>, Error> {
        Ok(self.try_get(idx)?)
    }
}

#[cfg(test)]
mod tests {
    use super::dollar;

    #[test]
    fn numbered_placeholders_become_dollars() {
        assert_eq!(
            dollar("UPDATE t SET a = ?3 WHERE b = ?1 AND c = ?12"),
            "UPDATE t SET a = $3 WHERE b = $1 AND c = $12"
        );
        assert_eq!(dollar("SELECT '?' , ?x"), "SELECT '?' , ?x");
    }
}
