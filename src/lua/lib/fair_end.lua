-- lib/fair_end.lua -- how the last hold of a fair lock ends, shared by
-- fair_release and fair_undo (their arguments at other places).
--
-- Reads the locals q (the queue's name), fencing ("1" to issue fencing
-- tokens), fence (the fencing counter's name), pub and chan (the publish
-- command and the lock's channel), me (the caller's listener) and marked
-- (the value of the queue's marker the lock had, else false); the lock's
-- key is gone. The lock goes to the first live entry of the queue (hand,
-- lib/fair.lua), the marker with it while others queue:
-- {0, 0, 0}, or
-- {0, 0, owner tag, wait id, token, sent, span} when it went to the
-- caller's own client; a turn of a waiter without fair mode is {0,
-- subscribers}; with nobody to take it the release ARGV[1] is published,
-- {0, subscribers}. The script's reply. The common case (the head entry
-- live and heard) is written out here, without the functions of
-- lib/fair.lua, whose definitions would cost Redis on every call.
local own = KEYS[3]
local e = redis.call('lpop', q)
-- nobody queued (the marker stayed behind): freed
if not e then return {0, redis.call(pub, chan, ARGV[1])} end
local c = redis.call('time')
local now = c[1] * 1000 + math.floor(c[2] / 1000)
local t, ts = nil, '0'
-- the common case first, without defining the functions of lib/fair.lua:
-- the head entry is live and its client hears the hand-off (as hand
-- does it); anything else goes back as it was, to hand
do
  local d, l, lt, w, s, wr, f, tag =
    string.match(e, '^~?([^:]+):([^:]+):([^:]+):([^:]+):([^:]+):' ..
                    '([^:]+):(.*:([^:]*))$')
  if d and tonumber(d) > now and
     ((marked and string.byte(marked) == 110) or
      redis.call('hget', own, f) == e) and
     redis.call('hdel', own, f) == 1 then
    if fencing == '1' then
      t = redis.call('incr', fence)
      ts = string.format('%d', t)
    end
    local ms = tonumber(l) > 5000 and '5000' or l
    local span = now - tonumber(wr) + tonumber(ms)
    if lt == me or
       redis.call(pub, chan .. ':' .. lt, tag .. ':' .. w .. ':' .. ts ..
                  ':' .. s .. ':' .. string.format('%d', span)) > 0 then
      local nx = redis.call('lindex', q, 0)
      if nx then
        redis.call('hset', KEYS[1], f, '1', 'hilock:handed', ts .. ':' .. w,
                   'hilock:queued', marked or '1')
      else
        redis.call('hset', KEYS[1], f, '1', 'hilock:handed', ts .. ':' .. w)
      end
      redis.call('pexpire', KEYS[1], ms)
      -- the new owner's client wakes its own next waiter
      local nl = nx and string.match(nx, '^~?[^:]+:[^:]+:([^:]+):')
      if nl and nl ~= lt then
        redis.call(pub, chan .. ':' .. nl, 'wake:' .. ms)
      end
      if lt == me then return {0, 0, tag, w, t or 0, s, span} end
      return {0, 0, 0}
    end
    redis.call('hset', own, f, e)
  end
  redis.call('lpush', q, e)
end
--@include lib/fair.lua
local h = hand(KEYS[1], q, own, now, fencing, fence, pub, chan, me, nil,
               false, t)
if not h then return {0, redis.call(pub, chan, ARGV[1])} end
if type(h) == 'number' then return {0, h} end
if h[1] == me then return {0, 0, h[2], h[3], h[4], h[5], h[6]} end
return {0, 0, 0}
