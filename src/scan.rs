//! Walks over the keyspace with `SCAN`: incremental, so never blocking
//! Redis, a step asking for [`COUNT`] keys, from cursor 0 until Redis
//! answers cursor 0 again.

use crate::connection::Conn;
use crate::Result;

/// Keys one step asks for.
pub(crate) const COUNT: u64 = 1000;

/// One step of a walk over the keys matching `pattern`, from `cursor`: the
/// cursor to go on from, and the keys it found.
pub(crate) async fn step(
    conn: &mut Conn,
    pattern: &str,
    cursor: u64,
) -> Result<(u64, Vec<String>)> {
    Ok(redis::cmd("SCAN")
        .arg(cursor)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(COUNT)
        .query_async(conn)
        .await?)
}

/// Every key matching `pattern`, in one call on `conn`.
pub(crate) async fn keys(conn: &mut Conn, pattern: &str) -> Result<Vec<String>> {
    let mut walk = Walk::default();
    while let Some(cursor) = walk.cursor() {
        walk.took(step(conn, pattern, cursor).await?);
    }
    Ok(walk.found)
}

/// Everything a walk over a cursor (SCAN's, or SSCAN's over a set) finds,
/// for a caller that runs each step as a call of its own (bounded, and
/// interruptible between steps): `step` runs the one from a cursor.
pub(crate) fn walk<S>(mut step: S) -> Result<Vec<String>>
where
    S: FnMut(u64) -> Result<(u64, Vec<String>)>,
{
    let mut walk = Walk::default();
    while let Some(cursor) = walk.cursor() {
        walk.took(step(cursor)?);
    }
    Ok(walk.found)
}

/// A walk under way: the cursor of its next step, and what its steps
/// found so far.
struct Walk {
    next: Option<u64>,
    found: Vec<String>,
}

impl Default for Walk {
    fn default() -> Self {
        Walk {
            next: Some(0),
            found: Vec::new(),
        }
    }
}

impl Walk {
    /// The cursor to run the next step from; `None` once Redis has
    /// answered cursor 0.
    fn cursor(&self) -> Option<u64> {
        self.next
    }

    /// Records a step's reply: the cursor to go on from, and what it found.
    fn took(&mut self, (next, batch): (u64, Vec<String>)) {
        self.found.extend(batch);
        self.next = (next != 0).then_some(next);
    }
}
