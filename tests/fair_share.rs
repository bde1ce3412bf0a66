//! Fair share (src/lua/prelude/fair.lua) against a real Redis: a class
//! declared `fair:` gives all its slots to a tenant alone; a job that finds
//! its class full parks as its tenant's; each slot that frees goes to the
//! tenant holding the fewest slots for its weight; the class's limit is
//! never exceeded.

mod support;

use std::collections::HashMap;

use limit_fetch_core::{keys, Capsule, Fetched, Interrupt};
use redis::Commands;
use support::{capsule_whose_acks_ride, jid_of, push_jobs, queue, redis};

/// A job of tenant `tenant` (weight `weight`) of class Fair{q} whose
/// `concurrency` slots are shared, as the client middleware writes it.
fn fair(q: &str, tenant: &str, n: usize, weight: u64, concurrency: u64) -> String {
    let weight = if weight == 1 {
        String::new()
    } else {
        format!(r#","weight":{weight}"#)
    };
    format!(
        r#"{{"limit_fetch":[{{"id":"key:Fair{q}#{tenant}","fair":"class:Fair{q}"{weight}}},{{"id":"class:Fair{q}","concurrency":{concurrency}}}],"queue":"{q}","class":"Fair{q}","args":["{tenant}"],"jid":"{tenant}{n}"}}"#
    )
}

fn jobs(q: &str, tenant: &str, count: usize, weight: u64, concurrency: u64) -> Vec<String> {
    (0..count)
        .map(|n| fair(q, tenant, n, weight, concurrency))
        .collect()
}

fn processor() -> Capsule {
    let capsule = capsule_whose_acks_ride();
    capsule.register(&Interrupt::new()).unwrap();
    capsule
}

fn fetch(capsule: &Capsule, q: &str) -> Option<Fetched> {
    capsule.fetch(&[q], &Interrupt::new()).unwrap()
}

fn tenant(job: &Fetched) -> String {
    let jid = jid_of(&String::from_utf8_lossy(&job.job));
    jid.trim_end_matches(|c: char| c.is_ascii_digit())
        .to_owned()
}

/// Running jobs by tenant.
fn by_tenant(running: &[Fetched]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for job in running {
        *counts.entry(tenant(job)).or_default() += 1;
    }
    counts
}

/// Fetches until nothing more starts, checking the class's slots.
fn fill(c: &Capsule, q: &str, running: &mut Vec<Fetched>, concurrency: usize) {
    while let Some(job) = fetch(c, q) {
        running.push(job);
        let busy: usize = redis()
            .llen(keys::job_busy(&format!("class:Fair{q}")))
            .unwrap();
        assert!(
            busy <= concurrency,
            "the class holds {busy} of {concurrency}"
        );
    }
}

/// Ends the oldest running job; the next fetch carries its acknowledgement
/// and takes what its freed slot lets go.
fn finish_one(c: &Capsule, q: &str, running: &mut Vec<Fetched>, concurrency: usize) {
    let done = running.remove(0);
    c.acknowledge(q, done.job);
    fill(c, q, running, concurrency);
}

#[test]
fn a_tenant_alone_takes_every_slot() {
    let q = queue("alone");
    push_jobs(&q, &jobs(&q, "a", 10, 1, 4));
    let c = processor();
    let mut running = Vec::new();
    fill(&c, &q, &mut running, 4);
    assert_eq!(running.len(), 4, "all 4 slots to the tenant alone");
    for _ in 0..6 {
        finish_one(&c, &q, &mut running, 4);
        assert_eq!(running.len(), 4, "each freed slot goes to it again");
    }
}

/// Tenant b arrives behind a's backlog: the slots a frees go to b until
/// each holds its share, and a job never overtakes its tenant's older one.
#[test]
fn freed_slots_go_to_the_tenant_with_the_fewest() {
    let q = queue("turns");
    push_jobs(&q, &jobs(&q, "a", 20, 1, 4));
    let c = processor();
    let mut running = Vec::new();
    fill(&c, &q, &mut running, 4);
    assert_eq!(by_tenant(&running)["a"], 4);
    push_jobs(&q, &jobs(&q, "b", 10, 1, 4));
    push_jobs(&q, &jobs(&q, "c", 10, 1, 4));
    // The fetches above parked a's backlog and reached b's and c's jobs.
    fill(&c, &q, &mut running, 4);
    let waiting: Vec<String> = redis()
        .zrange(keys::fair_waiting(&format!("class:Fair{q}")), 0, -1)
        .unwrap();
    assert_eq!(waiting.len(), 3, "a, b and c wait: {waiting:?}");
    let mut started = Vec::new();
    for _ in 0..12 {
        let before = running.len();
        finish_one(&c, &q, &mut running, 4);
        assert_eq!(running.len(), before, "a freed slot is taken at once");
        started.push(tenant(running.last().unwrap()));
    }
    assert!(
        started[..2].iter().all(|t| t != "a"),
        "b and c take a's first freed slots: {started:?}"
    );
    let counts = by_tenant(&running);
    for t in ["a", "b", "c"] {
        let n = counts.get(t).copied().unwrap_or(0);
        assert!((1..=2).contains(&n), "{t} holds {n} of 4: {counts:?}");
    }
    let jids: Vec<String> = running
        .iter()
        .map(|j| jid_of(&String::from_utf8_lossy(&j.job)))
        .collect();
    for t in ["b", "c"] {
        let mut mine: Vec<usize> = jids
            .iter()
            .filter(|j| j.starts_with(t))
            .map(|j| j[1..].parse().unwrap())
            .collect();
        mine.sort();
        assert!(
            mine.windows(2).all(|w| w[0] < w[1]),
            "{t} in order: {jids:?}"
        );
    }
}

#[test]
fn slots_follow_the_weights() {
    let q = queue("weights");
    push_jobs(&q, &jobs(&q, "gold", 30, 3, 5));
    push_jobs(&q, &jobs(&q, "b", 30, 1, 5));
    push_jobs(&q, &jobs(&q, "c", 30, 1, 5));
    let c = processor();
    let mut running = Vec::new();
    fill(&c, &q, &mut running, 5);
    for _ in 0..25 {
        finish_one(&c, &q, &mut running, 5);
    }
    let counts = by_tenant(&running);
    assert_eq!(
        counts.get("gold"),
        Some(&3),
        "3 of 5 for weight 3 of 5: {counts:?}"
    );
    assert_eq!(counts.get("b"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("c"), Some(&1), "{counts:?}");
}

/// A tenant's own limit caps it below its share; the slots it cannot use
/// go to the others. A release with no turn (a limit set, a beat's sweep)
/// sends no more than the class has room for.
#[test]
fn a_tenants_own_limit_holds_and_its_slots_go_to_the_others() {
    let q = queue("own");
    let a = format!("key:Fair{q}#a");
    push_jobs(&q, &jobs(&q, "a", 20, 1, 4));
    push_jobs(&q, &jobs(&q, "b", 20, 1, 4));
    let c = processor();
    let mut running = Vec::new();
    fill(&c, &q, &mut running, 4);
    assert_eq!(by_tenant(&running)["a"], 4);
    let parked_a: usize = redis().llen(keys::parked(&a)).unwrap();
    assert!(parked_a > 0, "a's backlog parked");
    let sent = c
        .limits()
        .set_job_limit(&a, Some(1), &Interrupt::new())
        .unwrap();
    assert_eq!(sent, 0, "the class is full: nothing sent back");
    assert_eq!(
        redis().llen::<_, usize>(keys::parked(&a)).unwrap(),
        parked_a
    );
    for _ in 0..10 {
        finish_one(&c, &q, &mut running, 4);
    }
    let counts = by_tenant(&running);
    assert_eq!(counts.get("a"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("b"), Some(&3), "{counts:?}");
    let sent = c
        .limits()
        .set_job_limit(&a, None, &Interrupt::new())
        .unwrap();
    assert_eq!(sent, 0, "the class is full: nothing sent back");
}

/// The console's read: the tenants with work, running and parked, each
/// with the weight its jobs carry.
#[test]
fn the_tenants_with_work_are_read_with_their_weights() {
    let q = queue("read");
    push_jobs(&q, &jobs(&q, "gold", 6, 3, 4));
    push_jobs(&q, &jobs(&q, "b", 3, 1, 4));
    let c = processor();
    let mut running = Vec::new();
    fill(&c, &q, &mut running, 4);
    let tenants = c
        .limits()
        .fair_tenants(&format!("class:Fair{q}"), &Interrupt::new())
        .unwrap();
    let read: Vec<(String, u64, u64, f64)> = tenants
        .into_iter()
        .map(|t| (t.id, t.running, t.parked, t.weight))
        .collect();
    assert_eq!(
        read,
        [
            (format!("key:Fair{q}#b"), 0, 3, 1.0),
            (format!("key:Fair{q}#gold"), 4, 2, 3.0)
        ]
    );
}

/// A class whose work is done leaves no key behind: each tenant leaves the
/// waiting set with its last parked job.
#[test]
fn a_class_whose_work_is_done_leaves_no_waiting_set() {
    let q = queue("done");
    push_jobs(&q, &jobs(&q, "a", 8, 1, 2));
    push_jobs(&q, &jobs(&q, "b", 3, 1, 2));
    let c = processor();
    let mut running = Vec::new();
    fill(&c, &q, &mut running, 2);
    let waiting = keys::fair_waiting(&format!("class:Fair{q}"));
    assert!(redis().exists::<_, bool>(&waiting).unwrap());
    while !running.is_empty() {
        finish_one(&c, &q, &mut running, 2);
    }
    assert!(
        !redis().exists::<_, bool>(&waiting).unwrap(),
        "the waiting set is gone"
    );
}

/// The page's and the scrape's read: every fair class's tenants with work
/// at once, by class (a tenant waiting with none running included); a
/// plain key limit with parked jobs is no tenant.
#[test]
fn every_fair_classs_tenants_are_read_at_once() {
    let q = queue("classes");
    let r = queue("others");
    push_jobs(&q, &jobs(&q, "gold", 6, 3, 4));
    push_jobs(&q, &jobs(&q, "b", 3, 1, 4));
    push_jobs(&r, &jobs(&r, "c", 2, 1, 1));
    let plain = |n: usize| {
        format!(
            r#"{{"limit_fetch":[{{"id":"key:Plain{r}#x","concurrency":1}}],"queue":"{r}","class":"Plain{r}","args":["x"],"jid":"x{n}"}}"#
        )
    };
    push_jobs(&r, &[plain(0), plain(1)]);
    let c = processor();
    let mut running = Vec::new();
    fill(&c, &q, &mut running, 4);
    while let Some(job) = fetch(&c, &r) {
        running.push(job);
    }
    let classes: Vec<_> = c
        .limits()
        .fair_classes(&Interrupt::new())
        .unwrap()
        .into_iter()
        .filter(|class| class.id.ends_with(&q) || class.id.ends_with(&r))
        .map(|class| {
            let tenants: Vec<(String, u64, u64, f64)> = class
                .tenants
                .into_iter()
                .map(|t| (t.id, t.running, t.parked, t.weight))
                .collect();
            (class.id, tenants)
        })
        .collect();
    assert_eq!(
        classes,
        [
            (
                format!("class:Fair{q}"),
                vec![
                    (format!("key:Fair{q}#b"), 0, 3, 1.0),
                    (format!("key:Fair{q}#gold"), 4, 2, 3.0)
                ]
            ),
            (
                format!("class:Fair{r}"),
                vec![(format!("key:Fair{r}#c"), 1, 1, 1.0)]
            )
        ]
    );
    let parked_plain: usize = redis()
        .llen(keys::parked(&format!("key:Plain{r}#x")))
        .unwrap();
    assert_eq!(parked_plain, 1, "the plain key limit has a job parked");
}

/// Tenants that arrive behind a hot tenant's backlog each get a turn before
/// any of them gets a second: among tenants holding as few slots for their
/// weight, the turn goes to the one served least lately, not to the first
/// by name.
#[test]
fn tied_tenants_take_turns_in_the_order_they_were_served() {
    let q = queue("ties");
    push_jobs(&q, &jobs(&q, "a", 60, 1, 2));
    let tenants: Vec<String> = (0..10)
        .map(|i| format!("t{}", (b'a' + i) as char))
        .collect();
    for t in &tenants {
        push_jobs(&q, &jobs(&q, t, 5, 1, 2));
    }
    let c = processor();
    let mut running = Vec::new();
    fill(&c, &q, &mut running, 2);
    fill(&c, &q, &mut running, 2);
    let mut started = Vec::new();
    for _ in 0..14 {
        finish_one(&c, &q, &mut running, 2);
        started.push(tenant(running.last().unwrap()));
    }
    for t in &tenants {
        assert!(
            started.contains(t),
            "{t} started within 14 turns: {started:?}"
        );
    }
}
