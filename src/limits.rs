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

/// A queue's adaptive limit as the fetch script reads it
/// (`lua/prelude/adaptive.lua`'s `queue_adaptive`): its limit in force
/// (`value`) inside its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Adaptive {
    pub value: u64,
    pub floor: u64,
    pub ceiling: u64,
}

impl Adaptive {
    /// From a queue's limit as stored (`limit`, parsed), its range's text
    /// ([`crate::keys::limit_range`]) and its state's
    /// ([`crate::keys::adaptive`]); `None` for a fixed limit: no range, a
    /// broken one, or a limit set at run time (other than the range's
    /// floor), which holds instead.
    pub fn of(limit: LimitValue, range: Option<&str>, state: Option<&str>) -> Option<Adaptive> {
        let (floor, ceiling) = range?.split_once("..")?;
        let (floor, ceiling) = (digits(floor)?, digits(ceiling)?);
        if floor < 1 || floor > ceiling || ceiling > MAX_LIMIT || limit != Some(floor) {
            return None;
        }
        let value = state
            .and_then(|s| s.split_once(' '))
            .and_then(|(value, changed)| digits(changed).and(digits(value)))
            .filter(|&v| v <= MAX_LIMIT)
            .unwrap_or(floor);
        Some(Adaptive {
            value: value.clamp(floor, ceiling),
            floor,
            ceiling,
        })
    }
}

/// Decimal digits alone (Lua's `%d+`), or `None`; digits too many for a
/// u64 read as its largest, above every valid value.
fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.parse().unwrap_or(u64::MAX))
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

    #[test]
    fn an_adaptive_limit_reads_as_the_script_reads_it() {
        let of =
            |limit, range, state| Adaptive::of(Some(limit), Some(range), state).map(|a| a.value);
        assert_eq!(of(1, "1..20", None), Some(1));
        assert_eq!(of(1, "1..20", Some("7 1700000000000000")), Some(7));
        assert_eq!(of(1, "1..20", Some("70 1")), Some(20));
        assert_eq!(of(2, "2..20", Some("1 1")), Some(2));
        assert_eq!(of(1, "1..20", Some("7")), Some(1), "a broken state");
        assert_eq!(of(3, "1..20", Some("7 1")), None, "set at run time");
        for broken in [
            "0..3",
            "3..2",
            "1..",
            "..3",
            "1...3",
            " 1..3",
            "1..9007199254740992",
        ] {
            assert_eq!(of(1, broken, None), None, "{broken}");
        }
        assert_eq!(Adaptive::of(None, Some("1..3"), None), None);
        assert_eq!(Adaptive::of(Some(1), None, None), None);
    }
}
