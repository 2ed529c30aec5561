-- scripts.ExtendBatch: extends many locks in one call, each on its own
-- terms.
-- ARGV[1]: the number of locks; then, per lock, three arguments: its
-- token, its TTL in milliseconds and how many of KEYS are its keys.
-- KEYS: every lock's keys, lock after lock, in order.
-- A lock is extended (every one of its keys gets its TTL), and its entry
-- of the reply is 1, only if every one of its keys holds its token; else
-- its keys are left alone and its entry is 0. It never re-creates a key.
-- It returns an array with one entry per lock.
local out = {}
local k = 1
local a = 2
for i = 1, tonumber(ARGV[1]) do
  local tok = ARGV[a]
  local ttl = ARGV[a + 1]
  local n = tonumber(ARGV[a + 2])
  a = a + 3
  local ok = 1
  for j = k, k + n - 1 do
    if redis.call("get", KEYS[j]) ~= tok then
      ok = 0
      break
    end
  end
  if ok == 1 then
    for j = k, k + n - 1 do
      redis.call("pexpire", KEYS[j], ttl)
    end
  end
  out[i] = ok
  k = k + n
end
return out
