//! Queues' limits, read and set, and their busy slots counted (see
//! limits.rs for what a limit is and how a stored one reads).

use crate::connection::Conn;
use crate::runtime::wait_for;
use crate::{keys, Adaptive, Interrupt, LimitKind, LimitValue, Rate, Result};

use super::Limits;

/// A limit as Redis holds it, unparsed: a value written by hand may not be
/// a number (the fetch then reads it as 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLimit {
    pub queue: String,
    pub kind: LimitKind,
    pub key: String,
    /// `None` when no limit is set; not valid UTF-8 is replaced lossily.
    pub raw: Option<String>,
}

impl Limits {
    /// A limit, read the way the fetch script reads it: a queue's adaptive
    /// limit's limit in force.
    pub fn limit(&self, queue: &str, kind: LimitKind, interrupt: &Interrupt) -> Result<LimitValue> {
        let redis = self.redis.clone();
        let mut keys = vec![kind.key(queue)];
        if kind == LimitKind::Global {
            keys.extend([keys::limit_range(queue), keys::adaptive(queue)]);
        }
        wait_for(interrupt, self.timeout, async move {
            // Bytes: a value set by hand need not be UTF-8, and is then as
            // broken (0) as the fetch script reads it.
            let raw: Vec<Option<Vec<u8>>> = redis::cmd("MGET")
                .arg(&keys)
                .query_async(&mut redis.conn().await?)
                .await?;
            let text = |i: usize| {
                raw.get(i)
                    .and_then(Option::as_deref)
                    .map(|r| String::from_utf8_lossy(r).into_owned())
            };
            let limit = crate::limits::parse_stored(text(0).as_deref());
            let adaptive = Adaptive::of(limit, text(1).as_deref(), text(2).as_deref());
            Ok(adaptive.map_or(limit, |a| Some(a.value)))
        })
    }

    /// Both limits of each of `queues`, as stored, in one `MGET`.
    pub fn stored_limits<S: AsRef<str>>(
        &self,
        queues: &[S],
        interrupt: &Interrupt,
    ) -> Result<Vec<StoredLimit>> {
        let mut limits: Vec<StoredLimit> = queues
            .iter()
            .flat_map(|q| {
                [LimitKind::Global, LimitKind::Process].map(|kind| StoredLimit {
                    queue: q.as_ref().to_owned(),
                    kind,
                    key: kind.key(q.as_ref()),
                    raw: None,
                })
            })
            .collect();
        if limits.is_empty() {
            return Ok(limits);
        }
        let redis = self.redis.clone();
        wait_for(interrupt, self.timeout, async move {
            let mut mget = redis::cmd("MGET");
            for limit in &limits {
                mget.arg(&limit.key);
            }
            let raw: Vec<Option<Vec<u8>>> = mget.query_async(&mut redis.conn().await?).await?;
            for (limit, value) in limits.iter_mut().zip(raw) {
                limit.raw = value.map(|v| String::from_utf8_lossy(&v).into_owned());
            }
            Ok(limits)
        })
    }

    /// Sets (or with `None` removes) a limit; the next fetch obeys it. A
    /// job limit's parked jobs it now has room for go back at once.
    pub fn set_limit(
        &self,
        queue: &str,
        kind: LimitKind,
        value: LimitValue,
        interrupt: &Interrupt,
    ) -> Result<()> {
        if kind == LimitKind::Job {
            return self.set_job_limit(queue, value, interrupt).map(drop);
        }
        let redis = self.redis.clone();
        let key = kind.key(queue);
        // A queue's limit set at run time holds instead of its adaptive
        // range (a process that starts writes the range again; the limit
        // then holds unless it is the range's floor).
        let adaptive =
            (kind == LimitKind::Global).then(|| [keys::limit_range(queue), keys::adaptive(queue)]);
        wait_for(interrupt, self.timeout, async move {
            let mut conn = redis.writer().await?;
            let mut pipe = redis::pipe();
            pipe.atomic();
            match value {
                Some(v) => pipe.cmd("SET").arg(&key).arg(v).ignore(),
                None => pipe.cmd("DEL").arg(&key).ignore(),
            };
            if let Some(adaptive) = &adaptive {
                pipe.cmd("DEL").arg(adaptive).ignore();
            }
            pipe.query_async::<()>(&mut *conn).await?;
            Ok(())
        })
    }

    /// Writes `limits` only where Redis holds none yet, so that values
    /// changed at run time survive a restart.
    pub fn set_default_limits(
        &self,
        limits: Vec<(String, LimitKind, u64)>,
        interrupt: &Interrupt,
    ) -> Result<()> {
        self.write_defaults(limit_defaults(&limits), interrupt)
    }

    /// Writes queues' rates only where Redis holds none yet, as
    /// [`Limits::set_default_limits`].
    pub fn set_default_rates(
        &self,
        rates: Vec<(String, Rate)>,
        interrupt: &Interrupt,
    ) -> Result<()> {
        self.write_defaults(rate_defaults(&rates), interrupt)
    }

    /// Writes queues' adaptive ranges (`(queue, floor, ceiling)`) only
    /// where Redis holds none yet, as [`Limits::set_default_limits`]: their
    /// floors are among the default limits, written first.
    pub fn set_default_ranges(
        &self,
        ranges: Vec<(String, u64, u64)>,
        interrupt: &Interrupt,
    ) -> Result<()> {
        self.write_defaults(range_defaults(&ranges), interrupt)
    }

    fn write_defaults(&self, values: Vec<(String, String)>, interrupt: &Interrupt) -> Result<()> {
        let redis = self.redis.clone();
        wait_for(interrupt, self.timeout, async move {
            write_defaults(&mut *redis.writer().await?, &values)
                .await
                .map(drop)
        })
    }

    /// Busy slots of `queue`: across all capsules, and capsule `uuid`'s.
    pub fn busy(&self, queue: &str, uuid: &str, interrupt: &Interrupt) -> Result<(u64, u64)> {
        let redis = self.redis.clone();
        let key = keys::busy(queue);
        let uuid = uuid.to_owned();
        wait_for(interrupt, self.timeout, async move {
            let (all, mine): (u64, Vec<u64>) = redis::pipe()
                .cmd("LLEN")
                .arg(&key)
                .cmd("LPOS")
                .arg(&key)
                .arg(&uuid)
                .arg("COUNT")
                .arg(0)
                .query_async(&mut redis.conn().await?)
                .await?;
            Ok((all, mine.len() as u64))
        })
    }
}

/// Configured limits as the keys and values Redis stores.
pub(crate) fn limit_defaults(limits: &[(String, LimitKind, u64)]) -> Vec<(String, String)> {
    limits
        .iter()
        .map(|(name, kind, value)| (kind.key(name), value.to_string()))
        .collect()
}

/// Configured queue rates as the keys and values Redis stores.
pub(crate) fn rate_defaults(rates: &[(String, Rate)]) -> Vec<(String, String)> {
    rates
        .iter()
        .map(|(queue, rate)| (keys::rate(queue), rate.text()))
        .collect()
}

/// Configured adaptive ranges as the keys and values Redis stores.
pub(crate) fn range_defaults(ranges: &[(String, u64, u64)]) -> Vec<(String, String)> {
    ranges
        .iter()
        .map(|(queue, floor, ceiling)| (keys::limit_range(queue), format!("{floor}..{ceiling}")))
        .collect()
}

/// `SET key value NX` of each, in one pipeline; how many it wrote.
pub(crate) async fn write_defaults(conn: &mut Conn, values: &[(String, String)]) -> Result<usize> {
    if values.is_empty() {
        return Ok(0);
    }
    let mut pipe = redis::pipe();
    for (key, value) in values {
        pipe.cmd("SET").arg(key).arg(value).arg("NX");
    }
    let written: Vec<Option<String>> = pipe.query_async(conn).await?;
    Ok(written.iter().flatten().count())
}
