// The fetch script's files, in the order the library joins them (a local
// is defined before it is used; main.lua, which returns the function, is
// last): included by src/script/mod.rs.
[
    include_str!("state.lua"),
    include_str!("rates.lua"),
    include_str!("reply.lua"),
    include_str!("queues.lua"),
    include_str!("job_limits.lua"),
    include_str!("fair_queue.lua"),
    include_str!("take.lua"),
    include_str!("aside.lua"),
    include_str!("acks.lua"),
    include_str!("adopt.lua"),
    include_str!("handed.lua"),
    include_str!("arm.lua"),
    include_str!("main.lua"),
]
