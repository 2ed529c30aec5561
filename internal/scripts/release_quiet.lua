-- scripts.ReleaseQuiet: Release without the wake-up. It releases a failed
-- attempt: waiters learn how to go on from their own attempts, not from
-- the release of a loser's partial votes.
-- KEYS[1]: the lock's key.
-- ARGV[1]: the token.
-- If KEYS[1] holds ARGV[1], it deletes it and returns DEL's reply (1);
-- else it returns 0.
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("del", KEYS[1])
else
  return 0
end
