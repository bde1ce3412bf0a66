//! A fair queue (`fair_limits:`, src/lua/fetch/fair_queue.lua) against a
//! real Redis: its slots, the job limit `queue:<name>`, are shared among
//! the tenants of its jobs (their keys; a job without one is its class's)
//! as a fair class's are; the fetch writes each job's share into it when it
//! first takes it, changing nothing else of the payload; the queue's limit
//! is never exceeded.

mod support;

use std::collections::HashMap;

use limit_fetch_core::{keys, Capsule, Fetched, Interrupt};
use redis::Commands;
use support::{capsule_whose_acks_ride, jid_of, push_jobs, queue, redis};

/// A job of key `tenant` of class Keyed{q}, as the client middleware
/// writes it (its key limit's default of 1000 never binds here).
fn keyed(q: &str, tenant: &str, n: usize) -> String {
    format!(
        r#"{{"limit_fetch":[{{"id":"key:Keyed{q}#{tenant}","concurrency":1000}}],"queue":"{q}","class":"Keyed{q}","args":["{tenant}",[],1.5e-7,{{}}],"created_at":1764201600123,"jid":"{tenant}{n}"}}"#
    )
}

fn keyed_jobs(q: &str, tenant: &str, count: usize) -> Vec<String> {
    (0..count).map(|n| keyed(q, tenant, n)).collect()
}

/// Makes `q` a fair queue of `limit` slots, as a boot with `fair_limits:`
/// does.
fn fair_queue(q: &str, limit: u64) -> String {
    let id = keys::fair_queue_id(q);
    let _: () = redis().set(keys::job_limit(&id), limit).unwrap();
    id
}

fn processor() -> Capsule {
    let capsule = capsule_whose_acks_ride();
    capsule.register(&Interrupt::new()).unwrap();
    capsule
}

fn fetch(capsule: &Capsule, q: &str) -> Option<Fetched> {
    capsule.fetch(&[q], &Interrupt::new()).unwrap()
}

fn text(job: &Fetched) -> String {
    String::from_utf8_lossy(&job.job).into_owned()
}

fn tenant(job: &Fetched) -> String {
    jid_of(&text(job))
        .trim_end_matches(|c: char| c.is_ascii_digit())
        .to_owned()
}

/// The "limit_fetch" entries a payload carries, as Redis's cjson reads
/// them: [id, concurrency, fair, discard] each ("" where absent).
fn shares(job: &str) -> Vec<Vec<String>> {
    redis::cmd("EVAL")
        .arg(
            "local out = {}
             for _, e in ipairs(cjson.decode(ARGV[1]).limit_fetch) do
               out[#out + 1] = {e.id, e.concurrency and tostring(e.concurrency) or '',
                                type(e.fair) == 'string' and e.fair or '', e.discard and '1' or ''}
             end
             return out",
        )
        .arg(0)
        .arg(job)
        .query(&mut redis())
        .unwrap()
}

fn by_tenant(running: &[Fetched]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for job in running {
        *counts.entry(tenant(job)).or_default() += 1;
    }
    counts
}

/// Fetches until nothing more starts, checking the queue's slots.
fn fill(c: &Capsule, q: &str, running: &mut Vec<Fetched>, limit: usize) {
    while let Some(job) = fetch(c, q) {
        running.push(job);
        let busy: usize = redis()
            .llen(keys::job_busy(&keys::fair_queue_id(q)))
            .unwrap();
        assert!(busy <= limit, "the queue holds {busy} of {limit}");
    }
}

fn finish_one(c: &Capsule, q: &str, running: &mut Vec<Fetched>, limit: usize) {
    let done = running.remove(0);
    c.acknowledge(q, done.job);
    fill(c, q, running, limit);
}

/// The share is written into the job's "limit_fetch" array alone: the
/// tenant's entry first (its own limit kept), the queue's last; every other
/// byte (an empty array, a small float, an empty hash) as it was.
#[test]
fn a_job_of_a_fair_queue_carries_its_share_and_nothing_else_changes() {
    let q = queue("rewrite");
    let id = fair_queue(&q, 4);
    let pushed = keyed(&q, "a", 0);
    push_jobs(&q, std::slice::from_ref(&pushed));
    let c = processor();
    let job = text(&fetch(&c, &q).expect("taken"));
    let rest = &pushed[pushed.find(r#","queue":"#).unwrap()..];
    assert!(job.ends_with(rest), "{job}");
    assert_eq!(
        shares(&job),
        [
            [format!("key:Keyed{q}#a").as_str(), "1000", &id, ""],
            [id.as_str(), "4", "", ""]
        ]
    );
    let in_progress: Vec<String> = redis()
        .lrange(keys::in_progress(c.uuid(), &q), 0, -1)
        .unwrap();
    assert_eq!(in_progress, [job], "the job in progress is the one taken");
}

/// A job without limits (a plain Sidekiq payload) is its class's tenant:
/// the "limit_fetch" array is written first, before every byte it had;
/// two classes share the queue's slots.
#[test]
fn a_job_without_a_key_is_its_classs_tenant() {
    let q = queue("classes");
    let id = fair_queue(&q, 2);
    let plain = |class: &str, n: usize| {
        format!(r#"{{"queue":"{q}","class":"{class}{q}","args":[],"jid":"{class}{n}"}}"#)
    };
    let a: Vec<String> = (0..6).map(|n| plain("A", n)).collect();
    let b: Vec<String> = (0..6).map(|n| plain("B", n)).collect();
    push_jobs(&q, &a);
    push_jobs(&q, &b);
    let c = processor();
    let mut running = Vec::new();
    fill(&c, &q, &mut running, 2);
    assert_eq!(by_tenant(&running)["A"], 2, "A alone takes both slots");
    let first = text(&running[0]);
    assert_eq!(
        shares(&first),
        [
            [format!("class:A{q}").as_str(), "", id.as_str(), ""],
            [id.as_str(), "2", "", ""]
        ]
    );
    assert!(first.starts_with(r#"{"limit_fetch":["#), "{first}");
    assert!(first.ends_with(&format!(",{}", &a[0][1..])), "{first}");
    finish_one(&c, &q, &mut running, 2);
    assert_eq!(
        tenant(running.last().unwrap()),
        "B",
        "A's freed slot goes to B, behind A's backlog"
    );
    for _ in 0..4 {
        finish_one(&c, &q, &mut running, 2);
        let counts = by_tenant(&running);
        assert_eq!(counts.get("A"), Some(&1), "{counts:?}");
        assert_eq!(counts.get("B"), Some(&1), "{counts:?}");
    }
}

/// A tenant alone takes every slot; tenants that arrive behind its backlog
/// take the slots it frees until each holds its share; the queue's limit
/// holds throughout.
#[test]
fn freed_slots_go_to_the_tenants_that_arrived() {
    let q = queue("turns");
    fair_queue(&q, 4);
    push_jobs(&q, &keyed_jobs(&q, "a", 30));
    let c = processor();
    let mut running = Vec::new();
    fill(&c, &q, &mut running, 4);
    assert_eq!(running.len(), 4, "all 4 slots to the tenant alone");
    finish_one(&c, &q, &mut running, 4);
    assert_eq!(
        by_tenant(&running)["a"],
        4,
        "its freed slot goes to it again"
    );
    push_jobs(&q, &keyed_jobs(&q, "b", 10));
    push_jobs(&q, &keyed_jobs(&q, "c", 10));
    fill(&c, &q, &mut running, 4);
    let mut started = Vec::new();
    for _ in 0..8 {
        finish_one(&c, &q, &mut running, 4);
        assert_eq!(running.len(), 4, "a freed slot is taken at once");
        started.push(tenant(running.last().unwrap()));
    }
    assert!(
        started[..2].iter().all(|t| t != "a"),
        "b and c take a's first freed slots: {started:?}"
    );
    let counts = by_tenant(&running);
    let waiting: Vec<(String, f64)> = redis()
        .zrange_withscores(keys::fair_waiting(&keys::fair_queue_id(&q)), 0, -1)
        .unwrap();
    for t in ["a", "b", "c"] {
        let n = counts.get(t).copied().unwrap_or(0);
        assert!(
            (1..=2).contains(&n),
            "{t} holds {n} of 4: {counts:?} {started:?} {waiting:?}"
        );
    }
    while !running.is_empty() {
        finish_one(&c, &q, &mut running, 4);
    }
    let left: usize = redis().llen(keys::queue(&q)).unwrap();
    assert_eq!(left, 0, "every job ran");
    assert!(
        !redis()
            .exists::<_, bool>(keys::fair_waiting(&keys::fair_queue_id(&q)))
            .unwrap(),
        "no tenant waits"
    );
}

/// A tenant's own key limit holds inside the queue's share: the slots it
/// cannot use go to the others.
#[test]
fn a_tenants_own_limit_holds_inside_the_share() {
    let q = queue("own");
    fair_queue(&q, 4);
    let own = |n: usize| {
        format!(
            r#"{{"limit_fetch":[{{"id":"key:Own{q}#a","concurrency":1,"discard":true}}],"queue":"{q}","class":"Own{q}","args":["a"],"jid":"a{n}"}}"#
        )
    };
    let jobs: Vec<String> = (0..5).map(own).collect();
    push_jobs(&q, &jobs);
    push_jobs(&q, &keyed_jobs(&q, "b", 10));
    let c = processor();
    let mut running = Vec::new();
    fill(&c, &q, &mut running, 4);
    let counts = by_tenant(&running);
    assert_eq!(counts.get("a"), Some(&1), "{counts:?}");
    assert_eq!(counts.get("b"), Some(&3), "{counts:?}");
    let discarded: usize = redis()
        .hget(keys::DISCARDED, format!("Own{q}"))
        .unwrap_or(0);
    assert_eq!(discarded, 0, "a job waiting for its turn is never dropped");
}

/// The "limit_fetch" member is found by reading JSON, not brackets: an id
/// with brackets and quotes in it, the member after others or last, or a
/// hash among the args with a "limit_fetch" key of its own. The member
/// goes first, holding the share; every other byte stays.
#[test]
fn the_share_is_written_whatever_the_payload_holds() {
    let q = queue("payloads");
    let id = fair_queue(&q, 4);
    let cases = [
        (
            format!(
                r#"{{"limit_fetch":[{{"id":"key:B{q}#a]\"[b","concurrency":1000}}],"queue":"{q}","class":"B","args":[[],{{}}],"jid":"x1"}}"#
            ),
            format!(r#","queue":"{q}","class":"B","args":[[],{{}}],"jid":"x1"}}"#),
            format!("key:B{q}#a]\"[b"),
        ),
        (
            format!(
                r#"{{"queue":"{q}","args":[{{"limit_fetch":[1]}}],"limit_fetch":[{{"id":"key:C{q}#z","concurrency":1000}}],"class":"C","jid":"x2"}}"#
            ),
            format!(r#","queue":"{q}","args":[{{"limit_fetch":[1]}}],"class":"C","jid":"x2"}}"#),
            format!("key:C{q}#z"),
        ),
        (
            format!(
                r#"{{"queue":"{q}","class":"D","args":[],"jid":"x3","limit_fetch":[{{"id":"key:D{q}#last","concurrency":1000}}]}}"#
            ),
            format!(r#","queue":"{q}","class":"D","args":[],"jid":"x3"}}"#),
            format!("key:D{q}#last"),
        ),
    ];
    let pushed: Vec<String> = cases.iter().map(|c| c.0.clone()).collect();
    push_jobs(&q, &pushed);
    let c = processor();
    for (_, rest, tenant) in &cases {
        let job = text(&fetch(&c, &q).expect("taken"));
        assert!(job.starts_with(r#"{"limit_fetch":[{"#), "{job}");
        assert!(job.ends_with(rest.as_str()), "{job}");
        assert_eq!(
            shares(&job),
            [
                [tenant.as_str(), "1000", id.as_str(), ""],
                [id.as_str(), "4", "", ""]
            ],
            "{job}"
        );
        let busy: usize = redis().llen(keys::job_busy(tenant)).unwrap();
        assert_eq!(busy, 1, "{tenant} holds its slot");
    }
    let busy: usize = redis().llen(keys::job_busy(&id)).unwrap();
    assert_eq!(busy, 3);
}
