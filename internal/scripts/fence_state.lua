-- scripts.FenceState: a repair's first look. On a cluster it runs after
-- fence_vouch.lua.
-- KEYS[1]: the fencing counter; KEYS[2]: the unsure hash. No ARGV.
-- It returns {counter, since, stale, now}, four bulk strings, "" for what
-- is missing: the counter, the hash's since and stale fields, and TIME in
-- microseconds. A master with neither a counter nor a since lost both
-- without a restart (FLUSHALL, an eviction): it first sets since to now,
-- becoming unsure as fence_check.lua would have made it.
local t = redis.call("time")
local now = t[1] .. string.format("%06d", tonumber(t[2]))
local g = redis.call("get", KEYS[1])
local since = redis.call("hget", KEYS[2], "since")
if not g and not since then
  since = now
  redis.call("hset", KEYS[2], "since", now)
end
return {g or "", since or "", redis.call("hget", KEYS[2], "stale") or "", now}
