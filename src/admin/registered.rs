//! The registered capsules as a control plane sees them: what each says of
//! itself (its process's Sidekiq identity, its queues: written by the Ruby
//! side, stored by the core at each heartbeat, never read by it) and how
//! long its heartbeat has left; a capsule whose heartbeat is gone is dead,
//! waiting for the next heartbeat of another process to reap it. Needs no
//! capsule (see admin/mod.rs).

use crate::runtime::wait_for;
use crate::{keys, Interrupt, Result};

use super::Limits;

/// How long a capsule's description outlives its last heartbeat, unless a
/// reaper or its deregistration deletes it first: a backstop for capsules
/// no process of this gem reaps.
pub(crate) const INFO_TTL_SECS: u64 = 24 * 60 * 60;

/// One registered capsule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapsuleEntry {
    pub uuid: String,
    /// What it says of itself (see `keys::capsule_info`), if anything: a
    /// capsule of `sidekiq-limit_fetch` v5 says nothing.
    pub info: Option<String>,
    /// Milliseconds its heartbeat key has left; `None` once it expired.
    pub heartbeat_left_ms: Option<u64>,
}

impl Limits {
    /// Every registered capsule, by UUID (this gem's and v5's), in one
    /// `SUNION` and one pipeline.
    pub fn capsules(&self, interrupt: &Interrupt) -> Result<Vec<CapsuleEntry>> {
        let redis = self.redis().clone();
        wait_for(interrupt, self.timeout(), async move {
            let mut conn = redis.conn().await?;
            let mut uuids: Vec<String> = redis::cmd("SUNION")
                .arg(keys::CAPSULES)
                .arg(keys::REGISTERED)
                .query_async(&mut conn)
                .await?;
            if uuids.is_empty() {
                return Ok(Vec::new());
            }
            uuids.sort();
            let mut pipe = redis::pipe();
            for uuid in &uuids {
                pipe.cmd("GET").arg(keys::capsule_info(uuid));
                pipe.cmd("PTTL").arg(keys::heartbeat(uuid));
            }
            let flat: Vec<redis::Value> = pipe.query_async(&mut conn).await?;
            let replies: Vec<(Option<Vec<u8>>, i64)> = flat
                .chunks(2)
                .map(|c| redis::from_redis_value(&redis::Value::Array(c.to_vec())))
                .collect::<redis::RedisResult<_>>()?;
            Ok(uuids
                .into_iter()
                .zip(replies)
                .map(|(uuid, (info, pttl))| CapsuleEntry {
                    uuid,
                    info: info.map(|i| String::from_utf8_lossy(&i).into_owned()),
                    // -1 (no TTL: set by hand) counts as alive, as the
                    // reaper counts it.
                    heartbeat_left_ms: match pttl {
                        -2 => None,
                        ms => Some(ms.max(0).unsigned_abs()),
                    },
                })
                .collect())
        })
    }
}
