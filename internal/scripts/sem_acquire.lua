-- scripts.SemAcquire: takes one permit of a semaphore of P permits. On a
-- cluster, fenced, it runs after fence_vouch.lua.
-- KEYS[1]: the semaphore's record, holding "semaphore:" followed by P;
-- KEYS[2] to KEYS[P+1]: the permits' keys; fenced, then the fencing
-- counter (so P is #KEYS-1, or #KEYS-2 when fenced).
-- ARGV[1]: the token; ARGV[2]: the TTL in milliseconds; ARGV[3]: the
-- index (from 0) of the permit wanted; fenced, ARGV[4]: the proposed
-- fencing token.
-- If the record holds another value, it changes nothing and fails with an
-- error: "PERMITS <name> has <p> permits, not <P>" for a semaphore of
-- another size, "WRONGKIND <name> is a lock, not a semaphore" for
-- anything else (a hash or other type fails with WRONGTYPE).
-- Else, if the permit's key does not exist, it sets it to ARGV[1] with a
-- TTL of ARGV[2], sets the record (to "semaphore:" followed by P, with a
-- TTL of ARGV[2]) when its PTTL is less than ARGV[2], and returns ARGV[1];
-- fenced, it then raises the counter to ARGV[4] when that is larger
-- (never lowering it) and returns {ARGV[1], the counter as it was
-- before}, or {ARGV[1], ""} when there is no counter.
-- Else it returns the indexes of the permits whose keys do not exist, an
-- array of integers (empty when all are taken).
local p = #KEYS - 1
if #ARGV > 3 then
  p = p - 1
end
local want = "semaphore:" .. p
local m = redis.call("get", KEYS[1])
if m and m ~= want then
  if string.sub(m, 1, 10) == "semaphore:" then
    return redis.error_reply("PERMITS " .. KEYS[1] .. " has " .. string.sub(m, 11) .. " permits, not " .. p)
  end
  return redis.error_reply("WRONGKIND " .. KEYS[1] .. " is a lock, not a semaphore")
end
if redis.call("set", KEYS[tonumber(ARGV[3]) + 2], ARGV[1], "nx", "px", ARGV[2]) then
  if redis.call("pttl", KEYS[1]) < tonumber(ARGV[2]) then
    redis.call("set", KEYS[1], want, "px", ARGV[2])
  end
  if #ARGV > 3 then
    local g = redis.call("get", KEYS[#KEYS])
    if g then
      if tonumber(g) < tonumber(ARGV[4]) then
        redis.call("set", KEYS[#KEYS], ARGV[4])
      end
      return {ARGV[1], g}
    end
    return {ARGV[1], ""}
  end
  return ARGV[1]
end
local f = {}
for i = 2, p + 1 do
  if redis.call("exists", KEYS[i]) == 0 then
    f[#f + 1] = i - 2
  end
end
return f
