use crate::keys;

/// Which of a queue's two limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitKind {
    /// Jobs of the queue in progress across every process on this Redis.
    Global,
    /// Jobs of the queue in progress in one capsule.
    Process,
}

/// A limit as stored: `None` means unlimited.
pub type LimitValue = Option<u64>;

impl LimitKind {
    pub fn key(self, queue: &str) -> String {
        match self {
            LimitKind::Global => keys::limit(queue),
            LimitKind::Process => keys::process_limit(queue),
        }
    }
}

/// Reads a stored limit the way the selector script does: anything that is
/// not a non-negative integer counts as 0, so a broken limit never means
/// "unlimited".
pub fn parse_stored(raw: Option<&str>) -> LimitValue {
    raw.map(|s| s.trim().parse::<u64>().unwrap_or(0))
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
    }
}
