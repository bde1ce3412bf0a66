-- NONE: the empty table a call reads where it has nothing, instead of
-- allocating one (the fetch's per-call state, fetch/state.lua). It outlives
-- the call, so nothing may write into it: a write (a missing
-- `if x == NONE then x = {} end`) raises an error at once rather than
-- leaving an entry for the next call to find. (rawset and table.insert go
-- around the guard: the fetch writes with `t[k] = v`.)
local NONE = {}

-- Redis gives a library no setmetatable while it loads: the first call
-- guards NONE (new_call, call.lua).
local none_guarded = false
local function guard_none()
  if none_guarded then return end
  setmetatable(NONE, {
    __newindex = function(_, key)
      error('limit_fetch: a write into NONE, the shared empty table (key ' .. tostring(key) .. ')', 2)
    end,
    __metatable = false,
  })
  none_guarded = true
end
