-- The check that FenceCheck makes per connection, made per slot inside a
-- fencing script, for a Redis Cluster. The script's own KEYS come first,
-- then its slot's counter, run key and unsure hash, which this prelude
-- takes off KEYS before the script's body runs. The node vouches for the
-- counter only if the run key holds its identity: its run_id, which a
-- restart changes, and its master_replid, which each promotion changes.
-- Else the counter was written by another node (before a failover or a
-- slot's migration) or by this one before a restart or an earlier
-- tenure as primary, and may lack writes that node acknowledged: it is
-- set aside as the stale counter, since is set to TIME in microseconds,
-- and the run key to this node's identity.
local given = KEYS
local KEYS = {unpack(given, 1, #given - 3)}
local counter, run, unsure = given[#given - 2], given[#given - 1], given[#given]
local info = redis.call("info", "server", "replication")
local id = string.match(info, "run_id:(%x+)")
local replid = string.match(info, "master_replid:(%x+)")
if not id or not replid then
  return redis.error_reply("ERR fencing: INFO gave no run_id or master_replid")
end
id = id .. ":" .. replid
if redis.call("get", run) ~= id then
  local g = redis.call("get", counter)
  if g then
    local s = redis.call("hget", unsure, "stale")
    if not s or tonumber(s) < tonumber(g) then
      redis.call("hset", unsure, "stale", g)
    end
    redis.call("del", counter)
  end
  local t = redis.call("time")
  redis.call("hset", unsure, "since", t[1] .. string.format("%06d", tonumber(t[2])))
  redis.call("set", run, id)
end
