//! The function library's source: its scripts joined, each registering its
//! function, with [`VERSION`] where the version goes. Shared by the core
//! (script/mod.rs), which builds the source when Redis lacks the library,
//! and by its build script (src/build.rs), which digests it into the version
//! once, at build time: a process reads the Lua only to load it.

use std::borrow::Cow;

/// The prelude every function shares (key names and the rules several
/// scripts use), run once when the library loads: the files of
/// `src/lua/prelude/`, joined in this order.
pub(crate) const PRELUDE: [&str; 16] = include!("../lua/prelude/parts.rs");

/// The fetch script: the files of `src/lua/fetch/`, joined in this order.
pub(crate) const FETCH_PARTS: [&str; 13] = include!("../lua/fetch/parts.rs");

/// Each script: its name in the library and its files, joined in order
/// into a chunk that runs once, when the library loads, and returns the
/// function of `(KEYS, ARGV)` that Redis calls (what it defines before, it
/// defines once).
pub(crate) const SCRIPTS: [(&str, &[&str]); 16] = [
    (FETCH, &FETCH_PARTS),
    (REAP, &[include_str!("../lua/reap.lua")]),
    (RECONCILE, &[include_str!("../lua/reconcile.lua")]),
    (REQUEUE, &[include_str!("../lua/requeue.lua")]),
    (RELEASE, &[include_str!("../lua/release.lua")]),
    (ORPHANS, &[include_str!("../lua/orphans.lua")]),
    (STRAY_QUEUES, &[include_str!("../lua/stray_queues.lua")]),
    (ACTIVE, &[include_str!("../lua/active.lua")]),
    (UNPARK, &[include_str!("../lua/unpark.lua")]),
    (ACL_CHECK, &[include_str!("../lua/acl_check.lua")]),
    (WAITING, &[include_str!("../lua/waiting.lua")]),
    (BACK_OFF, &[include_str!("../lua/back_off.lua")]),
    (RESUME, &[include_str!("../lua/resume.lua")]),
    (FAIR_TENANTS, &[include_str!("../lua/fair_tenants.lua")]),
    (LEASE, &[include_str!("../lua/lease.lua")]),
    (FORMAT, &[include_str!("../lua/format.lua")]),
];

pub(crate) const FETCH: &str = "fetch";
pub(crate) const REAP: &str = "reap";
pub(crate) const RECONCILE: &str = "reconcile";
pub(crate) const REQUEUE: &str = "requeue";
pub(crate) const RELEASE: &str = "release";
pub(crate) const ORPHANS: &str = "orphans";
pub(crate) const STRAY_QUEUES: &str = "stray_queues";
pub(crate) const ACTIVE: &str = "active";
pub(crate) const UNPARK: &str = "unpark";
pub(crate) const ACL_CHECK: &str = "acl_check";
pub(crate) const WAITING: &str = "waiting";
pub(crate) const BACK_OFF: &str = "back_off";
pub(crate) const RESUME: &str = "resume";
pub(crate) const FAIR_TENANTS: &str = "fair_tenants";
pub(crate) const LEASE: &str = "lease";
pub(crate) const FORMAT: &str = "format";

/// What stands for the library's version in its source.
pub(crate) const VERSION: &str = "{version}";

/// The scripts that write nothing, registered `no-writes`: Redis runs them
/// where it refuses writes (over `maxmemory`, as Sidekiq's own reads of
/// its lists still run), so that Sidekiq's API keeps its figures then.
pub(crate) const READ_ONLY: [&str; 2] = [WAITING, FAIR_TENANTS];

/// The source Redis loads, with `version` in it, written at its length (it
/// goes out in a `FUNCTION LOAD` and is dropped). A comment alone on its line
/// is left out, the line kept empty: Redis keeps a library's source, and an
/// error's line number stays the file's.
pub(crate) fn source(version: &str) -> String {
    let pieces = library_pieces();
    let lines = || {
        pieces
            .iter()
            .flat_map(|piece| piece.split_inclusive('\n'))
            .map(kept)
    };
    let length = lines()
        .map(|line| {
            let versions = line.matches(VERSION).count();
            line.len() - versions * VERSION.len() + versions * version.len()
        })
        .sum();
    let mut source = String::with_capacity(length);
    for line in lines() {
        if line.contains(VERSION) {
            source.push_str(&line.replace(VERSION, version));
        } else {
            source.push_str(line);
        }
    }
    source
}

/// `line`, or only its newline if it is a comment alone on its line.
fn kept(line: &str) -> &str {
    if line.trim_start().starts_with("--") {
        &line[line.len() - usize::from(line.ends_with('\n'))..]
    } else {
        line
    }
}

/// The library's source, with [`VERSION`] where its version goes, in
/// pieces: a first line naming the library, the prelude, then each script
/// as a chunk run once whose function Redis registers.
fn library_pieces() -> Vec<Cow<'static, str>> {
    let mut pieces = vec![Cow::Owned(format!("#!lua name=limit_fetch_{VERSION}\n"))];
    joined(&mut pieces, &PRELUDE);
    for (name, parts) in SCRIPTS {
        let function = function_name(name, VERSION);
        let callback = "function(KEYS, ARGV)\nnew_call()\nreturn run(KEYS, ARGV)\nend";
        let register = if READ_ONLY.contains(&name) {
            format!(
                "redis.register_function{{function_name = '{function}', \
                 flags = {{'no-writes'}}, callback = {callback}}}"
            )
        } else {
            format!("redis.register_function('{function}', {callback})")
        };
        pieces.push(Cow::Borrowed("\ndo\nlocal run = (function()\n"));
        joined(&mut pieces, parts);
        pieces.push(Cow::Owned(format!("\nend)()\n{register}\nend\n")));
    }
    pieces
}

/// `parts`, a newline between each two.
fn joined(pieces: &mut Vec<Cow<'static, str>>, parts: &[&'static str]) {
    for (at, part) in parts.iter().enumerate() {
        if at > 0 {
            pieces.push(Cow::Borrowed("\n"));
        }
        pieces.push(Cow::Borrowed(part));
    }
}

pub(crate) fn function_name(script: &str, version: &str) -> String {
    format!("limit_fetch_{script}_{version}")
}

/// The library's version: the first 16 hex digits of the SHA-1 of its
/// source with [`VERSION`] in it. Function names are global in Redis, so the
/// library and each function carry it: processes of two releases of the gem
/// share a Redis during a deploy, each calling its own functions.
#[allow(dead_code)] // the build script's and the tests': a process has it built in
pub(crate) fn version() -> String {
    let mut hash = sha1_smol::Sha1::new();
    for piece in library_pieces() {
        hash.update(piece.as_bytes());
    }
    hash.digest().to_string()[..16].to_string()
}
