-- scripts.ReleaseMultiQuiet: ReleaseMulti without the wake-up (see
-- release_quiet.lua).
-- KEYS: the lock's keys.
-- ARGV[1]: the token.
-- It deletes every key that holds ARGV[1]. It returns 1 if every key held
-- it, else 0.
local n = 0
for i = 1, #KEYS do
  if redis.call("get", KEYS[i]) == ARGV[1] then
    n = n + redis.call("del", KEYS[i])
  end
end
if n == #KEYS then
  return 1
else
  return 0
end
