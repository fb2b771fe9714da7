-- lib/release_hold.lua -- the start of release and fair_release (their
-- ARGV[1..6] alike).
--
-- A key of another kind refused and left as it is (WRONGKIND); nil when
-- the owner ARGV[3] holds nothing; a resend of a release applied already
-- (the local req, this release's request id, not above the owner's last
-- one) drops nothing; else ARGV[4] holds go, and when some remain they
-- keep the lease ARGV[2] and the request id is noted. Past it, the owner's
-- last hold is to end: sets the locals rid (the owner's request id field)
-- and v (the owner's holds, last request id, "mode", the queue's marker).
local rid = ARGV[3] .. ':rid'
local v = redis.pcall('hmget', KEYS[1], ARGV[3], rid, 'mode', 'hilock:queued')
if v.err or v[3] then
  --@include lib/kind.lua
  return other_kind(KEYS[1], 'lock') or v
end
if not v[1] then return nil end
if tonumber(req) <= tonumber(v[2] or '0') then
  return {tonumber(v[1]), 0}
end
local n = tonumber(v[1]) - tonumber(ARGV[4])
if n > 0 then
  redis.call('hset', KEYS[1], ARGV[3], n, rid, req)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {n, 0}
end
