-- lib/rw_undo.lua -- the request-id check of read_undo and write_undo
-- (the same layout of arguments).
--
-- Reads the local n (the owner's holds, as lib/rw_release.lua read them)
-- and makes it a number. Returns {n, 0}, dropping nothing, unless the
-- attempt ARGV[8] reached Redis (the owner's last request id applied,
-- kept in the request ids ARGV[7], is not below it), this undo ARGV[9]
-- was not applied already, and the owner's hold began with that attempt
-- or before it (the request ids' "<field>:first"; a hold without it was
-- begun by no attempt these scripts know, and stays).
n = tonumber(n)
local ids = redis.call('hmget', ARGV[7], ARGV[3], ARGV[3] .. ':first')
local last, attempt = tonumber(ids[1] or '0'), tonumber(ARGV[8])
if tonumber(ARGV[9]) <= last or last < attempt or not ids[2] or
   tonumber(ids[2]) > attempt then
  return {n, 0}
end
