-- scripts.SemExtendBatch: sem_extend.lua for many permits in one call.
-- ARGV[1]: the number of permits; then, per permit, sem_extend.lua's
-- three arguments: the token, the TTL in milliseconds and P.
-- KEYS: per permit, two keys, sem_extend.lua's: the semaphore's record
-- and the permit's key, permit after permit, in order.
-- It returns an array with sem_extend.lua's answer per permit: 1 if the
-- permit's key held its token (and was extended, its record as
-- sem_extend.lua does), else 0.
local out = {}
local k = 1
local a = 2
for i = 1, tonumber(ARGV[1]) do
  local tok = ARGV[a]
  local ttl = ARGV[a + 1]
  local p = ARGV[a + 2]
  a = a + 3
  local ok = 0
  if redis.call("get", KEYS[k + 1]) == tok then
    redis.call("pexpire", KEYS[k + 1], ttl)
    local m = redis.pcall("get", KEYS[k])
    if (m == false or m == "semaphore:" .. p) and redis.call("pttl", KEYS[k]) < tonumber(ttl) then
      redis.call("set", KEYS[k], "semaphore:" .. p, "px", ttl)
    end
    ok = 1
  end
  out[i] = ok
  k = k + 2
end
return out
