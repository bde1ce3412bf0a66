//! Every script survives Redis losing the gem's function library (a restart
//! with no persistence, `FUNCTION FLUSH`). A test binary of its own: the
//! flush costs other tests' fetches a round trip, which some of them count.

mod support;

use limit_fetch_core::Interrupt;
use support::{capsule, push, queue, redis};

#[test]
fn every_script_survives_a_function_flush() {
    let q = queue("noscript-every");
    push(&q, 1);
    let a = capsule();
    let none = Interrupt::new();
    let flush = || {
        let _: () = redis::cmd("FUNCTION")
            .arg("FLUSH")
            .query(&mut redis())
            .unwrap();
    };
    flush();
    // A capsule's first fetch goes through the runtime's connection.
    let fetched = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    flush();
    a.requeue(vec![(q.clone(), fetched.job)], &none).unwrap();
    assert_eq!(a.limits().busy(&q, a.uuid(), &none).unwrap(), (0, 0));
    flush();
    a.beat(&none).unwrap();
    let fetched = a.fetch(&[q.as_str()], &none).unwrap().expect("a job");
    a.acknowledge(&q, fetched.job);
    flush();
    a.flush(&none).unwrap();
    flush();
    assert_eq!(a.deregister(&[q.as_str()], &none).unwrap(), 0);
}
