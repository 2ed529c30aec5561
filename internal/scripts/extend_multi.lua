-- scripts.ExtendMulti: extends a lock on several keys, all or none.
-- KEYS: the lock's keys.
-- ARGV[1]: the token; ARGV[2]: the TTL in milliseconds.
-- If every key holds ARGV[1], it sets every key's TTL to ARGV[2] and
-- returns 1; else it changes nothing and returns 0. It never re-creates a
-- missing key.
for i = 1, #KEYS do
  if redis.call("get", KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call("pexpire", KEYS[i], ARGV[2])
end
return 1
