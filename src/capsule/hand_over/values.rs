//! How a hand-over reads the values in its replies: a stored limit, a
//! list's length.

use redis::Value;

use crate::limits::parse_stored;

/// A stored limit as read: `Some(None)` for none, `None` for a reply that
/// is neither.
pub(super) fn stored_limit(value: &Value) -> Option<Option<u64>> {
    match value {
        Value::Nil => Some(None),
        Value::BulkString(raw) => Some(Some(limit_value(raw))),
        _ => None,
    }
}

/// A list's length (never negative).
pub(super) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// A stored limit's value as the scripts read it (limits.rs): a broken one
/// reads as 0.
fn limit_value(raw: &[u8]) -> u64 {
    std::str::from_utf8(raw)
        .ok()
        .and_then(|text| parse_stored(Some(text)))
        .unwrap_or(0)
}
