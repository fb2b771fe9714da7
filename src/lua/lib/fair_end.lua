-- lib/fair_end.lua -- how the last hold of a fair lock ends, shared by
-- fair_release and fair_undo (their arguments at other places).
--
-- Reads the locals q (the queue's name), fencing ("1" to issue fencing
-- tokens), fence (the fencing counter's name), pub and chan (the publish
-- command and the lock's channel), me (the caller's listener) and marked
-- (the value of the queue's marker the lock still has, else false). The
-- lock goes to the first live entry of the queue (hand, lib/fair.lua):
-- {0, 0, 0}, or
-- {0, 0, owner tag, wait id, token, sent, span} when it went to the
-- caller's own client; a turn of a waiter without fair mode is {0,
-- subscribers}; with nobody to take it the release ARGV[1] is published,
-- {0, subscribers}. The script's reply.
--@include lib/fair.lua
local h = hand(KEYS[1], q, KEYS[3], now_ms(), fencing, fence, pub, chan, me,
               nil, marked)
if not h then return {0, redis.call(pub, chan, ARGV[1])} end
if type(h) == 'number' then return {0, h} end
if h[1] == me then return {0, 0, h[2], h[3], h[4], h[5], h[6]} end
return {0, 0, 0}
