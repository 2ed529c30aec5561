-- scripts.ElectRelease: ends a leadership.
-- KEYS[1]: the election's key, holding the leader's token; KEYS[2]: the
-- leader's record.
-- ARGV[1]: the token; ARGV[2]: "1" to wake waiters, "0" not to.
-- If KEYS[1] does not hold ARGV[1], it changes nothing and returns 0.
-- Else it deletes KEYS[1] and KEYS[2]; with "1" it publishes (SPUBLISH,
-- through redis.pcall) the release's id, the first 16 hex digits of
-- ARGV[1]'s SHA-1, on the shard channel "volley:released:" followed by
-- KEYS[1]; it returns 1.
if redis.call("get", KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call("del", KEYS[1], KEYS[2])
if ARGV[2] == "1" then
  redis.pcall("spublish", "volley:released:" .. KEYS[1], string.sub(redis.sha1hex(ARGV[1]), 1, 16))
end
return 1
