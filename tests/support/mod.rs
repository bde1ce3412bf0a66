//! A real Redis for the core's tests: REDIS_URL if set, else a redis-server
//! started on a free port for this test binary (and killed with it).
//! Shared by several test binaries, each of which uses a part.
#![allow(dead_code)]

pub mod json;
pub mod proxy;

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use limit_fetch_core::{Capsule, CapsuleOptions, ConnectionSettings, Fetched, Interrupt};

struct Server {
    port: u16,
    _child: Option<ChildGuard>,
}

struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

static SERVER: OnceLock<Server> = OnceLock::new();

/// The server LIMIT_FETCH_SERVER names, as the Ruby tools read it
/// (tools/lib/limit_fetch_tools.rb): "redis" (the default) or "valkey".
fn server_program() -> &'static str {
    match std::env::var("LIMIT_FETCH_SERVER").as_deref() {
        Err(_) | Ok("redis") => "redis-server",
        Ok("valkey") => "valkey-server",
        Ok(other) => {
            panic!("LIMIT_FETCH_SERVER={other:?}: not a server the tests run (redis, valkey)")
        }
    }
}

fn server() -> &'static Server {
    SERVER.get_or_init(|| {
        if let Ok(url) = std::env::var("REDIS_URL") {
            let port = url
                .rsplit(':')
                .next()
                .and_then(|tail| tail.split('/').next())
                .and_then(|p| p.parse().ok())
                .expect("REDIS_URL must look like redis://host:port/db");
            return Server { port, _child: None };
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let program = server_program();
        let mut command = Command::new(program);
        command
            .args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: prctl is async-signal-safe. The server gets SIGKILL when the
        // thread that spawned it ends, so spawn it from one that never does.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(command.spawn());
            loop {
                std::thread::park();
            }
        });
        let child = rx
            .recv()
            .expect("spawner thread")
            .unwrap_or_else(|e| panic!("{program} must be on PATH (or set REDIS_URL): {e}"));
        let guard = ChildGuard(child);
        let deadline = Instant::now() + Duration::from_secs(5);
        while redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
            .is_err()
        {
            assert!(Instant::now() < deadline, "{program} did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Leaked on purpose: the guard must live as long as the test binary.
        Box::leak(Box::new(guard));
        Server { port, _child: None }
    })
}

pub fn settings() -> ConnectionSettings {
    ConnectionSettings {
        port: server().port,
        ..ConnectionSettings::default()
    }
}

pub fn redis() -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{}/", server().port))
        .unwrap()
        .get_connection()
        .unwrap()
}

/// What the expiry of capsule `uuid`'s heartbeat leaves: its heartbeat key
/// gone, and its entry in `keys::BEATS` (if it has one) past, so that the
/// next beat of another capsule finds it dead.
pub fn expire(uuid: &str) {
    let mut conn = redis();
    let _: () = redis::cmd("DEL")
        .arg(limit_fetch_core::keys::heartbeat(uuid))
        .query(&mut conn)
        .unwrap();
    let _: () = redis::cmd("ZADD")
        .arg(limit_fetch_core::keys::BEATS)
        .arg("XX")
        .arg(0)
        .arg(uuid)
        .query(&mut conn)
        .unwrap();
}

/// A heartbeat period after the last census: the next beat takes it (see
/// `keys::CENSUS`).
pub fn census_due() {
    let _: () = redis::cmd("DEL")
        .arg(limit_fetch_core::keys::CENSUS)
        .query(&mut redis())
        .unwrap();
}

/// Test capsules join a fleet that beats (see `keys::LAST_BEAT`): each may
/// reap at once, unless a test removes the key first.
fn join_a_beating_fleet() {
    let _: () = redis::cmd("SET")
        .arg(limit_fetch_core::keys::LAST_BEAT)
        .arg("a-beating-fleet")
        .arg("NX")
        .arg("EX")
        .arg(600)
        .query(&mut redis())
        .unwrap();
}

pub fn capsule() -> Capsule {
    join_a_beating_fleet();
    Capsule::new(&settings(), CapsuleOptions::default())
}

/// A capsule whose acknowledgements wait for its next fetch (10 s before
/// going alone, not 2 ms): for tests of what a fetch does with the
/// acknowledgement it carries, which a loaded machine would otherwise race.
pub fn capsule_whose_acks_ride() -> Capsule {
    join_a_beating_fleet();
    Capsule::new(
        &settings(),
        CapsuleOptions {
            ack_grace: Duration::from_secs(10),
            ..CapsuleOptions::default()
        },
    )
}

/// [`capsule_whose_acks_ride`], connected to Redis through `port` (a
/// [`proxy::Proxy`]'s).
pub fn capsule_whose_acks_ride_through(port: u16) -> Capsule {
    join_a_beating_fleet();
    Capsule::new(
        &ConnectionSettings { port, ..settings() },
        CapsuleOptions {
            ack_grace: Duration::from_secs(10),
            ..CapsuleOptions::default()
        },
    )
}

pub fn capsule_with_period(period: Duration) -> Capsule {
    join_a_beating_fleet();
    Capsule::new(
        &settings(),
        CapsuleOptions {
            heartbeat_period: period,
            ..CapsuleOptions::default()
        },
    )
}

/// A queue name no other test uses.
pub fn queue(label: &str) -> String {
    format!("{label}-{}", uuid::Uuid::new_v4())
}

/// Pushes `jobs` jobs to `queue`, oldest first, each a payload no other test
/// or run pushes: a job's recoveries are counted by its payload's SHA1 in
/// Redis, for 7 days, and a job recovered too often goes to the dead set.
pub fn push_unique(queue: &str, jobs: usize) {
    let mut conn = redis();
    for i in 0..jobs {
        let _: () = redis::cmd("LPUSH")
            .arg(format!("queue:{queue}"))
            .arg(format!("{{\"jid\":\"{queue}-{i}\"}}"))
            .query(&mut conn)
            .unwrap();
    }
}

/// Pushes `jobs` (payloads) to `queue`, oldest first, as Sidekiq's client does.
pub fn push_jobs(queue: &str, jobs: &[String]) {
    let mut conn = redis();
    for job in jobs {
        let _: () = redis::cmd("LPUSH")
            .arg(format!("queue:{queue}"))
            .arg(job)
            .query(&mut conn)
            .unwrap();
    }
}

/// The jid a payload's text names ("" if none).
pub fn jid_of(text: &str) -> String {
    text.split(r#""jid":""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_default()
        .to_owned()
}

pub fn push(queue: &str, jobs: usize) {
    let mut conn = redis();
    for i in 0..jobs {
        let _: () = redis::cmd("LPUSH")
            .arg(format!("queue:{queue}"))
            .arg(format!("{{\"jid\":\"{i}\"}}"))
            .query(&mut conn)
            .unwrap();
    }
}

/// The table of stored limit values every reader of a limit must agree on
/// (`spec/fixtures/limit_values.json`, which the specs read too): each
/// stored value with the limit it reads as, `None` for a broken value
/// (which reads as 0).
pub fn limit_values() -> Vec<(String, Option<u64>)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/spec/fixtures/limit_values.json"
    );
    let text = std::fs::read_to_string(path).unwrap();
    // One entry a line, `["value", 5]` or `["value", null]`: a JSON string
    // and a number or null, which is all this reads.
    let values: Vec<_> = text
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with('['))
        .map(|line| {
            let (raw, rest) = json_string(&line[1..]).unwrap_or_else(|| panic!("bad entry {line}"));
            let limit = rest
                .trim_start_matches([',', ' '])
                .trim_end_matches([',', ']']);
            let limit = (limit != "null").then(|| {
                limit
                    .parse()
                    .unwrap_or_else(|_| panic!("bad limit in {line}"))
            });
            (raw, limit)
        })
        .collect();
    assert!(values.len() > 20, "{path} has too few entries");
    values
}

/// The JSON string literal `text` starts with, and what follows it.
fn json_string(text: &str) -> Option<(String, &str)> {
    let mut chars = text.strip_prefix('"')?.char_indices();
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &text[i + 2..])),
            '\\' => match chars.next()?.1 {
                'u' => {
                    let hex: String = (0..4)
                        .filter_map(|_| chars.next().map(|(_, h)| h))
                        .collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                }
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'f' => out.push('\x0c'),
                'b' => out.push('\x08'),
                other @ ('"' | '\\' | '/') => out.push(other),
                _ => return None,
            },
            c => out.push(c),
        }
    }
    None
}

/// Runs `body` in real Redis after the Lua prelude every script starts with
/// (`src/lua/prelude/`, its files joined in the library's order), as the
/// scripts run.
pub fn eval_after_prelude<T: redis::FromRedisValue>(body: &str, keys: &[&str], args: &[&str]) -> T {
    try_eval_after_prelude(body, keys, args).unwrap()
}

/// `eval_after_prelude`, its error kept.
pub fn try_eval_after_prelude<T: redis::FromRedisValue>(
    body: &str,
    keys: &[&str],
    args: &[&str],
) -> redis::RedisResult<T> {
    const PRELUDE: [&str; 16] = include!("../../src/lua/prelude/parts.rs");
    let prelude = PRELUDE.join("\n");
    redis::cmd("EVAL")
        .arg(format!("{prelude}{body}"))
        .arg(keys.len())
        .arg(keys)
        .arg(args)
        .query(&mut redis())
}

/// What a Sidekiq processor does: acknowledges the job it held, then fetches.
pub fn next(capsule: &Capsule, q: &str, held: Option<Fetched>) -> Option<Fetched> {
    if let Some(done) = held {
        capsule.acknowledge(q, done.job);
    }
    capsule.fetch(&[q], &Interrupt::new()).unwrap()
}

/// A registered capsule whose acknowledgements ride on its fetches, holding
/// the second of `q`'s jobs, fetched by the script on the thread's own
/// connection (the first fetch, through the runtime, opened it): the next
/// fetch may be a hand-over.
pub fn holding_the_second(q: &str) -> (Capsule, Option<Fetched>) {
    let capsule = capsule_whose_acks_ride();
    capsule.register(&Interrupt::new()).unwrap();
    let first = next(&capsule, q, None);
    assert!(first.is_some());
    let second = next(&capsule, q, first);
    assert!(second.is_some());
    (capsule, second)
}

/// The name Redis knows the gem's function `script` by (its library's
/// version in it), once a capsule loaded the library.
pub fn function_name(script: &str) -> String {
    let prefix = format!("limit_fetch_{script}_");
    let listed: redis::Value = redis::cmd("FUNCTION")
        .arg("LIST")
        .query(&mut redis())
        .unwrap();
    let mut found = Vec::new();
    collect_strings(&listed, &mut found);
    found
        .into_iter()
        .find(|s| {
            s.strip_prefix(&prefix)
                .is_some_and(|v| v.len() == 16 && v.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .unwrap_or_else(|| panic!("no function {prefix}* loaded"))
}

fn collect_strings(value: &redis::Value, into: &mut Vec<String>) {
    use redis::Value;
    match value {
        Value::BulkString(bytes) => into.push(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(s) => into.push(s.clone()),
        Value::Array(items) | Value::Set(items) => {
            items.iter().for_each(|v| collect_strings(v, into))
        }
        Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            collect_strings(k, into);
            collect_strings(v, into);
        }),
        _ => {}
    }
}

/// Calls of each command since the last `CONFIG RESETSTAT` (`INFO
/// commandstats`; those run inside scripts included), by name.
pub fn command_calls(conn: &mut redis::Connection) -> std::collections::HashMap<String, u64> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(conn).unwrap();
    info.lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((name.to_string(), calls))
        })
        .collect()
}
