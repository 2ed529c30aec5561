-- scripts.ElectAnnounce: writes the record of the leader that holds an
-- election's key.
-- KEYS[1]: the election's key, holding the leader's token; KEYS[2]: the
-- leader's record.
-- ARGV[1]: the token; ARGV[2]: the record (the leader's term in decimal,
-- a space and its value).
-- If KEYS[1] does not hold ARGV[1], or its PTTL is not positive, it
-- changes nothing and returns 0. Else it sets KEYS[2] to ARGV[2] with
-- KEYS[1]'s PTTL, publishes (SPUBLISH, through redis.pcall)
-- "leader-announced" (not a release's id: those are hex digits) on the
-- shard channel "volley:released:" followed by KEYS[1], and returns 1.
if redis.call("get", KEYS[1]) ~= ARGV[1] then
  return 0
end
local t = redis.call("pttl", KEYS[1])
if t <= 0 then
  return 0
end
redis.call("set", KEYS[2], ARGV[2], "px", t)
redis.pcall("spublish", "volley:released:" .. KEYS[1], "leader-announced")
return 1
