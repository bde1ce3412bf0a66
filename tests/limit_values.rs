//! Every reader of a stored limit agrees on the table of values in
//! `spec/fixtures/limit_values.json`: here the core's (`Capsule::limit`) and
//! the scripts' (`read_limit`, and the fetch); `spec/sidekiq/limit_fetch/
//! limit_values_spec.rb` holds Ruby's to the same table.

mod support;

use limit_fetch_core::{keys, Capsule, Interrupt, LimitKind};
use redis::Commands;
use support::{capsule, eval_after_prelude, limit_values, push, queue, redis};

/// Values up to this are pinned exactly through the fetch: with that many
/// slots booked it takes nothing, with one fewer it takes a job.
const PINNED_THROUGH_FETCH: u64 = 20;

fn store(q: &str, kind: LimitKind, raw: &str) {
    let _: () = redis().set(kind.key(q), raw).unwrap();
}

/// Books `n` slots of `q` that count against `kind`: any capsule's for the
/// global limit, `capsule`'s own for the process limit.
fn book(capsule: &Capsule, q: &str, kind: LimitKind, n: u64) {
    let owner = match kind {
        LimitKind::Global => "another-capsule",
        LimitKind::Process => capsule.uuid(),
        LimitKind::Job => unreachable!("the fetch's job limits are pinned in job_limits.rs"),
    };
    for _ in 0..n {
        let _: () = redis().rpush(keys::busy(q), owner).unwrap();
    }
}

/// Whether a fetch takes a job of `q`; a failed fetch is a mismatch too.
fn takes_a_job(capsule: &Capsule, q: &str) -> Result<bool, String> {
    match capsule.fetch(&[q], &Interrupt::new()) {
        Ok(fetched) => Ok(fetched.is_some()),
        Err(err) => Err(format!("the fetch failed: {err}")),
    }
}

#[test]
fn the_core_reads_every_stored_value_as_the_table_says() {
    let capsule = capsule();
    let none = Interrupt::new();
    let mut mismatches = Vec::new();
    for (raw, reads_as) in limit_values() {
        for kind in [LimitKind::Global, LimitKind::Process, LimitKind::Job] {
            let q = queue("values");
            store(&q, kind, &raw);
            let read = capsule.limits().limit(&q, kind, &none).unwrap();
            if read != Some(reads_as.unwrap_or(0)) {
                mismatches.push(format!("{kind:?} {raw:?} read as {read:?}"));
            }
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

#[test]
fn the_scripts_read_every_stored_value_as_the_table_says() {
    let q = queue("values");
    let key = keys::limit(&q);
    let read = || -> Option<u64> { eval_after_prelude("return read_limit(KEYS[1])", &[&key], &[]) };
    assert_eq!(read(), None, "no value: no limit");
    let mut mismatches = Vec::new();
    for (raw, reads_as) in limit_values() {
        let _: () = redis().set(&key, &raw).unwrap();
        let got = read();
        if got != Some(reads_as.unwrap_or(0)) {
            mismatches.push(format!("{raw:?} read as {got:?}"));
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}

#[test]
fn the_fetch_script_reads_every_stored_value_as_the_table_says() {
    let capsule = capsule();
    let mut mismatches = Vec::new();
    for (raw, reads_as) in limit_values() {
        let limit = reads_as.unwrap_or(0);
        for kind in [LimitKind::Global, LimitKind::Process] {
            let q = queue("values");
            push(&q, 1);
            store(&q, kind, &raw);
            let mut expect = |took: bool, slots: u64| match takes_a_job(&capsule, &q) {
                Ok(t) if t == took => true,
                Ok(t) => {
                    let what = if t { "took a job" } else { "took nothing" };
                    mismatches.push(format!(
                        "{kind:?} {raw:?}: {what} with {slots} slots booked"
                    ));
                    false
                }
                Err(err) => {
                    mismatches.push(format!("{kind:?} {raw:?}: {err}"));
                    false
                }
            };
            if limit <= PINNED_THROUGH_FETCH {
                book(&capsule, &q, kind, limit);
                if !expect(false, limit) || limit == 0 {
                    continue;
                }
                let _: () = redis().lpop(keys::busy(&q), None).unwrap();
                expect(true, limit - 1);
            } else {
                expect(true, 0);
            }
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
