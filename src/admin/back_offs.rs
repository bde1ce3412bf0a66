//! Back-offs: a job limit whose downstream said "too many requests" starts
//! no job, in any process, until its back-off ends (src/lua/back_off.lua).
//! A job backs its limit off through its capsule ([`Capsule::back_off`]:
//! the job goes back parked, first in line); the console backs one off, or
//! ends one at once, from here.
//!
//! [`Capsule::back_off`]: crate::Capsule::back_off

use std::sync::LazyLock;
use std::time::Duration;

use crate::connection::Conn;
use crate::runtime::wait_for;
use crate::script::{LuaScript, BACK_OFF, RESUME};
use crate::{keys, Error, Interrupt, Result, MAX_PERIOD};

use super::Limits;

pub(crate) static BACK_OFF_SCRIPT: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(BACK_OFF));
static RESUME_SCRIPT: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(RESUME));

/// A job limit that backs off, and for how long.
#[derive(Debug, Clone, PartialEq)]
pub struct BackOff {
    /// The job limit's id (a class's `class:<name>`, a key's).
    pub limit: String,
    /// Whether the job carries the limit; false for a class that declares
    /// none, which backs off as a class (`who` is its name).
    pub carried: bool,
    /// The job's class, or "console".
    pub who: String,
    /// The job's jid, or empty.
    pub jid: String,
    /// Seconds; `None`: the default, which grows with each back-off of the
    /// limit that follows the last (see back_off.lua).
    pub seconds: Option<f64>,
}

impl BackOff {
    /// The script's arguments after the capsule, queue and job.
    pub(crate) fn args(&self) -> Result<[String; 5]> {
        let seconds = match self.seconds {
            None => String::new(),
            Some(s) if (0.0..=MAX_PERIOD.as_secs_f64()).contains(&s) => s.to_string(),
            Some(s) => {
                return Err(Error::Invalid(format!(
                    "a back-off of {s} seconds: it must be 0 to {} seconds",
                    MAX_PERIOD.as_secs()
                )))
            }
        };
        Ok([
            self.limit.clone(),
            if self.carried { "1" } else { "0" }.to_owned(),
            self.who.clone(),
            self.jid.clone(),
            seconds,
        ])
    }
}

/// What a back-off did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackedOff {
    /// Until it ends (a back-off already in force for longer is kept).
    pub ends_in: Duration,
    /// Whether the job went back parked; false: it was no longer the
    /// capsule's (a reaper pushed it back to its queue), or there was none.
    pub parked: bool,
}

impl BackedOff {
    pub(crate) fn of((ms, parked): (u64, u8)) -> Self {
        Self {
            ends_in: Duration::from_millis(ms),
            parked: parked == 1,
        }
    }
}

impl Limits {
    /// Backs job limit `back_off.limit` off, with no job: from the console.
    pub fn back_off(&self, back_off: &BackOff, interrupt: &Interrupt) -> Result<BackedOff> {
        let args = back_off.args()?;
        let redis = self.redis().clone();
        wait_for(interrupt, self.timeout(), async move {
            let mut conn: Conn = redis.conn().await?;
            let mut all = vec![String::new(), String::new(), String::new()];
            all.extend(args);
            let reply = BACK_OFF_SCRIPT
                .invoke::<(u64, u8), _, _>(&mut conn, &[] as &[&str], &all[..])
                .await?;
            Ok(BackedOff::of(reply))
        })
    }

    /// Ends job limit `id`'s back-off now. Returns whether one held it, and
    /// how many of its parked jobs went back to their queues.
    pub fn resume(&self, id: &str, interrupt: &Interrupt) -> Result<(bool, u64)> {
        let id = id.to_owned();
        let redis = self.redis().clone();
        wait_for(interrupt, self.timeout(), async move {
            let mut conn = redis.writer().await?;
            let (ended, sent): (u64, u64) = RESUME_SCRIPT
                .invoke(&mut conn, &[] as &[&str], &[id.as_str()])
                .await?;
            Ok((ended > 0, sent))
        })
    }

    /// How many times each of `ids` backed off (a job's BackOff or the
    /// console's), counted since Redis has held the count; 0 for none. One
    /// round trip.
    pub fn back_off_counts<S: AsRef<str>>(
        &self,
        ids: &[S],
        interrupt: &Interrupt,
    ) -> Result<Vec<u64>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = ids.iter().map(|id| id.as_ref().to_owned()).collect();
        let redis = self.redis().clone();
        wait_for(interrupt, self.timeout(), async move {
            // HGETs in a pipeline, not an HMGET: a command the ACL already
            // grants (src/acl_commands.txt).
            let mut pipe = redis::pipe();
            for id in &ids {
                pipe.cmd("HGET").arg(keys::BACK_OFFS).arg(id);
            }
            let mut conn: Conn = redis.conn().await?;
            let counts: Vec<Option<u64>> = pipe.query_async(&mut conn).await?;
            Ok(counts.into_iter().map(Option::unwrap_or_default).collect())
        })
    }
}
