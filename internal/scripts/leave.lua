-- scripts.Leave: takes a Client off a key's waiters, unless the release
-- that woke it has yet to run on this master.
-- KEYS[1]: the lock's key. ARGV[1]: the Client's id. ARGV[2]: the id of
-- the release that woke it, the first 16 hex digits of the released
-- token's SHA-1 (empty when none did).
-- If KEYS[1] holds a string whose SHA-1 begins with ARGV[2], that
-- release has yet to run here: when it runs, it takes the Client off the
-- waiters and names it, as it did on the masters where it ran first;
-- leaving before it would have it name the next Client here alone. It
-- returns 0.
-- Else it takes ARGV[1] off the key's waiters (the sorted set KEYS[1]
-- followed by scripts.WaitersSuffix) and returns ZREM's reply.
-- Both go through redis.pcall, as in lock_wait.lua.
local v = redis.pcall("get", KEYS[1])
if type(v) == "string" and ARGV[2] ~= "" and string.sub(redis.sha1hex(v), 1, 16) == ARGV[2] then
  return 0
end
return redis.pcall("zrem", KEYS[1] .. "$WAITERS", ARGV[1])
