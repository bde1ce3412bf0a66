//! A job that backs its limit off (a `BackOff` from its `perform`): instead
//! of an acknowledgement, one script sets the back-off, frees the job's
//! slots and parks the job first in line for its limit
//! (src/lua/back_off.lua). Sent at once, not riding on a fetch: the job is
//! the capsule's until Redis has it parked.

use crate::admin::{BackOff, BackedOff, BACK_OFF_SCRIPT};
use crate::ledger::Digest;
use crate::runtime::wait_for;
use crate::{keys, Interrupt, Result};

use super::{Capsule, Inner};

impl Capsule {
    /// Backs the limit `back_off` names off and parks `job`, a fetched job
    /// of `queue` that has ended, first in line for it.
    pub fn back_off(
        &self,
        queue: &str,
        job: Vec<u8>,
        back_off: BackOff,
        interrupt: &Interrupt,
    ) -> Result<BackedOff> {
        let args = back_off.args()?;
        let queue = keys::queue_name(queue).to_owned();
        let inner = self.inner.clone();
        wait_for(interrupt, self.inner.timeout, async move {
            inner.back_off(queue, job, args).await
        })
    }
}

impl Inner {
    async fn back_off(&self, queue: String, job: Vec<u8>, args: [String; 5]) -> Result<BackedOff> {
        let _shared = self.gate.read().await;
        let mut all: Vec<&[u8]> = vec![self.uuid.as_bytes(), queue.as_bytes(), &job];
        all.extend(args.iter().map(|a| a.as_bytes()));
        let sent = async {
            let mut conn = self.redis.writer().await?;
            BACK_OFF_SCRIPT
                .invoke::<(u64, u8), _, _>(&mut conn, &[] as &[&str], &all[..])
                .await
        }
        .await;
        // Whether or not Redis heard it, the job is no longer ours (as a
        // requeue's): what did not land is caught by the next reconciliation.
        self.ledger().forget(&queue, &Digest::of(&job));
        sent.map(BackedOff::of)
    }
}
