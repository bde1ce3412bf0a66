//! What a capsule asks of its Redis at boot, before any script runs: a
//! server that runs functions (Redis 7.0), and a user allowed every command
//! the gem sends, on its keys. A script Redis stops at a denied command
//! keeps the writes it made up to there; checked first, no script stops
//! partway for want of a permission.
//!
//! The commands are those of `acl_commands.txt`, the one list that
//! spec/sidekiq/limit_fetch/acl_lines_spec.rb holds to the code and to
//! README.md's ACL lines.

use redis::Value;

use crate::connection::Conn;
use crate::denial::{denied_command, key_patterns, rule};
use crate::keys;
use crate::script::{LuaScript, ACL_CHECK};
use crate::{Error, Result};

/// Every command the gem sends, a representative call of each on keys of
/// each pattern (see the file's header).
const COMMANDS: &str = include_str!("acl_commands.txt");

/// The oldest server that runs the gem: its scripts are Redis functions
/// (`FUNCTION LOAD`, `FCALL`).
pub(crate) const MIN_VERSION: (u64, u64) = (7, 0);

/// Where the capsule runs, as the calls to check depend on it.
pub(crate) struct Setup<'a> {
    pub(crate) uuid: &'a str,
    /// The queues it serves (bare names): a call on a queue's keys is
    /// checked for each.
    pub(crate) queues: &'a [String],
    pub(crate) sentinel: bool,
    pub(crate) db: i64,
}

/// The calls to check for `setup`, each as the words `redis.acl_check_cmd`
/// takes (`client|tracking` as two).
pub(crate) fn calls(setup: &Setup<'_>) -> Vec<Vec<String>> {
    let fallback = ["default".to_string()];
    let queues = if setup.queues.is_empty() {
        &fallback[..]
    } else {
        setup.queues
    };
    let mut calls = Vec::new();
    for line in COMMANDS.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let mut words = line.split_whitespace();
        let Some(command) = words.next() else {
            continue;
        };
        let (tags, args): (Vec<&str>, Vec<&str>) = words.partition(|w| w.starts_with('@'));
        let checked = tags.iter().all(|tag| match *tag {
            "@sentinel" => setup.sentinel,
            "@select" => setup.db != 0,
            "@optional" | "@unlisted" => false,
            _ => true,
        });
        if !checked {
            continue;
        }
        let per_queue = args
            .iter()
            .any(|a| a.contains("{q}") || a.contains("{queue}"));
        let names = if per_queue { queues } else { &queues[..1] };
        for queue in names {
            let mut call: Vec<String> = command.split('|').map(str::to_owned).collect();
            call.extend(args.iter().map(|arg| {
                arg.replace("{queue}", &keys::queue(queue))
                    .replace("{q}", queue)
                    .replace("{prefix}", keys::PREFIX)
                    .replace("{uuid}", setup.uuid)
                    .replace("{dead}", keys::DEAD)
            }));
            calls.push(call);
        }
    }
    calls
}

/// Refuses a server older than [`MIN_VERSION`], from its `HELLO` reply
/// (`server` and `version`: a Valkey's version is its own, 7.2 or later).
pub(crate) fn check_version(hello: &Value) -> Result<()> {
    let field = |name: &str| match hello {
        Value::Map(fields) => fields.iter().find_map(|(k, v)| {
            let key: String = redis::from_redis_value(k).ok()?;
            (key == name).then(|| redis::from_redis_value::<String>(v).ok())?
        }),
        _ => None,
    };
    let server = field("server").unwrap_or_else(|| "redis".into());
    let version = field("version").unwrap_or_default();
    match version_refusal(&server, &version) {
        Some(refusal) => Err(Error::Refused(refusal)),
        None => Ok(()),
    }
}

/// Why a server of `version` cannot run the gem, if it cannot.
pub(crate) fn version_refusal(server: &str, version: &str) -> Option<String> {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().ok());
    let found = (parts.next().flatten(), parts.next().flatten());
    let (major, minor) = match found {
        (Some(major), Some(minor)) => (major, minor),
        _ => (0, 0),
    };
    if (major, minor) >= MIN_VERSION {
        return None;
    }
    let (need_major, need_minor) = MIN_VERSION;
    let version = if version.is_empty() {
        "unknown"
    } else {
        version
    };
    Some(format!(
        "sidekiq-limit_fetch: {server} {version} cannot run the gem, which needs Redis >= {need_major}.{need_minor} \
         (its scripts are Redis functions: FUNCTION LOAD, FCALL)"
    ))
}

/// Checks that the connection's user may run every call of `setup`, and
/// refuses with one line naming each call denied and the rules to add.
pub(crate) async fn check_commands(conn: &mut Conn, setup: &Setup<'_>) -> Result<()> {
    let calls = calls(setup);
    let mut args: Vec<String> = Vec::new();
    for call in &calls {
        args.push(call.len().to_string());
        args.extend(call.iter().cloned());
    }
    let denied: Vec<usize> = match LuaScript::new(ACL_CHECK)
        .invoke(conn, &[] as &[&str], &args[..])
        .await
    {
        Ok(denied) => denied,
        // The check itself was refused (`fcall`, `function|load`).
        Err(Error::Command(message)) if denied_command(&message).is_some() => {
            let command = denied_command(&message).unwrap_or_default();
            return Err(Error::Refused(refusal(&[command.split('|').collect()])));
        }
        Err(err) => return Err(err),
    };
    let denied: Vec<Vec<&str>> = denied
        .iter()
        .filter_map(|&i| calls.get(i.wrapping_sub(1)))
        .map(|call| call.iter().map(String::as_str).collect())
        .collect();
    if denied.is_empty() {
        Ok(())
    } else {
        Err(Error::Refused(refusal(&denied)))
    }
}

/// The line that refuses a user denied `calls` (each its words).
fn refusal(calls: &[Vec<&str>]) -> String {
    let mut rules: Vec<String> = Vec::new();
    for call in calls {
        let rule = rule(call);
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    let shown: Vec<String> = calls
        .iter()
        .map(|call| format!("`{}`", call.join(" ")))
        .collect();
    format!(
        "sidekiq-limit_fetch: the Redis user may not run what the gem needs: {}; add {} to its ACL rules \
         (or, where the command is allowed, a key pattern for the key: {}), \
         as in README.md's Redis ACL section",
        shown.join(", "),
        rules.join(" "),
        key_patterns()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(queues: &[String], sentinel: bool, db: i64) -> Setup<'_> {
        Setup {
            uuid: "u",
            queues,
            sentinel,
            db,
        }
    }

    #[test]
    fn refuses_a_server_before_7_0() {
        assert_eq!(version_refusal("redis", "7.0.0"), None);
        assert_eq!(version_refusal("redis", "8.0.6"), None);
        assert_eq!(version_refusal("valkey", "9.1.2"), None);
        assert_eq!(version_refusal("redis", "10.0.1"), None);
        let refusal = version_refusal("redis", "6.2.14").unwrap_or_default();
        assert!(refusal.contains("redis 6.2.14"), "{refusal}");
        assert!(refusal.contains(">= 7.0"), "{refusal}");
        assert!(version_refusal("redis", "").is_some_and(|r| r.contains("unknown")));
        assert!(version_refusal("redis", "6.9.9").is_some());
    }

    #[test]
    fn reads_the_version_from_hello() {
        let hello = |server: &str, version: &str| {
            Value::Map(vec![
                (
                    Value::BulkString(b"server".to_vec()),
                    Value::BulkString(server.as_bytes().to_vec()),
                ),
                (
                    Value::BulkString(b"version".to_vec()),
                    Value::BulkString(version.as_bytes().to_vec()),
                ),
                (Value::BulkString(b"proto".to_vec()), Value::Int(3)),
            ])
        };
        assert!(check_version(&hello("redis", "7.2.4")).is_ok());
        assert!(check_version(&hello("valkey", "9.1.2")).is_ok());
        match check_version(&hello("redis", "6.2.6")) {
            Err(Error::Refused(line)) => {
                assert!(
                    line.contains("redis 6.2.6") && line.contains("7.0"),
                    "{line}"
                );
                assert!(!line.contains('\n'));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn checks_each_call_on_each_served_queue() {
        let queues = vec!["a".to_string(), "b".to_string()];
        let calls = calls(&setup(&queues, false, 0));
        let has = |words: &[&str]| calls.iter().any(|c| c == words);
        assert!(has(&["ltrim", "queue:a", "0", "-1"]));
        assert!(has(&["ltrim", "queue:b", "0", "-1"]));
        assert!(has(&[
            "lmove",
            "queue:a",
            "sidekiq:limit_fetch:capsule:u:inprogress:a",
            "RIGHT",
            "LEFT"
        ]));
        assert!(has(&["zadd", "dead", "0", "job"]));
        assert!(has(&["function", "load", "library"]));
        assert_eq!(calls.iter().filter(|c| c[0] == "time").count(), 1);
        // Not checked: a denial is handled, or it is not sent here.
        for skipped in ["role", "select", "auth", "sentinel", "ping"] {
            assert!(!calls.iter().any(|c| c[0] == skipped), "{skipped}");
        }
        assert!(!calls
            .iter()
            .any(|c| c.starts_with(&["client".into(), "tracking".into()])));
        assert!(!calls
            .iter()
            .any(|c| c.starts_with(&["client".into(), "setinfo".into()])));
        assert!(calls.iter().all(|c| !c.join(" ").contains('{')));
    }

    #[test]
    fn checks_role_behind_sentinels_and_select_off_database_0() {
        let queues = vec!["a".to_string()];
        let calls = calls(&setup(&queues, true, 2));
        assert!(calls.iter().any(|c| c == &["role"]));
        assert!(calls.iter().any(|c| c == &["select", "1"]));
    }

    #[test]
    fn names_the_rule_to_add() {
        let line = refusal(&[
            vec!["ltrim", "queue:a", "0", "-1"],
            vec!["client", "caching", "yes"],
        ]);
        assert!(line.contains("`ltrim queue:a 0 -1`"), "{line}");
        assert!(
            line.contains("add +ltrim +client|caching to its ACL rules"),
            "{line}"
        );
    }
}
