//! Fair share: the tenants of a class declared `fair:` that have work, for
//! the console, the CLI, the Web UI's tab and the metrics to say how its
//! slots are shared (src/lua/prelude/fair.lua divides them;
//! src/lua/fair_tenants.lua reads them).

use std::sync::LazyLock;

use crate::runtime::wait_for;
use crate::script::{LuaScript, FAIR_TENANTS};
use crate::{Interrupt, Result};

use super::Limits;

static FAIR_TENANTS_SCRIPT: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(FAIR_TENANTS));

/// A tenant of a fair class with running or parked jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct FairTenant {
    /// Its key limit's id (`key:<class>#<tenant>`).
    pub id: String,
    pub running: u64,
    pub parked: u64,
    /// Its weight, as its jobs carry it (1 unless declared).
    pub weight: f64,
}

impl Limits {
    /// The tenants of class limit `class_id` with work, by id, in one round
    /// trip.
    pub fn fair_tenants(&self, class_id: &str, interrupt: &Interrupt) -> Result<Vec<FairTenant>> {
        let redis = self.redis().clone();
        let class_id = class_id.to_owned();
        wait_for(interrupt, self.timeout(), async move {
            let mut conn = redis.conn().await?;
            let rows: Vec<(String, u64, u64, String)> = FAIR_TENANTS_SCRIPT
                .invoke(&mut conn, &[] as &[&str], &[class_id])
                .await?;
            let mut tenants: Vec<FairTenant> = rows
                .into_iter()
                .map(|(id, running, parked, weight)| FairTenant {
                    id,
                    running,
                    parked,
                    weight: weight.parse().unwrap_or(1.0),
                })
                .collect();
            tenants.sort_by(|a, b| a.id.cmp(&b.id));
            Ok(tenants)
        })
    }
}
