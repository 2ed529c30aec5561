-- scripts.Extend: extends a lock's key.
-- KEYS[1]: the lock's key.
-- ARGV[1]: the token; ARGV[2]: the TTL in milliseconds.
-- If KEYS[1] holds ARGV[1], it sets its TTL to ARGV[2] and returns
-- PEXPIRE's reply (1); else it returns 0. It never re-creates a missing
-- key.
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("pexpire", KEYS[1], ARGV[2])
else
  return 0
end
