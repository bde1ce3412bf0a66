//! The jobs waiting in queues, parked ones included (`Limits::waiting`,
//! waiting.lua), against a real Redis: parked jobs counted by the queue each
//! goes back to, the oldest found by its enqueue time, and the budget.

mod support;

use limit_fetch_core::{keys, Interrupt, Limits, QueueWaiting};
use redis::Commands;
use support::{queue, redis, settings};

/// A payload as the client middleware writes it (its limits first, then its
/// queue), enqueued at `at` (milliseconds).
fn job(id: &str, queue: &str, at: u64) -> String {
    format!(
        r#"{{"limit_fetch":[{{"id":"{id}","concurrency":1}}],"queue":"{queue}","class":"K","args":[],"jid":"j{at}","enqueued_at":{at}}}"#
    )
}

/// Parks `jobs` at job limit `id`, oldest first, as the fetch does (LPUSH).
fn park(conn: &mut redis::Connection, id: &str, jobs: &[String]) {
    for j in jobs {
        let _: () = conn.lpush(keys::parked(id), j).unwrap();
    }
    let _: () = conn.sadd(keys::LIMITS_WITH_PARKED, id).unwrap();
}

fn row<'a>(rows: &'a [QueueWaiting], name: &str) -> &'a QueueWaiting {
    rows.iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row of {name}: {rows:?}"))
}

// One test: the budget's part reads every limit with parked jobs in Redis,
// and the last part refuses every write for a moment.
#[test]
fn parked_jobs_count_for_their_queues_their_oldest_first_within_a_budget() {
    let (a, b, odd) = (queue("a"), queue("b"), format!("{}\"q", queue("odd")));
    let mut conn = redis();
    let (one, two) = (format!("key:K#{a}-1"), format!("key:K#{a}-2"));
    // A key's jobs in two queues, alternating: counted by each.
    park(
        &mut conn,
        &one,
        &[
            job(&one, &a, 1000),
            job(&one, &a, 2000),
            job(&one, &b, 3000),
            job(&one, &b, 4000),
            job(&one, &a, 5000),
        ],
    );
    // Another limit's jobs, older; one written by hand (no limits: its
    // queue read from the whole payload), one of a queue whose name JSON
    // escapes.
    let escaped = odd.replace('"', "\\\"");
    park(
        &mut conn,
        &two,
        &[
            job(&two, &b, 500),
            format!(r#"{{"class":"K","queue":"{a}","enqueued_at":300}}"#),
            format!(
                r#"{{"limit_fetch":[{{"id":"{two}","concurrency":1}}],"queue":"{escaped}","enqueued_at":700}}"#
            ),
        ],
    );
    let _: () = conn.lpush(keys::queue(&a), job(&one, &a, 9000)).unwrap();
    let admin = Limits::new(&settings());
    let none = Interrupt::new();

    let read = admin.waiting(&[&a, &b, &odd], 1000, true, &none).unwrap();
    assert!(!read.estimated);
    let (ra, rb, rodd) = (
        row(&read.queues, &a),
        row(&read.queues, &b),
        row(&read.queues, &odd),
    );
    assert_eq!((ra.queued, ra.parked), (1, 4));
    assert_eq!((rb.queued, rb.parked), (0, 3));
    assert_eq!((rodd.queued, rodd.parked), (0, 1));
    let text = |p: &Option<Vec<u8>>| String::from_utf8(p.clone().unwrap_or_default()).unwrap();
    assert!(
        text(&ra.oldest_parked).contains(r#""enqueued_at":300"#),
        "{}",
        text(&ra.oldest_parked)
    );
    assert!(text(&rb.oldest_parked).contains(r#""enqueued_at":500"#));
    assert!(text(&ra.oldest_queued).contains(r#""enqueued_at":9000"#));
    // Without `oldest`, no payloads; a queue asked for with nothing waiting.
    let empty = queue("empty");
    let plain = admin.waiting(&[&a, &empty], 1000, false, &none).unwrap();
    assert_eq!(row(&plain.queues, &a).oldest_parked, None);
    assert_eq!(row(&plain.queues, &empty).parked, 0);
    // None asked: every queue with parked jobs.
    let every = admin.waiting(&[] as &[&str], 1000, false, &none).unwrap();
    let mut names: Vec<_> = every.queues.iter().map(|r| r.name.clone()).collect();
    names.sort();
    let mut expected = vec![a.clone(), b.clone(), odd.clone()];
    expected.sort();
    assert_eq!(names, expected);

    // A budget that limit `one`'s jobs do not fit in (15 a limit, then its
    // jobs): counted by its oldest job, all 5 for its queue (`two`, read
    // first, fits whole: its job of `a` adds one).
    let tight = admin.waiting(&[&a, &b, &odd], 19, false, &none).unwrap();
    assert!(tight.estimated);
    let parked_a = row(&tight.queues, &a).parked;
    assert!(parked_a == 5 || parked_a == 6, "{:?}", tight.queues);
    // Spent at the first limit: the other is not read.
    let spent = admin.waiting(&[&a, &b, &odd], 1, false, &none).unwrap();
    assert!(spent.estimated);
    let counted: u64 = spent.queues.iter().map(|r| r.parked).sum();
    assert!(counted == 5 || counted == 3, "one limit's jobs: {counted}");
    // Over `maxmemory` Redis refuses a script that may write: the read,
    // which writes nothing, still runs, as Sidekiq's own reads of its lists
    // do.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(1)
        .query(&mut conn)
        .unwrap();
    let over = admin.waiting(&[&a], 1000, false, &none);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(0)
        .query(&mut conn)
        .unwrap();
    assert_eq!(over.unwrap().queues[0].parked, 4);
}
