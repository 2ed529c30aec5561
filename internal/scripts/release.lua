-- scripts.Release: deletes a lock's key if it holds the lock's token, then
-- wakes the key's waiters.
-- KEYS[1]: the lock's key.
-- ARGV[1]: the token. ARGV[2], when present: the turn's cutoff, in unix
-- milliseconds (see redlock's turns.go).
-- Without an ARGV[1], it changes nothing and returns 0.
-- If KEYS[1] holds ARGV[1], it deletes it. Whatever KEYS[1] holds, it
-- then wakes the waiters as below: a lock is held on a quorum, and each
-- release of it moves every master's queue by one, so that the masters'
-- queues stay the same and name the same Client next (on the other
-- masters, the lock's take did not land, or an attempt's partial vote
-- held the key). A release of a lock that expired and was taken again
-- wakes the longest waiter for nothing: its attempt fails, and enrolls it
-- again with its score, in its place.
-- It publishes (SPUBLISH) the release's id: the first 16 hex digits of
-- ARGV[1]'s SHA-1 (the token itself never leaves the master). It takes
-- the Client that has waited longest off the key's waiters (the sorted set
-- KEYS[1] followed by scripts.WaitersSuffix, see lock_wait.lua), names it
-- on the key for scripts.NamedMs milliseconds (the key KEYS[1] followed by
-- scripts.NamedSuffix) and publishes the id on that Client's channel:
-- scripts.ReleasedChannelPrefix, the key, a colon and the Client's id.
-- When no Client waits (or ZPOPMIN fails, as when an ACL forbids it), it
-- publishes the id on the key's channel, scripts.ReleasedChannelPrefix
-- followed by the key, which every waiting Client hears.
-- With an ARGV[2], when the Client that has waited longest joined after
-- the cutoff (its score is greater), the release wakes nobody.
-- It returns 0 when KEYS[1] did not hold ARGV[1]. Else: 3 when it woke
-- nobody for the cutoff; 2 when, with an ARGV[2], it took a Client off the
-- waiters; 1 otherwise.
-- The waiters, the name and the publishing go through redis.pcall, so
-- that an ACL that forbids ZPOPMIN or SPUBLISH costs the waiters their
-- retry delay, not the release.
local ours = redis.call("get", KEYS[1]) == ARGV[1]
if not ARGV[1] then
  return 0
end
if ours then
  redis.call("del", KEYS[1])
end
local w = KEYS[1] .. "$WAITERS"
local id = string.sub(redis.sha1hex(ARGV[1]), 1, 16)
local n
if ARGV[2] then
  local h = redis.pcall("zrange", w, 0, 0, "withscores")
  if type(h) == "table" and type(h[2]) == "string" then
    if tonumber(h[2]) > tonumber(ARGV[2]) then
      return ours and 3 or 0
    end
    n = redis.pcall("zpopmin", w)[1]
  end
else
  n = redis.pcall("zpopmin", w)[1]
end
if type(n) == "string" then
  redis.pcall("set", KEYS[1] .. "$NAMED", n, "px", $NAMEDMS)
  redis.pcall("spublish", "$RELEASED" .. KEYS[1] .. ":" .. n, id)
  if ARGV[2] and ours then
    return 2
  end
else
  redis.pcall("spublish", "$RELEASED" .. KEYS[1], id)
end
return ours and 1 or 0
