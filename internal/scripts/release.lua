-- scripts.Release: deletes a lock's key if it holds the lock's token, then
-- wakes the key's waiters.
-- KEYS[1]: the lock's key.
-- ARGV[1]: the token. ARGV[2]: the release's id, the first 16 hex digits
-- of the token's SHA-1, which the Client computes (redlock's
-- token.releaseID), so that the token itself never leaves the master and
-- the master does not hash it. ARGV[3], when present: the turn's cutoff,
-- in unix milliseconds (see redlock's turns.go).
-- If KEYS[1] does not hold ARGV[1], it changes nothing and returns 0.
-- Else it deletes KEYS[1] and, when someone waits (see below), publishes
-- (SPUBLISH) the release's id. It
-- takes the Client that has waited longest off the key's waiters (the
-- sorted set KEYS[1] followed by scripts.WaitersSuffix, see
-- lock_wait.lua), names it on the key for scripts.NamedMs milliseconds
-- (the key KEYS[1] followed by scripts.NamedSuffix) and publishes the id
-- on that Client's channel: scripts.ReleasedChannelPrefix, the key, a
-- colon and the Client's id. When no Client waits (or ZPOPMIN fails, as
-- when an ACL forbids it), it publishes the id on the key's channel,
-- scripts.ReleasedChannelPrefix followed by the key, which every waiting
-- Client hears. It returns 1.
-- With an ARGV[3], when the Client that has waited longest joined after
-- the cutoff (its score is greater), the release wakes nobody: it
-- returns 3 after the delete. When it took a Client off the waiters, it
-- returns 2. When none waits, it returns 1.
-- A release of a key nobody waits for (without the mark that every
-- waiting attempt leaves, the key followed by scripts.ListenSuffix: the
-- uncontended case) publishes nothing and returns 1. An EXISTS that
-- fails counts as a mark. A key with the mark and no waiters' set finds
-- none to take off, and publishes on the key's channel.
-- The waiters, the name and the publishing go through redis.pcall, so
-- that an ACL that forbids EXISTS, ZPOPMIN or SPUBLISH costs the waiters
-- their retry delay, not the release.
if redis.call("get", KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call("del", KEYS[1])
if redis.pcall("exists", KEYS[1] .. "$LISTEN") == 0 then
  return 1
end
local w = KEYS[1] .. "$WAITERS"
local id = ARGV[2]
local n
if ARGV[3] then
  local h = redis.pcall("zrange", w, 0, 0, "withscores")
  if type(h) == "table" and type(h[2]) == "string" then
    if tonumber(h[2]) > tonumber(ARGV[3]) then
      return 3
    end
    n = redis.pcall("zpopmin", w)[1]
  end
else
  n = redis.pcall("zpopmin", w)[1]
end
if type(n) == "string" then
  redis.pcall("set", KEYS[1] .. "$NAMED", n, "px", $NAMEDMS)
  redis.pcall("spublish", "$RELEASED" .. KEYS[1] .. ":" .. n, id)
  if ARGV[3] then
    return 2
  end
else
  redis.pcall("spublish", "$RELEASED" .. KEYS[1], id)
end
return 1
