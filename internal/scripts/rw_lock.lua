-- scripts.RWLock: a writer's attempt on a read-write lock. On a cluster,
-- fenced, it runs after fence_vouch.lua.
-- KEYS[1]: the writer's key (a lock's key); KEYS[2]: the readers, a
-- sorted set of the readers' tokens scored by their expiry in
-- milliseconds on the master's clock (TIME); KEYS[3]: the intent, present
-- while a writer waits for readers to leave; fenced, KEYS[4]: the fencing
-- counter.
-- ARGV[1]: the token; ARGV[2]: the TTL in milliseconds; ARGV[3]: "1" for
-- a writer that waits, "0" for one that does not; fenced, ARGV[4]: the
-- proposed fencing token.
-- If the writer's key exists it returns {the first 16 hex digits of the
-- SHA-1 of its value, its PTTL}, or fails with the error "WRONGKIND <key>
-- is a semaphore, not a lock" when it holds a semaphore's record
-- ("semaphore:..."). Else it drops the expired readers (those whose score
-- the master's time has reached); if readers remain it returns
-- {"0000000000000000", how long until the last reader expires}, having,
-- for a writer that waits, set the intent (with a TTL of ARGV[2]) when
-- its PTTL is less than ARGV[2]. Else it sets the writer's key to ARGV[1]
-- with a TTL of ARGV[2], deletes the intent and returns 1; fenced, it
-- then raises the counter to ARGV[4] when that is larger (never lowering
-- it) and returns {1, the counter as it was before}, or {1} when there is
-- no counter.
-- A writer that waits marks a writer's key it finds taken for its
-- release, through redis.pcall: the key followed by
-- scripts.ListenSuffix, with a TTL of its PTTL plus ARGV[2] (see
-- release.lua): it waits on the key's channel without being among the
-- key's waiters.
local v = redis.call("get", KEYS[1])
if v then
  if string.sub(v, 1, 10) == "semaphore:" then
    return redis.error_reply("WRONGKIND " .. KEYS[1] .. " is a semaphore, not a lock")
  end
  local pttl = redis.call("pttl", KEYS[1])
  if ARGV[3] == "1" then
    local t = tonumber(ARGV[2])
    if t then
      redis.pcall("set", KEYS[1] .. "$LISTEN", "1", "px", math.max(pttl, 0) + t)
    end
  end
  return {string.sub(redis.sha1hex(v), 1, 16), pttl}
end
local t = redis.call("time")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call("zremrangebyscore", KEYS[2], "-inf", now)
local r = redis.call("zrange", KEYS[2], -1, -1, "withscores")
if #r > 0 then
  if ARGV[3] == "1" and redis.call("pttl", KEYS[3]) < tonumber(ARGV[2]) then
    redis.call("set", KEYS[3], "1", "px", ARGV[2])
  end
  return {"0000000000000000", tonumber(r[2]) - now}
end
redis.call("set", KEYS[1], ARGV[1], "px", ARGV[2])
redis.call("del", KEYS[3])
if #KEYS == 4 then
  local g = redis.call("get", KEYS[4])
  if g then
    if tonumber(g) < tonumber(ARGV[4]) then
      redis.call("set", KEYS[4], ARGV[4])
    end
    return {1, g}
  end
  return {1}
end
return 1
