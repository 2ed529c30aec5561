-- scripts.RWRExtend: extends a reader of a read-write lock.
-- KEYS[1]: the writer's key (not read); KEYS[2]: the readers (see
-- rw_lock.lua).
-- ARGV[1]: the token; ARGV[2]: the TTL in milliseconds.
-- If ARGV[1] is a reader that has not expired, it moves its expiry to the
-- master's time plus ARGV[2], sets the readers' TTL to ARGV[2] when their
-- PTTL is less, and returns 1; else it returns 0.
local t = redis.call("time")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local s = redis.call("zscore", KEYS[2], ARGV[1])
if not s or tonumber(s) <= now then
  return 0
end
redis.call("zadd", KEYS[2], "xx", now + tonumber(ARGV[2]), ARGV[1])
if redis.call("pttl", KEYS[2]) < tonumber(ARGV[2]) then
  redis.call("pexpire", KEYS[2], ARGV[2])
end
return 1
