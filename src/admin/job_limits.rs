//! Job limits administration: a job class's limit, or one key's, read and
//! set by id at run time (a console, a control plane). The fetch script
//! enforces them and parks what they hold back; setting one sends the
//! parked jobs it now has room for back to their queues at once, and each
//! heartbeat sweeps a few limits with parked jobs for room freed any other
//! way (see release.lua).

use std::sync::LazyLock;

use crate::connection::Conn;
use crate::runtime::wait_for;
use crate::script::{LuaScript, ACTIVE, RELEASE};
use crate::{keys, Interrupt, LimitValue, Rate, Result};

use super::Limits;

static RELEASE_SCRIPT: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(RELEASE));
static ACTIVE_SCRIPT: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(ACTIVE));

/// How many limits with parked jobs one heartbeat checks (`SSCAN` COUNT).
const SWEEP: u64 = 100;

/// A job limit as Redis holds it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLimitState {
    pub id: String,
    /// Set at run time; `None`: each job's own default applies.
    pub stored: LimitValue,
    /// Jobs carrying it that run now (their slots, across every capsule).
    pub running: u64,
    /// Jobs set aside until it has room.
    pub parked: u64,
    /// Its rate set at run time, as the fetch reads it; `None`: each job's
    /// own (if any) applies.
    pub stored_rate: Option<Rate>,
    /// The back-off that holds it now, if any.
    pub back_off: Option<BackOffState>,
    /// An adaptive limit's limit in force, as stored (its jobs carry its
    /// floor and ceiling, which bound it); `None`: none yet, or forgotten.
    pub adaptive: Option<u64>,
}

/// A back-off in force: how long it has left, and who backed the limit off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackOffState {
    pub left: std::time::Duration,
    /// The class of the job that backed it off, or "console".
    pub by: String,
    /// That job's jid (empty from the console).
    pub jid: String,
}

impl BackOffState {
    /// From the stored text `"<until> <class> <jid>"` and its key's PTTL.
    fn read(raw: Option<&[u8]>, pttl: i64) -> Option<Self> {
        let text = String::from_utf8_lossy(raw?);
        let mut parts = text.splitn(3, ' ');
        parts.next()?.parse::<u64>().ok()?;
        Some(Self {
            left: std::time::Duration::from_millis(u64::try_from(pttl).ok()?),
            by: parts.next().unwrap_or_default().to_owned(),
            jid: parts.next().unwrap_or_default().to_owned(),
        })
    }
}

impl Limits {
    /// Each of `ids` as Redis holds it now, in one round trip.
    pub fn job_limits<S: AsRef<str>>(
        &self,
        ids: &[S],
        interrupt: &Interrupt,
    ) -> Result<Vec<JobLimitState>> {
        let ids: Vec<String> = ids.iter().map(|id| id.as_ref().to_owned()).collect();
        let redis = self.redis().clone();
        wait_for(interrupt, self.timeout(), async move {
            let mut pipe = redis::pipe();
            for id in &ids {
                pipe.cmd("GET").arg(keys::job_limit(id));
                pipe.cmd("LLEN").arg(keys::job_busy(id));
                pipe.cmd("LLEN").arg(keys::parked(id));
                pipe.cmd("GET").arg(keys::job_rate(id));
                pipe.cmd("GET").arg(keys::job_back_off(id));
                pipe.cmd("PTTL").arg(keys::job_back_off(id));
                pipe.cmd("GET").arg(keys::job_adaptive(id));
            }
            type Reply = (
                Option<Vec<u8>>,
                u64,
                u64,
                Option<Vec<u8>>,
                Option<Vec<u8>>,
                i64,
                Option<Vec<u8>>,
            );
            let replies: Vec<Reply> = if ids.is_empty() {
                Vec::new()
            } else {
                let flat: Vec<redis::Value> = pipe.query_async(&mut redis.conn().await?).await?;
                flat.chunks(7)
                    .map(|c| redis::from_redis_value(&redis::Value::Array(c.to_vec())))
                    .collect::<redis::RedisResult<_>>()?
            };
            Ok(ids
                .into_iter()
                .zip(replies)
                .map(
                    |(id, (raw, running, parked, rate, back_off, left, adaptive))| {
                        let raw = raw.as_deref().map(String::from_utf8_lossy);
                        let rate = rate.as_deref().map(String::from_utf8_lossy);
                        JobLimitState {
                            id,
                            stored: crate::limits::parse_stored(raw.as_deref()),
                            running,
                            parked,
                            stored_rate: Rate::parse_stored(rate.as_deref()),
                            back_off: BackOffState::read(back_off.as_deref(), left),
                            adaptive: adaptive
                                .as_deref()
                                .and_then(|raw| std::str::from_utf8(raw).ok())
                                .and_then(|text| text.split(' ').next())
                                .and_then(|value| value.parse().ok()),
                        }
                    },
                )
                .collect())
        })
    }

    /// Stores a job limit's value (`None`: back to each job's default), and
    /// sends the parked jobs it now has room for back to their queues.
    /// Returns how many it sent.
    pub fn set_job_limit(&self, id: &str, value: LimitValue, interrupt: &Interrupt) -> Result<u64> {
        let redis = self.redis().clone();
        let id = id.to_owned();
        wait_for(interrupt, self.timeout(), async move {
            let mut conn = redis.writer().await?;
            let cmd = match value {
                Some(v) => redis::cmd("SET").arg(keys::job_limit(&id)).arg(v).clone(),
                None => redis::cmd("DEL").arg(keys::job_limit(&id)).clone(),
            };
            cmd.query_async::<()>(&mut *conn).await?;
            release(&mut conn, &[id]).await
        })
    }

    /// The ids of the job limits with running or parked jobs: those some
    /// registered capsule holds a slot of, and those with parked jobs
    /// (active.lua).
    pub fn active_job_limits(&self, interrupt: &Interrupt) -> Result<Vec<String>> {
        let redis = self.redis().clone();
        wait_for(interrupt, self.timeout(), async move {
            let mut conn = redis.conn().await?;
            let mut ids: Vec<String> = ACTIVE_SCRIPT
                .invoke(&mut conn, &[] as &[&str], &[] as &[&str])
                .await?;
            ids.sort();
            Ok(ids)
        })
    }
}

/// Sends the parked jobs of `ids` their limits have room for back to their
/// queues; returns how many.
pub(crate) async fn release(conn: &mut Conn, ids: &[String]) -> Result<u64> {
    if ids.is_empty() {
        return Ok(0);
    }
    RELEASE_SCRIPT.invoke(conn, &[] as &[&str], ids).await
}

/// One heartbeat's part of the sweep of limits with parked jobs: checks the
/// next few from `cursor` (0: start over); returns the cursor to go on
/// from and how many jobs it sent back.
pub(crate) async fn sweep(conn: &mut Conn, cursor: u64) -> Result<(u64, u64)> {
    let (next, ids): (u64, Vec<String>) = redis::cmd("SSCAN")
        .arg(keys::LIMITS_WITH_PARKED)
        .arg(cursor)
        .arg("COUNT")
        .arg(SWEEP)
        .query_async(conn)
        .await?;
    Ok((next, release(conn, &ids).await?))
}
