-- scripts.LockMulti: one lock on several keys, all or none.
-- KEYS: the lock's keys.
-- ARGV[1]: the token; ARGV[2]: the TTL in milliseconds.
-- If a key exists, it changes nothing and returns, for the first existing
-- key, {the first 16 hex digits of the SHA-1 of its value, its PTTL}, or
-- fails with the error "WRONGKIND <key> is a semaphore, not a lock" when
-- that key holds a semaphore's record ("semaphore:..."). Else it sets
-- every key to ARGV[1] with a TTL of ARGV[2] and returns 1.
-- A key found taken is marked for its release, through redis.pcall:
-- the key followed by scripts.ListenSuffix, with a TTL of its PTTL plus
-- ARGV[2] (see release.lua): this Client may wait on its channel
-- without being among its waiters.
for i = 1, #KEYS do
  local v = redis.call("get", KEYS[i])
  if v then
    if string.sub(v, 1, 10) == "semaphore:" then
      return redis.error_reply("WRONGKIND " .. KEYS[i] .. " is a semaphore, not a lock")
    end
    local pttl = redis.call("pttl", KEYS[i])
    local t = tonumber(ARGV[2])
    if t then
      redis.pcall("set", KEYS[i] .. "$LISTEN", "1", "px", math.max(pttl, 0) + t)
    end
    return {string.sub(redis.sha1hex(v), 1, 16), pttl}
  end
end
for i = 1, #KEYS do
  redis.call("set", KEYS[i], ARGV[1], "px", ARGV[2])
end
return 1
