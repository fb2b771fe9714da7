-- lib/undo_hold.lua -- the start of undo and fair_undo (their arguments
-- at other places).
--
-- Reads the locals own (the owner field), rid (its request id field), v
-- (HMGET of own, rid, "<own>:first:rid" and "mode", in that order),
-- attempt (the request id of the attempt to undo, a number), req (this
-- undo's request id) and unfirst (the first request id that a hold
-- without "<own>:first:rid" counts as: 0 takes it as begun before any
-- attempt, math.huge as begun by none). A key of another kind is refused
-- and left as it is (WRONGKIND); nil when the owner holds nothing;
-- {holds, 0} when nothing is the attempt's: this undo was applied already
-- (a resend), the attempt never reached Redis, or the hold began after
-- it; a hold that is not the last is dropped, the request id noted. Past
-- it, the attempt's hold is the owner's last: sets the local n.
if v.err or v[4] then
  --@include lib/kind.lua
  return other_kind(KEYS[1], 'lock') or v
end
if not v[1] then return nil end
local n = tonumber(v[1])
local last = tonumber(v[2] or '0')
if tonumber(req) <= last or last < attempt or
   tonumber(v[3] or unfirst) > attempt then
  return {n, 0}
end
if n > 1 then
  redis.call('hset', KEYS[1], own, n - 1, rid, req)
  return {n - 1, 0}
end
