-- scripts.FenceCheck: runs in every connection's handshake, so that a
-- master vouches only for a fencing counter it kept since it last
-- vouched for it.
-- KEYS[1]: the fencing counter; KEYS[2]: the run key; KEYS[3]: the unsure
-- hash. No ARGV.
-- Without a run_id in INFO server it fails with the error "ERR fencing:
-- INFO gave no run_id". If KEYS[2] holds this master process's run_id,
-- the counter was vouched for under it: nothing changes, and it returns
-- 1. Else the process restarted since (or never had a counter), and
-- whatever counter it has may be older than what it once acknowledged:
-- it moves the counter, if any, to the hash's stale field (unless stale
-- is already at least as large), sets the hash's since field to TIME in
-- microseconds, sets KEYS[2] to the run_id and returns 0.
local id = string.match(redis.call("info", "server"), "run_id:(%x+)")
if not id then
  return redis.error_reply("ERR fencing: INFO gave no run_id")
end
if redis.call("get", KEYS[2]) == id then
  return 1
end
local g = redis.call("get", KEYS[1])
if g then
  local s = redis.call("hget", KEYS[3], "stale")
  if not s or tonumber(s) < tonumber(g) then
    redis.call("hset", KEYS[3], "stale", g)
  end
  redis.call("del", KEYS[1])
end
local t = redis.call("time")
redis.call("hset", KEYS[3], "since", t[1] .. string.format("%06d", tonumber(t[2])))
redis.call("set", KEYS[2], id)
return 0
