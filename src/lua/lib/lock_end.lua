-- lib/lock_end.lua -- how an owner's last hold of a lock ends without
-- fair mode, shared by release and undo (their arguments at other
-- places).
--
-- Reads the locals pub and chan (the publish command and the lock's
-- channel), own (the owner field), rid (its request id field) and queued
-- (the queue's marker as the script read it). The release ARGV[1] is
-- published first (a PUBLISH an ACL refuses ends the script before it
-- wrote anything); an empty ARGV[1] (a quiet release, see release.lua)
-- publishes nothing while nobody queues in Redis. Then, while waiters
-- queue, only the owner's fields go and the marker stays for the first
-- of them (the key gets the marker's 5 s lease), else the lock is
-- deleted. The script's reply.
local heard = 0
if ARGV[1] ~= '' then
  heard = redis.call(pub, chan, ARGV[1])
elseif queued then
  heard = redis.call(pub, chan, '0')
end
if queued then
  redis.call('hdel', KEYS[1], own, rid, own .. ':first:rid', 'hilock:handed')
  redis.call('pexpire', KEYS[1], 5000)
else
  redis.call('del', KEYS[1])
end
return {0, heard}
