-- scripts.LockWait: the attempt of a Lock that waits, SET NX PX, and when
-- the key is taken, what a waiter needs to know.
-- KEYS[1]: the lock's key. Its waiters are the sorted set KEYS[1]
-- followed by scripts.WaitersSuffix; its name, the Client a release named
-- (see release.lua), is the key KEYS[1] followed by scripts.NamedSuffix.
-- ARGV[1]: the token; ARGV[2]: the TTL in milliseconds; ARGV[3], when
-- present, enrolls a Client: "<score>:<id>", the score being when its
-- call first waited, in the Client's unix milliseconds (the same on every
-- master, so that they agree on the order). An ARGV[3] of another form
-- counts as absent.
-- If KEYS[1] does not exist and no release named another Client (the
-- name is read only with an ARGV[3]; one that cannot be read counts as
-- none), it sets KEYS[1] to ARGV[1] with a TTL of ARGV[2]; with an
-- ARGV[3], it takes the Client off the waiters and deletes the name if it
-- names this Client; it returns 1.
-- If KEYS[1] does not exist but the name holds another Client's id, the
-- Client joins the waiters (unless it is there already) with the waiters'
-- TTL set to ARGV[2], and it returns {the first 16 hex digits of the
-- SHA-1 of the named id, the name's PTTL}.
-- If KEYS[1] holds a semaphore's record ("semaphore:..."), it fails with
-- the error "WRONGKIND <key> is a semaphore, not a lock".
-- Else, with an ARGV[3], the Client joins the waiters (unless it is there
-- already) with the waiters' TTL set to the key's PTTL (0 if negative)
-- plus ARGV[2]; it returns who has the key and for how long: {the first
-- 16 hex digits of the SHA-1 of the key's value, the key's PTTL}. The
-- name of a taken key is not read: it is left to expire, or to the next
-- release.
-- Every attempt that waits, among the waiters or not (no ARGV[3], or the
-- ZADD fails, as when an ACL forbids it), also marks the key: KEYS[1]
-- followed by scripts.ListenSuffix, a string with the waiters' TTL,
-- which tells a release that someone waits (see release.lua).
-- The waiters, the mark and the reading of the name go through
-- redis.pcall: an ACL that forbids those commands costs only the waking
-- of one Client per release.
local v = redis.call("get", KEYS[1])
local w = KEYS[1] .. "$WAITERS"
local nk = KEYS[1] .. "$NAMED"
local at, id
if ARGV[3] then
  at, id = string.match(ARGV[3], "^(%d+):(.+)$")
end
if not v then
  local m = id and redis.pcall("get", nk)
  if type(m) ~= "string" then
    m = nil
  end
  if m and m ~= id then
    if type(redis.pcall("zadd", w, "nx", at, id)) == "number" then
      redis.pcall("pexpire", w, ARGV[2])
    end
    redis.pcall("set", KEYS[1] .. "$LISTEN", "1", "px", ARGV[2])
    return {string.sub(redis.sha1hex(m), 1, 16), redis.call("pttl", nk)}
  end
  redis.call("set", KEYS[1], ARGV[1], "px", ARGV[2])
  if id then
    redis.pcall("zrem", w, id)
  end
  if m then
    redis.call("del", nk)
  end
  return 1
end
if string.sub(v, 1, 10) == "semaphore:" then
  return redis.error_reply("WRONGKIND " .. KEYS[1] .. " is a semaphore, not a lock")
end
local pttl = redis.call("pttl", KEYS[1])
if id and type(redis.pcall("zadd", w, "nx", at, id)) == "number" then
  redis.pcall("pexpire", w, math.max(pttl, 0) + ARGV[2])
end
local t = tonumber(ARGV[2])
if t then
  redis.pcall("set", KEYS[1] .. "$LISTEN", "1", "px", math.max(pttl, 0) + t)
end
return {string.sub(redis.sha1hex(v), 1, 16), pttl}
