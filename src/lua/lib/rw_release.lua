-- lib/rw_release.lua -- the start of both read-write release scripts.
--
-- A key of another kind refused and left as it is (WRONGKIND), then the
-- owner's holds n and the mode (locals n, mode).
local v = redis.pcall('hmget', KEYS[1], ARGV[3], 'mode')
if v.err or (not v[2] and redis.call('exists', KEYS[1]) == 1) then
  return other_kind(KEYS[1], 'rwlock') or v
end
local n, mode = v[1], v[2]
