use crate::keys;

/// Which limit: one of a queue's two, or a job limit (see admin/job_limits.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitKind {
    /// Jobs of the queue in progress across every process on this Redis.
    Global,
    /// Jobs of the queue in progress in one capsule.
    Process,
    /// Jobs carrying the job limit (a class's, a key's) in progress across
    /// every process, named by its id rather than a queue.
    Job,
}

/// A limit as stored: `None` means unlimited.
pub type LimitValue = Option<u64>;

impl LimitKind {
    pub fn key(self, queue: &str) -> String {
        match self {
            LimitKind::Global => keys::limit(queue),
            LimitKind::Process => keys::process_limit(queue),
            LimitKind::Job => keys::job_limit(queue),
        }
    }
}

/// The largest valid limit, 2^53 - 1: the fetch script's numbers are
/// doubles, which hold every integer up to it exactly. No queue has that many
/// jobs running, so a larger value is a broken one, not "no limit".
pub const MAX_LIMIT: u64 = (1 << 53) - 1;

/// Reads a stored limit the way the fetch script does (`read_limit` in
/// `lua/prelude/values.lua`; the values all readers must agree on are in
/// `spec/fixtures/limit_values.json`): decimal digits, with ASCII whitespace
/// around (Lua's `%s`), up to [`MAX_LIMIT`]. Anything else counts as 0, so a
/// broken limit never means "unlimited".
pub fn parse_stored(raw: Option<&str>) -> LimitValue {
    raw.map(|s| valid(s).unwrap_or(0))
}

fn valid(raw: &str) -> Option<u64> {
    let digits = raw.trim_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    // `parse` alone would take a leading '+'.
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|&n| n <= MAX_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_limits_read_as_zero() {
        assert_eq!(parse_stored(None), None);
        assert_eq!(parse_stored(Some("7")), Some(7));
        assert_eq!(parse_stored(Some("-1")), Some(0));
        assert_eq!(parse_stored(Some("2.5")), Some(0));
        assert_eq!(parse_stored(Some("abc")), Some(0));
        assert_eq!(parse_stored(Some("+5")), Some(0));
        assert_eq!(parse_stored(Some("9007199254740991")), Some(MAX_LIMIT));
        assert_eq!(parse_stored(Some("9007199254740992")), Some(0));
    }
}
