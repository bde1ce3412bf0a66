//! What a refused command means to the person who runs the gem: the ACL
//! rule that allows it. Said at boot (acl.rs, when a capsule's user lacks a
//! command) and at run time (a Redis error that says a command or key was
//! denied: the ACL changed under a running process).

use crate::keys;

/// The key patterns of README.md's gem-only ACL line: Sidekiq's queues, the
/// gem's keys, the dead set, and (read only) Sidekiq's set of queue names.
pub(crate) fn key_patterns() -> String {
    format!(
        "~{}* ~{}* ~{} %R~queues",
        keys::QUEUE_PREFIX,
        keys::PREFIX,
        keys::DEAD
    )
}

/// The ACL rule that allows `call` (`+ltrim`, `+client|tracking`).
pub(crate) fn rule(call: &[&str]) -> String {
    let subcommand = matches!(
        call.first().map(|c| c.to_ascii_lowercase()).as_deref(),
        Some("client" | "function" | "config" | "script" | "acl" | "object")
    );
    let words = if subcommand { 2 } else { 1 };
    let name: Vec<String> = call
        .iter()
        .take(words)
        .map(|w| w.to_ascii_lowercase())
        .collect();
    format!("+{}", name.join("|"))
}

/// The command a Redis error says the user may not run, if it says so:
/// `NOPERM User u has no permissions to run the 'ltrim' command`, or, from
/// a script, `ERR ACL failure in script: User u has no permissions to run
/// the 'ltrim' command ...`.
pub(crate) fn denied_command(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once("no permissions to run the '")?;
    let (command, _) = rest.split_once('\'')?;
    Some(command)
}

/// A Redis error, with the ACL rule to add when it says a command was
/// denied (at run time: the ACL changed under a running process).
pub(crate) fn explain(message: String) -> String {
    match denied_command(&message) {
        Some(command) => {
            let add = rule(&command.split('|').collect::<Vec<_>>());
            format!("{message} (the Redis ACL denies `{command}`: add {add} to the user's rules)")
        }
        None if message.contains("o permissions to access") => format!(
            "{message} (the Redis ACL denies a key: the user needs {})",
            key_patterns()
        ),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_rule_a_denied_command_needs() {
        let script = "ERR ACL failure in script: User limit_fetch has no permissions to run the 'ltrim' command script: limit_fetch_fetch_0, on @user_function:425.";
        assert_eq!(denied_command(script), Some("ltrim"));
        assert!(explain(script.into()).ends_with("add +ltrim to the user's rules)"));
        let plain = "NOPERM User u has no permissions to run the 'function|load' command";
        assert!(explain(plain.into()).contains("add +function|load"));
        assert_eq!(explain("ERR other".into()), "ERR other");
    }
}
