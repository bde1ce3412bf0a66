// The prelude's files, in the order the library joins them (a local is
// defined before it is used): included by src/script/mod.rs, which builds
// the library, and by tests/support/mod.rs, which runs the prelude alone.
[
    include_str!("keys.lua"),
    include_str!("codes.lua"),
    include_str!("none.lua"),
    include_str!("values.lua"),
    include_str!("moves.lua"),
    include_str!("format.lua"),
    include_str!("call.lua"),
    include_str!("rates.lua"),
    include_str!("payloads.lua"),
    include_str!("job_limits.lua"),
    include_str!("adaptive.lua"),
    include_str!("rate_parking.lua"),
    include_str!("release.lua"),
    include_str!("fair.lua"),
    include_str!("slots.lua"),
    include_str!("logs.lua"),
]
