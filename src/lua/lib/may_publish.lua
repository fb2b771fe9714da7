-- lib/may_publish.lua -- ask the ACL before a release's first write.
--
-- may_publish(cmd, chan): nil when this user may send cmd (PUBLISH or
-- SPUBLISH) to channel chan, else the error reply "NOPERM ..."
-- (HILOCK_ENOPERM). Redis does not undo what a script wrote before one of
-- its commands was refused, so a release that publishes asks first,
-- before its first write. Redis 6 has no such check (nil there); its
-- releases publish before they delete, which covers the common case.
local function may_publish(cmd, chan)
  if redis.acl_check_cmd and not redis.acl_check_cmd(cmd, chan, '0') then
    return redis.error_reply('NOPERM the user may not ' .. cmd ..
                             ' to the release channel')
  end
end
