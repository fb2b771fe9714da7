-- write_leave -- a waiting writer gave up: its mark goes.
--
-- keys: 2
-- args: 2
--
-- KEYS[1]  the lock
-- KEYS[2]  the waiting writer's mark
-- ARGV[1]  the same mark's name
-- ARGV[2]  the writer's field
--
-- Replies: 0. The mark is deleted if this writer made it last.
if redis.call('get', ARGV[1]) == ARGV[2] then
  redis.call('del', ARGV[1])
end
return 0
