-- scripts.FenceWrite: a fenced Lock's second round. On a cluster it runs
-- after fence_vouch.lua.
-- KEYS: the lock's keys, then the fencing counter (the last of KEYS).
-- ARGV[1]: the token; ARGV[2]: the fencing token to write.
-- It returns 0 if one of the lock's keys does not hold ARGV[1]; else 2 if
-- there is no counter; else it raises the counter to ARGV[2] (never
-- lowering it) and returns 1.
local n = #KEYS - 1
for i = 1, n do
  if redis.call("get", KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
local g = redis.call("get", KEYS[#KEYS])
if not g then
  return 2
end
if tonumber(g) < tonumber(ARGV[2]) then
  redis.call("set", KEYS[#KEYS], ARGV[2])
end
return 1
