-- lib/rw_acquire.lua -- the start of both read-write acquire scripts.
--
-- A key of another kind refused (WRONGKIND, see kind.lua: a read-write
-- hash always has its "mode"), then the owner's holds n (a resend of a
-- request applied already returns them), and the mode. Sets locals
-- lease, n and mode.
local lease = tonumber(ARGV[1])
local v = redis.pcall('hmget', KEYS[1], ARGV[2], 'mode')
if v.err or (not v[2] and redis.call('exists', KEYS[1]) == 1) then
  return other_kind(KEYS[1], 'rwlock') or v
end
local n, mode = v[1], v[2]
if n and applied(ARGV[5], ARGV[2], ARGV[9]) then
  return {tonumber(n), 0}
end
