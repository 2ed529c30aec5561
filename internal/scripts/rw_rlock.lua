-- scripts.RWRLock: a reader's attempt on a read-write lock.
-- KEYS[1]: the writer's key; KEYS[2]: the readers; KEYS[3]: the intent
-- (see rw_lock.lua).
-- ARGV[1]: the token; ARGV[2]: the TTL in milliseconds; ARGV[3]: "1" for
-- a reader that waits, anything else (or nothing) for one that does not.
-- If the writer's key exists it returns {the first 16 hex digits of the
-- SHA-1 of its value, its PTTL}, or fails with the error "WRONGKIND <key>
-- is a semaphore, not a lock" when it holds a semaphore's record
-- ("semaphore:..."). Else, if the intent's PTTL is positive, it returns
-- {"0000000000000000", the intent's PTTL}. Else it drops the expired
-- readers, adds ARGV[1] to the readers with the master's time plus
-- ARGV[2] as its score, sets the readers' TTL to ARGV[2] when their PTTL
-- is less, and returns 1.
-- A reader that waits and finds the writer's key taken, or the intent,
-- marks the writer's key for its release, through redis.pcall: the key
-- followed by scripts.ListenSuffix, with a TTL of the PTTL returned plus
-- ARGV[2] (see release.lua): readers wait on that key's channel without
-- being among its waiters.
local v = redis.call("get", KEYS[1])
if v then
  if string.sub(v, 1, 10) == "semaphore:" then
    return redis.error_reply("WRONGKIND " .. KEYS[1] .. " is a semaphore, not a lock")
  end
  local pttl = redis.call("pttl", KEYS[1])
  local t = ARGV[3] == "1" and tonumber(ARGV[2])
  if t then
    redis.pcall("set", KEYS[1] .. "$LISTEN", "1", "px", math.max(pttl, 0) + t)
  end
  return {string.sub(redis.sha1hex(v), 1, 16), pttl}
end
local w = redis.call("pttl", KEYS[3])
if w > 0 then
  local t = ARGV[3] == "1" and tonumber(ARGV[2])
  if t then
    redis.pcall("set", KEYS[1] .. "$LISTEN", "1", "px", w + t)
  end
  return {"0000000000000000", w}
end
local t = redis.call("time")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call("zremrangebyscore", KEYS[2], "-inf", now)
redis.call("zadd", KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
if redis.call("pttl", KEYS[2]) < tonumber(ARGV[2]) then
  redis.call("pexpire", KEYS[2], ARGV[2])
end
return 1
