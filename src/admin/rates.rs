//! Rates administration: a queue's or a job limit's rate, read and set at
//! run time, and how full its window is now. The fetch script counts starts
//! and parks or holds back what a rate does not let start (lua/fetch/);
//! setting a job limit's rate sends the parked jobs it now has room for
//! back to their queues at once, as setting its limit does.

use std::time::Duration;

use crate::runtime::wait_for;
use crate::{keys, Interrupt, Rate, Result};

use super::job_limits::release;
use super::Limits;

/// Whose rate: a queue's (by name), or a job limit's (by id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateOf {
    Queue,
    Job,
}

impl RateOf {
    /// The key of `name`'s stored rate.
    pub fn key(self, name: &str) -> String {
        match self {
            RateOf::Queue => keys::rate(name),
            RateOf::Job => keys::job_rate(name),
        }
    }

    fn starts(self, name: &str) -> String {
        match self {
            RateOf::Queue => keys::starts(name),
            RateOf::Job => keys::job_starts(name),
        }
    }
}

/// A rate's window now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateWindow {
    /// Starts within the last period.
    pub starts: u64,
    /// When the next start may be, if not now.
    pub next_start_in: Option<Duration>,
}

impl Limits {
    /// A stored rate, read the way the fetch script reads it (a broken one
    /// reads as [`Rate::BROKEN`]); `None` without one.
    pub fn rate(&self, of: RateOf, name: &str, interrupt: &Interrupt) -> Result<Option<Rate>> {
        let redis = self.redis().clone();
        let key = of.key(name);
        wait_for(interrupt, self.timeout(), async move {
            let raw: Option<Vec<u8>> = redis::cmd("GET")
                .arg(key)
                .query_async(&mut redis.conn().await?)
                .await?;
            let raw = raw.as_deref().map(String::from_utf8_lossy);
            Ok(Rate::parse_stored(raw.as_deref()))
        })
    }

    /// Stores a rate (`None`: removes it; a job limit then has the rate its
    /// jobs carry); the next fetch obeys it. A job limit's parked jobs it
    /// now lets start go back at once; returns how many.
    pub fn set_rate(
        &self,
        of: RateOf,
        name: &str,
        rate: Option<Rate>,
        interrupt: &Interrupt,
    ) -> Result<u64> {
        let redis = self.redis().clone();
        let name = name.to_owned();
        wait_for(interrupt, self.timeout(), async move {
            let mut conn = redis.writer().await?;
            let key = of.key(&name);
            let cmd = match rate {
                Some(rate) => redis::cmd("SET").arg(key).arg(rate.text()).clone(),
                None => redis::cmd("DEL").arg(key).clone(),
            };
            cmd.query_async::<()>(&mut *conn).await?;
            match of {
                RateOf::Job => release(&mut conn, &[name]).await,
                RateOf::Queue => Ok(0),
            }
        })
    }

    /// The window of each of `rates` (whose rate, its name, the rate in
    /// force: the stored one, or a job limit's declared one), by Redis's
    /// clock, in one round trip.
    pub fn rate_windows(
        &self,
        rates: &[(RateOf, String, Rate)],
        interrupt: &Interrupt,
    ) -> Result<Vec<RateWindow>> {
        if rates.is_empty() {
            return Ok(Vec::new());
        }
        let rates = rates.to_vec();
        let redis = self.redis().clone();
        wait_for(interrupt, self.timeout(), async move {
            let mut pipe = redis::pipe();
            pipe.cmd("TIME");
            for (of, name, _) in &rates {
                pipe.cmd("ZRANGE")
                    .arg(of.starts(name))
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES");
            }
            let mut flat: Vec<redis::Value> = pipe.query_async(&mut redis.conn().await?).await?;
            let rest = flat.split_off(1);
            let (secs, micros): (u64, u64) = redis::from_redis_value(&flat[0])?;
            let now = secs * 1_000_000 + micros;
            rest.iter()
                .zip(&rates)
                .map(|(starts, (_, _, rate))| {
                    let starts: Vec<(String, f64)> = redis::from_redis_value(starts)?;
                    Ok(window(starts.iter().map(|(_, at)| *at as u64), now, *rate))
                })
                .collect()
        })
    }
}

/// The window at `now` (microseconds) of `rate`, whose starts are `starts`
/// (microseconds, oldest first), as the fetch script counts it: a start at
/// t counts until t + period.
fn window(starts: impl Iterator<Item = u64>, now: u64, rate: Rate) -> RateWindow {
    let period = u64::try_from(rate.period.as_micros()).unwrap_or(u64::MAX);
    let within: Vec<u64> = starts
        .filter(|&at| at.saturating_add(period) > now)
        .collect();
    let count = within.len() as u64;
    let next_start_in = if rate.limit == 0 {
        None
    } else if count >= rate.limit {
        let index = usize::try_from(count - rate.limit).unwrap_or(usize::MAX);
        within
            .get(index)
            .map(|at| Duration::from_micros((at + period).saturating_sub(now)))
    } else {
        None
    };
    RateWindow {
        starts: count,
        next_start_in,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_counts_starts_within_a_period_and_opens_as_the_oldest_leaves() {
        let rate = Rate {
            limit: 2,
            period: Duration::from_secs(10),
        };
        let second = 1_000_000;
        let at = |s: u64| s * second;
        let full = window([at(1), at(4), at(7)].into_iter(), at(12), rate);
        assert_eq!(full.starts, 2, "the start at 1 s left at 11 s");
        assert_eq!(full.next_start_in, Some(Duration::from_secs(2)));
        let room = window([at(4)].into_iter(), at(12), rate);
        assert_eq!((room.starts, room.next_start_in), (1, None));
        let lowered = window([at(4), at(5), at(7)].into_iter(), at(12), rate);
        assert_eq!(
            lowered.next_start_in,
            Some(Duration::from_secs(3)),
            "as 5 s leaves"
        );
    }
}
