//! The codes the core passes a script to say what it is to do, named as
//! `src/lua/prelude/codes.lua` names them (the test below holds the two to
//! each other).

/// The fetch's ARGV[2] (see `Mode`).
pub(crate) const MODE_PLAIN: &str = "0";
pub(crate) const MODE_WATCH: &str = "1";
pub(crate) const MODE_REPORT: &str = "2";
pub(crate) const MODE_ARM: &str = "t";
/// reap.lua's ARGV[2] (see `Reap`).
pub(crate) const REAP_DEAD: &str = "0";
pub(crate) const REAP_CLEAN: &str = "1";
pub(crate) const REAP_UNREGISTERED: &str = "o";
/// format.lua's ARGV[1] (see src/format.rs).
pub(crate) const FORMAT_CENSUS: &str = "c";
pub(crate) const FORMAT_PIN: &str = "p";
pub(crate) const FORMAT_AUTO: &str = "a";
pub(crate) const FORMAT_CONVERT: &str = "v";
/// A yes-or-no argument: the fetch's ARGV[6] and ARGV[10], waiting.lua's
/// ARGV[2].
pub(crate) const YES: &str = "1";
pub(crate) const NO: &str = "0";

/// `YES` or `NO`.
pub(crate) fn flag(on: bool) -> &'static str {
    if on {
        YES
    } else {
        NO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LUA: &str = include_str!("../lua/prelude/codes.lua");

    /// Every code, as the Rust side names it.
    const CODES: [(&str, &str); 13] = [
        ("MODE_PLAIN", MODE_PLAIN),
        ("MODE_WATCH", MODE_WATCH),
        ("MODE_REPORT", MODE_REPORT),
        ("MODE_ARM", MODE_ARM),
        ("REAP_DEAD", REAP_DEAD),
        ("REAP_CLEAN", REAP_CLEAN),
        ("REAP_UNREGISTERED", REAP_UNREGISTERED),
        ("FORMAT_CENSUS", FORMAT_CENSUS),
        ("FORMAT_PIN", FORMAT_PIN),
        ("FORMAT_AUTO", FORMAT_AUTO),
        ("FORMAT_CONVERT", FORMAT_CONVERT),
        ("YES", YES),
        ("NO", NO),
    ];

    /// The Lua file's codes: each `local NAME = 'code'` line.
    fn lua_codes() -> Vec<(String, String)> {
        LUA.lines()
            .filter_map(|line| line.strip_prefix("local "))
            .map(|rest| {
                let (name, value) = rest.split_once(" = ").unwrap_or((rest, ""));
                let value = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\''));
                (
                    name.to_owned(),
                    value.unwrap_or("not a quoted code").to_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn the_scripts_codes_are_the_cores() {
        let want: Vec<(String, String)> = CODES
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        assert_eq!(lua_codes(), want);
    }

    /// Within a script's argument, no two codes are the same.
    #[test]
    fn each_arguments_codes_differ() {
        let modes = [MODE_PLAIN, MODE_WATCH, MODE_REPORT, MODE_ARM];
        let reaps = [REAP_DEAD, REAP_CLEAN, REAP_UNREGISTERED];
        let formats = [FORMAT_CENSUS, FORMAT_PIN, FORMAT_AUTO, FORMAT_CONVERT];
        for codes in [&modes[..], &reaps[..], &formats[..], &[YES, NO][..]] {
            let mut sorted = codes.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), codes.len(), "{codes:?}");
        }
    }
}
