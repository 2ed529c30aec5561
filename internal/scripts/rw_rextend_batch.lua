-- scripts.RWRExtendBatch: rw_rextend.lua for many readers in one call.
-- ARGV[1]: the number of readers; then, per reader, three arguments: the
-- token, the TTL in milliseconds and a third that it ignores.
-- KEYS: per reader, one key, the readers' key, reader after reader, in
-- order.
-- It returns an array with rw_rextend.lua's answer per reader: 1 if the
-- token was a reader that had not expired (and was extended), else 0.
local t = redis.call("time")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local out = {}
local a = 2
for i = 1, tonumber(ARGV[1]) do
  local tok = ARGV[a]
  local ttl = ARGV[a + 1]
  a = a + 3
  local ok = 0
  local s = redis.call("zscore", KEYS[i], tok)
  if s and tonumber(s) > now then
    redis.call("zadd", KEYS[i], "xx", now + tonumber(ttl), tok)
    if redis.call("pttl", KEYS[i]) < tonumber(ttl) then
      redis.call("pexpire", KEYS[i], ttl)
    end
    ok = 1
  end
  out[i] = ok
end
return out
