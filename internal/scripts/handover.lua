-- scripts.Handover: passes a lock's key from one holder to the next. The
-- key is not released: nothing is published.
-- KEYS[1]: the lock's key.
-- ARGV[1]: the releasing holder's token; ARGV[2]: the next holder's
-- token; ARGV[3]: the TTL in milliseconds.
-- If KEYS[1] holds ARGV[1], it sets it to ARGV[2] with a TTL of ARGV[3]
-- and returns 1; else it changes nothing and returns 0. It never
-- re-creates a missing key.
if redis.call("get", KEYS[1]) == ARGV[1] then
  redis.call("set", KEYS[1], ARGV[2], "px", ARGV[3])
  return 1
else
  return 0
end
