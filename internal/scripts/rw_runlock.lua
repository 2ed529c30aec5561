-- scripts.RWRUnlock: releases a reader of a read-write lock.
-- KEYS[1]: the writer's key; KEYS[2]: the readers (see rw_lock.lua).
-- ARGV[1]: the token.
-- If ARGV[1] is not a reader it returns 0. Else it removes it; if it had
-- expired, it returns 0; else it publishes (SPUBLISH, through
-- redis.pcall) the release's id, the first 16 hex digits of ARGV[1]'s
-- SHA-1, on the writer's key's channel: scripts.ReleasedChannelPrefix
-- followed by KEYS[1]; and it returns 1.
local t = redis.call("time")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local s = redis.call("zscore", KEYS[2], ARGV[1])
if not s then
  return 0
end
redis.call("zrem", KEYS[2], ARGV[1])
if tonumber(s) <= now then
  return 0
end
redis.pcall("spublish", "$RELEASED" .. KEYS[1], string.sub(redis.sha1hex(ARGV[1]), 1, 16))
return 1
