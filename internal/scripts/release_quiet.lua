-- scripts.ReleaseQuiet: Release without the wake-up. It releases a failed
-- attempt: waiters learn how to go on from their own attempts, not from
-- the release of a loser's partial votes.
-- KEYS[1]: the lock's key.
-- ARGV[1]: the token. ARGV[2] and ARGV[3], when present: the attempt's
-- TTL in milliseconds and its enrolment, "<score>:<id>" as in
-- lock_wait.lua (one of another form counts as absent).
-- If KEYS[1] holds ARGV[1], it deletes it and returns 1; with an
-- enrolment, it first puts the Client back among the key's waiters
-- (unless it is there) with its score, and sets the waiters' TTL, and
-- the key's mark (see lock_wait.lua), to ARGV[2]: the waiting attempt
-- that set KEYS[1] here took the Client off this master's waiters, and
-- failed on the others, where it stays enrolled; without it back, this
-- master would name another Client than they do at the next release.
-- Else it returns 0.
-- The waiters go through redis.pcall, as in lock_wait.lua.
if redis.call("get", KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call("del", KEYS[1])
if ARGV[3] then
  local at, id = string.match(ARGV[3], "^(%d+):(.+)$")
  if id then
    local w = KEYS[1] .. "$WAITERS"
    redis.pcall("zadd", w, "nx", at, id)
    redis.pcall("pexpire", w, ARGV[2])
    redis.pcall("set", KEYS[1] .. "$LISTEN", "1", "px", ARGV[2])
  end
end
return 1
