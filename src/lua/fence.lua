-- fence -- Redlock: raise a master's fencing counter to a token.
--
-- keys: 1
-- args: 1
--
-- KEYS[1]  the fencing counter
-- ARGV[1]  a token handed out by some master
--
-- Replies: 1. The counter is raised to the token when it is below, so
-- that the next acquisition on this master draws a larger one. A token
-- is reported only after a majority has it (see lock.c), and any later
-- majority shares a master with that one.
if tonumber(redis.call('get', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  redis.call('set', KEYS[1], ARGV[1])
end
return 1
