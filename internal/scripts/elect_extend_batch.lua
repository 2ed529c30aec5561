-- scripts.ElectExtendBatch: extends many leaders in one call, with
-- extend_batch.lua's arguments.
-- ARGV[1]: the number of leaders; then, per leader, three arguments: its
-- token, its TTL in milliseconds and how many of KEYS are its keys.
-- KEYS: every leader's keys, leader after leader, in order: its
-- election's key, then its record.
-- A leader's first key alone must hold its token (its record holds the
-- record): if it does, every one of its keys gets its TTL and its entry
-- of the reply is 1; else its entry is 0. It returns an array with one
-- entry per leader.
local out = {}
local k = 1
local a = 2
for i = 1, tonumber(ARGV[1]) do
  local tok = ARGV[a]
  local ttl = ARGV[a + 1]
  local n = tonumber(ARGV[a + 2])
  a = a + 3
  local ok = 0
  if redis.call("get", KEYS[k]) == tok then
    for j = k, k + n - 1 do
      redis.call("pexpire", KEYS[j], ttl)
    end
    ok = 1
  end
  out[i] = ok
  k = k + n
end
return out
