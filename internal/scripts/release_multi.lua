-- scripts.ReleaseMulti: releases a lock on several keys.
-- KEYS: the lock's keys.
-- ARGV[1]: the token.
-- It deletes every key that holds ARGV[1] and, for each, publishes
-- (SPUBLISH, through redis.pcall) the release's id, the first 16 hex
-- digits of ARGV[1]'s SHA-1, on the key's channel:
-- scripts.ReleasedChannelPrefix followed by the key. It returns 1 if every
-- key held ARGV[1], else 0.
local n = 0
for i = 1, #KEYS do
  if redis.call("get", KEYS[i]) == ARGV[1] then
    n = n + redis.call("del", KEYS[i])
    redis.pcall("spublish", "$RELEASED" .. KEYS[i], string.sub(redis.sha1hex(ARGV[1]), 1, 16))
  end
end
if n == #KEYS then
  return 1
else
  return 0
end
