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

/// A class declared `fair:` whose tenants have work.
#[derive(Debug, Clone, PartialEq)]
pub struct FairClass {
    /// Its class limit's id (`class:<class>`).
    pub id: String,
    /// Its tenants with work, by id.
    pub tenants: Vec<FairTenant>,
}

/// A row of fair_tenants.lua: a tenant's id, running, parked, weight as
/// text, and its class's id.
type Row = (String, u64, u64, String, String);

impl Limits {
    /// The tenants of class limit `class_id` with work, by id, in one round
    /// trip.
    pub fn fair_tenants(&self, class_id: &str, interrupt: &Interrupt) -> Result<Vec<FairTenant>> {
        let rows = self.fair_rows(Some(class_id), interrupt)?;
        let mut tenants: Vec<FairTenant> = rows.into_iter().map(|(_, tenant)| tenant).collect();
        tenants.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(tenants)
    }

    /// Every class declared `fair:` whose tenants have work, by id, each
    /// with its tenants by id, in one round trip: for a page or a scrape
    /// that lists job limits by id.
    pub fn fair_classes(&self, interrupt: &Interrupt) -> Result<Vec<FairClass>> {
        let mut classes: Vec<FairClass> = Vec::new();
        let mut rows = self.fair_rows(None, interrupt)?;
        rows.sort_by(|a, b| (&a.0, &a.1.id).cmp(&(&b.0, &b.1.id)));
        for (class, tenant) in rows {
            match classes.last_mut() {
                Some(last) if last.id == class => last.tenants.push(tenant),
                _ => classes.push(FairClass {
                    id: class,
                    tenants: vec![tenant],
                }),
            }
        }
        Ok(classes)
    }

    /// fair_tenants.lua's rows, of `class_id` or of every fair class, as
    /// (class id, tenant).
    fn fair_rows(
        &self,
        class_id: Option<&str>,
        interrupt: &Interrupt,
    ) -> Result<Vec<(String, FairTenant)>> {
        let redis = self.redis().clone();
        let args: Vec<String> = class_id.into_iter().map(str::to_owned).collect();
        wait_for(interrupt, self.timeout(), async move {
            let mut conn = redis.conn().await?;
            let rows: Vec<Row> = FAIR_TENANTS_SCRIPT
                .invoke(&mut conn, &[] as &[&str], &args)
                .await?;
            Ok(rows
                .into_iter()
                .map(|(id, running, parked, weight, class)| {
                    let tenant = FairTenant {
                        id,
                        running,
                        parked,
                        weight: weight.parse().unwrap_or(1.0),
                    };
                    (class, tenant)
                })
                .collect())
        })
    }
}
