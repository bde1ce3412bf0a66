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

/// The commands' names in a packed pipeline whose arguments hold no line
/// break (the pipelines' unit tests).
#[cfg(test)]
pub(super) fn command_names(packed: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(packed).unwrap_or_default();
    let mut lines = text.split("\r\n");
    let mut names = vec![];
    while let Some(count) = lines.next().and_then(|l| l.strip_prefix('*')) {
        let args: usize = count.parse().unwrap_or(0);
        let mut words = (0..args).filter_map(|_| lines.nth(1));
        names.extend(words.next().map(str::to_owned));
        words.for_each(drop);
    }
    names
}
