-- lib/fair.lua -- the fair queue, shared by the fair scripts.
--
-- Fair mode (hilock_options.fair): a FIFO of waiters in the list
-- "hilock_queue:{name}", in the lock's slot. An entry is
--   "<deadline>:<lease>:<listener>:<wait id>:<sent>:<written>:<owner field>"
-- deadline: the server's unix time in ms after which the entry is stale
-- (its waiter gave up or died); lease: the lease it asked for; listener:
-- its client's public channel tag (never the client id, which is
-- secret); wait id: which acquire call of that owner it is; sent: the
-- waiter's own monotonic clock (ms) when it sent the request that wrote
-- the entry; written: the server's time (ms) when that request wrote it.
-- An owner has one live entry at most: the hash "hilock_queue:{name}:owners"
-- maps each queued owner field to its entry, so that queueing, a retry
-- and leaving find it without reading the list into Lua (with a hundred
-- waiters, a scan of the list was most of what a fair acquire cost
-- Redis): a retry of the same wait leaves its entry as it is while the
-- entry lives at least half its time more (the sent and written times it
-- keeps still bound a hand-off's lease, see below), else finds its place
-- with LPOS and refreshes it there (a scan in C, after half its time).
-- Leaving takes the owner's value out of the owners hash; the entry goes
-- out of the list when it is at either end, else it stays behind, and
-- whoever pops it passes it over: an entry is live only while its
-- owner's value is that very entry. While the lock's marker (below) is
-- "n<ms>", written by the waiter that started the queue, nothing was left
-- behind and a pop trusts the HDEL of the owner's value; the first entry
-- left behind makes it "1" (as every other writer of the marker writes
-- it), and pops compare. When the entries left behind outnumber the live
-- ones (more than twice, and 16), the leave writes the list again
-- without them. So joining, most retries, leaving and a hand-off cost
-- the same in a queue of any length. Both keys live until the last
-- deadline at least and twice the longest wait past it at most: a waiter
-- that queues extends them only when they would expire before its
-- deadline, and then to twice its wait. The <ms> of "n<ms>" is when they
-- expire (server time), so that most queueings cost no PTTL and no
-- PEXPIRE; with "1" the owners hash's PTTL tells (a hash emptied and
-- written again has none, while entries left behind keep the list).
--
-- A hand-off makes the first live entry the owner inside the script that
-- frees the lock: its field = 1 and the marker field "hilock:handed" =
-- "<token>:<wait id>" (the token drawn for it, the wait it went to), a
-- short lease (at most 5 s of what it asked: a waiter that died costs no
-- more), and a message "<owner tag>:<wait id>:<token>:<sent>:<span>" on
-- "<channel>:<listener>". span is the time in ms from the entry's writing
-- to the end of that lease, by the server's clock: the hold cannot end
-- before sent + span in the receiver's own clock (it sent the request
-- before the server wrote the entry), so the receiver knows, when it
-- reads the message, how much of the lease is left, however late that is
-- (see wait.c). The token is drawn (INCR) before the first PUBLISH and
-- given back (DECR) in the same call when no entry took the hold, so that
-- the counter moves only for a hold handed. The entry queued next hears
-- "wake:<ms>" on its own channel, the short lease, so that its client
-- looks again when that ends (a hold handed to a waiter that died moves
-- on then: nothing is published when a lease runs out); not when it is
-- the new owner's client's, which arms its next waiter itself on taking
-- the hold. The new owner needs no more: its
-- watchdog extends the short lease at its first renewal. Only an owner
-- that asked for a longer explicit lease claims the hold (drops the
-- marker, sets its lease) with the acquire script, as does a waiter whose
-- message was lost and whose retry finds the hold handed to that very
-- wait. The marker stays otherwise until the hold ends; re-entries of the
-- owner count as usual beside it. A Redisson RLock only looks at its own
-- field, so it stays excluded throughout. Whoever finds the lock free
-- with a live entry first hands it over (a release, or any fair acquire:
-- a hold that ran out, or one released by a client without fair mode,
-- moves on too). Stale entries are dropped where they are met.
--
-- While anyone queues, the lock hash keeps the field "hilock:queued"
-- (the queue's marker): every release drops only the owner's fields, so
-- the key stays, a plain RESTORE is refused, and every script sees a
-- hash with the marker alone as a free lock with a queue, reserved for
-- the first in line (a plain release's message wakes the waiters, and
-- the first that looks serves the head). A script that queues a waiter
-- writes the marker (a key of the marker alone gets a 5 s lease: it
-- must not outlive the queue by much); the hand-off, acquisition or
-- leave that empties the queue takes it away, the key with it when the
-- marker was all that was left. Nobody queued, no marker: the
-- uncontended path costs nothing more. A key that vanishes whole (a
-- lease ran out, Redisson's release deletes it) loses the marker until
-- the next waiter queues or looks.
--
-- A hand-off that nobody received goes to the next entry in the same
-- call: PUBLISH counts the connections subscribed to the waiter's
-- client's channel, and 0 proves that nobody will act on that message
-- (the releasing client's own waiter learns it from the reply instead,
-- and is sent no message).
-- It does not prove the waiter dead: one client's waiters share one
-- subscriber connection, which may be reconnecting, or may not have
-- confirmed the subscription yet right after queueing. So a waiter that
-- no one heard is not handed the lock (which would only hold everyone
-- for the short lease) but keeps its place once: its entry goes back to
-- the head marked "~", and its retry on subscribing again keeps that
-- place; met deaf a second time, it is dropped (a live one queues again
-- at its next retry). Every entry of a listener found deaf is passed
-- over without a second PUBLISH. A fair acquire whose call goes past
-- such entries to the caller's own takes the lock itself in that call
-- (handed to it by message while it queued again, it would leave a
-- second entry behind). A waiter whose process was killed, its
-- connections closed, so costs one PUBLISH of a script call, not a
-- lease.
--
-- Waiters without fair mode take their place in line too, or they would
-- never find the lock free while fair waiters hand it on among
-- themselves: one that waits and finds the lock held and a queue started
-- adds "plain:<owner field>" (see acquire.lua), and a fair waiter that
-- starts a queue publishes a release so that they look again. A hand-off
-- that meets such a live entry gives that waiter a turn instead: the
-- lock stays free (the marker alone), the release is published on the
-- lock's channel, and everyone else leaves it alone until "hilock:turn"
-- in the owners hash ("<end>:<owner field>") has passed (at most 500 ms,
-- the turn's length written below) or that waiter took it (its acquire
-- ends the turn). A turn nobody can hear (0 subscribers of the lock's
-- channel) is not given.
--
-- The functions, defined only by the scripts' paths that meet a queue (a
-- definition costs Redis on every call that runs it): now_ms() the
-- server's clock; parse(e) an entry's fields and the owner tag (the last
-- part of its owner field: patterns of [^:] cost Redis half what %d ones
-- do, as string.format does against tostring); owner_of(e, own) its
-- owner field and deadline, ('', 0) for an entry left behind (own: the
-- owners hash), nil and math.huge for a waiter without fair mode;
-- turn_of(own) the turn's end (0: none) and owner; mark(lock, q) puts
-- the marker on a held lock, or takes it away, as q is queued or empty;
-- hand(...) hands the free lock to the first live entry (see above),
-- gives a waiter without fair mode its turn, puts the entries met deaf
-- back at the head marked "~", and leaves the marker as the queue is
-- (marked: the marker's value now, nil without): nil when nobody took
-- it, a number (subscribers) for a turn, else {listener, owner tag, wait
-- id, token, sent, span, owner field}; t: a token drawn for it already
-- (lib/fair_end.lua), given back when nobody took the lock.
local function now_ms()
  local t = redis.call('time')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end
local function parse(e)
  return string.match(e, '^~?([^:]+):([^:]+):([^:]+):([^:]+):([^:]+):' ..
                         '([^:]+):(.*:([^:]*))$')
end
local function owner_of(e, own)
  if string.sub(e, 1, 6) == 'plain:' then return nil, math.huge end
  local d, l, lt, w, s, wr, f = parse(e)
  if not f or (own and redis.call('hget', own, f) ~= e) then return '', 0 end
  return f, tonumber(d)
end
local function turn_of(own)
  local v = redis.call('hget', own, 'hilock:turn')
  if not v then return 0, nil end
  local u, f = string.match(v, '^(%d+):(.*)$')
  return tonumber(u or v), f
end
local function mark(lock, q)
  if redis.call('exists', q) == 1 then
    redis.call('hset', lock, 'hilock:queued', '1')
  else
    redis.call('hdel', lock, 'hilock:queued')
  end
end
local function hand(lock, q, own, now, fencing, fence, pub, chan, me, mine,
                    marked, t)
  local deaf, back, ts, r, nx = nil, nil, t and string.format('%d', t) or '0'
  while true do
    local e = redis.call('lpop', q)
    if not e then break end
    if string.sub(e, 1, 6) == 'plain:' then
      -- a waiter without fair mode: a turn, if it is live and heard
      local pf = string.sub(e, 7)
      local pd = tonumber(redis.call('hget', own, pf) or '0')
      redis.call('hdel', own, pf)
      if pd > now then
        local n = redis.call(pub, chan, '0')
        if n > 0 then
          redis.call('hset', own, 'hilock:turn', (now + 500) .. ':' .. pf)
          if redis.call('pttl', own) < 500 then
            redis.call('pexpire', own, 500)
          end
          r = n
          break
        end
      end
    else
      local d, l, lt, w, s, wr, f, tag = parse(e)
      -- an entry its owner left behind is passed over: with the marker
      -- "n" there is none, else its owner's value has moved on
      local live = f and ((marked and string.byte(marked) == 110) or
                          redis.call('hget', own, f) == e)
      if live then live = redis.call('hdel', own, f) == 1 end
      if live then
        if tonumber(d) > now then
          if not (deaf and deaf[lt]) then
            if fencing == '1' and not t then
              t = redis.call('incr', fence)
              ts = string.format('%d', t)
            end
            local ms = tonumber(l) > 5000 and '5000' or l
            local span = string.format('%d', now - tonumber(wr) + tonumber(ms))
            local m = tag .. ':' .. w .. ':' .. ts .. ':' .. s .. ':' .. span
            -- the caller's own client learns it from the reply: no message
            if lt == me or redis.call(pub, chan .. ':' .. lt, m) > 0 or
               f == mine then
              redis.call('hset', lock, f, '1', 'hilock:handed', ts .. ':' .. w)
              redis.call('pexpire', lock, ms)
              nx = redis.call('lindex', q, 0)
              local nl = nx and string.match(nx, '^~?[^:]+:[^:]+:([^:]+):')
              -- the new owner's client wakes its own next waiter
              if nl and nl ~= lt and not (deaf and deaf[nl]) then
                redis.call(pub, chan .. ':' .. nl, 'wake:' .. ms)
              end
              r = {lt, tag, w, t or 0, s, tonumber(span), f}
              break
            end
            deaf = deaf or {}
            deaf[lt] = true
          end
          if string.sub(e, 1, 1) ~= '~' then
            back = back or {}
            back[#back + 1] = {e, f}
          end
        end
      end
    end
  end
  if back then
    for i = #back, 1, -1 do
      local e = '~' .. back[i][1]
      -- a list (and owners hash) written again has no expiry: the marker
      -- that told it goes
      if redis.call('lpush', q, e) == 1 then marked = nil end
      redis.call('hset', own, back[i][2], e)
    end
  end
  if t and type(r) ~= 'table' then redis.call('decr', fence) end
  if type(r) == 'table' then
    if (nx or back) and not marked then
      redis.call('hset', lock, 'hilock:queued', '1')
    elseif marked and not (nx or back) then
      redis.call('hdel', lock, 'hilock:queued')
    end
  elseif r or redis.call('exists', q) == 1 then
    redis.call('hset', lock, 'hilock:queued', '1')
    redis.call('pexpire', lock, 5000)
  elseif marked then
    redis.call('hdel', lock, 'hilock:queued')
  end
  return r
end
