-- multi_release -- MultiLock: drop one hold on each of several locks.
--
-- keys: 2..
-- args: 5
--
-- KEYS[1..n]     the locks
-- KEYS[n+1..2n]  their channels
-- ARGV[1]  the release message
-- ARGV[2]  lease ms
-- ARGV[3]  owner field
-- ARGV[4]  "publish" or "spublish"
-- ARGV[5]  request id
--
-- Replies: how many locks the owner held. One hold is dropped on every
-- lock it holds (a lock left with none is deleted and its release
-- published, else its lease is set again); a key of another kind is not
-- one of them and is left alone. A resend drops nothing a second time
-- (the request id, as for release). A channel the ACL refuses fails it
-- before anything changed (lib/may_publish.lua).
--@include lib/may_publish.lua
local n = #KEYS / 2
for i = n + 1, #KEYS do
  local e = may_publish(ARGV[4], KEYS[i])
  if e then return e end
end
local rid = ARGV[3] .. ':rid'
local held = 0
for i = 1, n do
  local v = redis.pcall('hmget', KEYS[i], ARGV[3], rid, 'mode')
  if not v.err and v[1] and not v[3] then
    held = held + 1
    if tonumber(ARGV[5]) > tonumber(v[2] or '0') then
      local c = tonumber(v[1]) - 1
      if c > 0 then
        redis.call('hset', KEYS[i], ARGV[3], c, rid, ARGV[5])
        redis.call('pexpire', KEYS[i], ARGV[2])
      else
        redis.call(ARGV[4], KEYS[n + i], ARGV[1])
        redis.call('del', KEYS[i])
      end
    end
  end
end
return held
