-- scripts.FenceLock: a fenced Lock's first round, and in the common case
-- its only one. On a cluster it runs after fence_vouch.lua.
-- KEYS: the lock's keys, then the fencing counter (the last of KEYS).
-- ARGV[1]: the token; ARGV[2]: the TTL in milliseconds; ARGV[3]: the
-- proposed fencing token.
-- If one of the lock's keys exists, it changes nothing and returns, for
-- the first existing key, {the first 16 hex digits of the SHA-1 of its
-- value, its PTTL}, or fails with the error "WRONGKIND <key> is a
-- semaphore, not a lock" when that key holds a semaphore's record
-- ("semaphore:..."). Else it sets the lock's keys to ARGV[1] with a TTL
-- of ARGV[2]; if there is a counter, it raises it to ARGV[3] when that is
-- larger (never lowering it) and returns {1, the counter as it was
-- before}; with no counter it returns {1} and writes none.
-- A key found taken is marked for its release, through redis.pcall:
-- the key followed by scripts.ListenSuffix, with a TTL of its PTTL plus
-- ARGV[2] (see release.lua): this Client may wait on its channel
-- without being among its waiters.
local n = #KEYS - 1
for i = 1, n do
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
for i = 1, n do
  redis.call("set", KEYS[i], ARGV[1], "px", ARGV[2])
end
local g = redis.call("get", KEYS[#KEYS])
if g then
  if tonumber(g) < tonumber(ARGV[3]) then
    redis.call("set", KEYS[#KEYS], ARGV[3])
  end
  return {1, g}
end
return {1}
