-- scripts.FenceRepair: gives an unsure master its fencing counter back.
-- On a cluster it runs after fence_vouch.lua.
-- KEYS[1]: the fencing counter; KEYS[2]: the unsure hash.
-- ARGV[1]: the since the repair saw (see fence_state.lua); ARGV[2]: the
-- counter's value.
-- An existing counter is raised to ARGV[2] (never lowered), and it
-- returns 1. With no counter, if the hash's since is still ARGV[1] it
-- sets the counter to ARGV[2], deletes the hash and returns 1; a master
-- that restarted again meanwhile is left alone, and it returns 0.
local g = redis.call("get", KEYS[1])
if g then
  if tonumber(g) < tonumber(ARGV[2]) then
    redis.call("set", KEYS[1], ARGV[2])
  end
  return 1
end
if redis.call("hget", KEYS[2], "since") ~= ARGV[1] then
  return 0
end
redis.call("set", KEYS[1], ARGV[2])
redis.call("del", KEYS[2])
return 1
