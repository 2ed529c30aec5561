-- scripts.SemExtend: extends a permit of a semaphore.
-- KEYS[1]: the semaphore's record; KEYS[2]: the permit's key.
-- ARGV[1]: the token; ARGV[2]: the TTL in milliseconds; ARGV[3]: P, the
-- number of permits.
-- If KEYS[2] does not hold ARGV[1], it returns 0. Else it sets KEYS[2]'s
-- TTL to ARGV[2]; when the record is missing or holds "semaphore:"
-- followed by P, and its PTTL is less than ARGV[2], it sets the record to
-- that value with a TTL of ARGV[2] (a record that holds anything else is
-- left alone: it is read with redis.pcall); it returns 1. It never
-- re-creates a permit's key.
if redis.call("get", KEYS[2]) ~= ARGV[1] then
  return 0
end
redis.call("pexpire", KEYS[2], ARGV[2])
local m = redis.pcall("get", KEYS[1])
if (m == false or m == "semaphore:" .. ARGV[3]) and redis.call("pttl", KEYS[1]) < tonumber(ARGV[2]) then
  redis.call("set", KEYS[1], "semaphore:" .. ARGV[3], "px", ARGV[2])
end
return 1
