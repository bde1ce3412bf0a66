-- The codes the core passes a script to say what it is to do, one local
-- each, named as src/script/codes.rs names them (a test there holds the
-- two to each other: one `local NAME = 'code'` a line, nothing else).

-- The fetch's ARGV[2]: what the capsule's doorbell needs (fetch/state.lua).
local MODE_PLAIN = '0'
local MODE_WATCH = '1'
local MODE_REPORT = '2'
local MODE_ARM = 't'
-- reap.lua's ARGV[2]: why the capsule is reaped.
local REAP_DEAD = '0'
local REAP_CLEAN = '1'
local REAP_UNREGISTERED = 'o'
-- format.lua's ARGV[1]: what it is to do with the data format.
local FORMAT_CENSUS = 'c'
local FORMAT_PIN = 'p'
local FORMAT_AUTO = 'a'
local FORMAT_CONVERT = 'v'
-- A yes-or-no argument: the fetch's ARGV[6] (the hand-over passed a slot)
-- and ARGV[10] (a keyed hand-over booked slots),
-- waiting.lua's ARGV[2] (with each queue's oldest payloads).
local YES = '1'
local NO = '0'
