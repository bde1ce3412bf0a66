//! What a rate is: at most `limit` job starts in any window of `period`,
//! counted where jobs are taken (the fetch script). Stored as text,
//! `"<limit>/<period in seconds>"`, in a queue's or a job limit's rate key
//! (src/keys.rs); read here the way the fetch script reads it (`parse_rate`
//! in lua/prelude/values.lua; the values every reader must agree on are in
//! spec/fixtures/rate_values.json).

use std::time::Duration;

use crate::limits::MAX_LIMIT;

/// The shortest period a rate may have.
pub const MIN_PERIOD: Duration = Duration::from_millis(100);
/// The longest: a week.
pub const MAX_PERIOD: Duration = Duration::from_secs(604_800);

/// At most `limit` starts in any window of `period`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    pub limit: u64,
    /// Whole microseconds: the fetch script's clock.
    pub period: Duration,
}

impl Rate {
    /// What a broken stored rate reads as: no start at all, so that it never
    /// means "unlimited".
    pub const BROKEN: Rate = Rate {
        limit: 0,
        period: Duration::from_secs(1),
    };

    /// A stored rate as the fetch script reads it: `None` without one; a
    /// value that is not `<digits>/<digits>[.<digits>]` (ASCII whitespace
    /// around each part), with a limit up to [`MAX_LIMIT`] and a period from
    /// [`MIN_PERIOD`] to [`MAX_PERIOD`], reads as [`Rate::BROKEN`].
    pub fn parse_stored(raw: Option<&str>) -> Option<Rate> {
        raw.map(|text| valid(text).unwrap_or(Rate::BROKEN))
    }

    /// As stored: the period in seconds, without trailing zeros.
    pub fn text(&self) -> String {
        let micros = self.period.as_micros();
        let (whole, fraction) = (micros / 1_000_000, micros % 1_000_000);
        if fraction == 0 {
            format!("{}/{whole}", self.limit)
        } else {
            let fraction = format!("{fraction:06}");
            format!("{}/{whole}.{}", self.limit, fraction.trim_end_matches('0'))
        }
    }
}

const SPACE: [char; 6] = [' ', '\t', '\n', '\x0b', '\x0c', '\r'];

fn valid(text: &str) -> Option<Rate> {
    let (limit, period) = text.split_once('/')?;
    let limit = limit.trim_matches(SPACE);
    let period = period.trim_matches(SPACE);
    if limit.is_empty() || !limit.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (whole, fraction) = period.split_once('.').unwrap_or((period, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) {
        return None;
    }
    let limit: u64 = limit.parse().ok().filter(|&n| n <= MAX_LIMIT)?;
    let seconds: f64 = format!("{whole}.{fraction}0").parse().ok()?;
    if !(MIN_PERIOD.as_secs_f64()..=MAX_PERIOD.as_secs_f64()).contains(&seconds) {
        return None;
    }
    // As the script rounds it: to the nearest microsecond.
    let micros = (seconds * 1_000_000.0 + 0.5).floor() as u64;
    Some(Rate {
        limit,
        period: Duration::from_micros(micros),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_reads_back_from_its_text() {
        for (limit, micros) in [
            (100, 60_000_000),
            (5, 500_000),
            (1, 100_000),
            (3, 1_250_000),
        ] {
            let rate = Rate {
                limit,
                period: Duration::from_micros(micros),
            };
            assert_eq!(Rate::parse_stored(Some(&rate.text())), Some(rate));
        }
        assert_eq!(
            Rate {
                limit: 5,
                period: Duration::from_millis(500)
            }
            .text(),
            "5/0.5"
        );
        assert_eq!(Rate::parse_stored(None), None);
        assert_eq!(Rate::parse_stored(Some("5/0.05")), Some(Rate::BROKEN));
    }
}
