-- scripts.SemRelease: gives a permit of a semaphore back.
-- KEYS[1]: the semaphore's record; KEYS[2] on: the permits' keys.
-- ARGV[1]: the token; ARGV[2]: the permit's index (from 0); ARGV[3]: "1"
-- to wake waiters, "0" not to.
-- If the permit's key does not hold ARGV[1], it changes nothing and
-- returns 0. Else it deletes the permit's key, deletes the record when no
-- permit's key is left, and, with "1", publishes (SPUBLISH, through
-- redis.pcall) the release's id, the first 16 hex digits of ARGV[1]'s
-- SHA-1, on the record's channel: scripts.ReleasedChannelPrefix followed
-- by KEYS[1]. It returns 1.
local k = KEYS[tonumber(ARGV[2]) + 2]
if redis.call("get", k) ~= ARGV[1] then
  return 0
end
redis.call("del", k)
if redis.call("exists", unpack(KEYS, 2)) == 0 then
  redis.call("del", KEYS[1])
end
if ARGV[3] == "1" then
  redis.pcall("spublish", "$RELEASED" .. KEYS[1], string.sub(redis.sha1hex(ARGV[1]), 1, 16))
end
return 1
