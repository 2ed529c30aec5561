-- scripts.Wake: the wake that a release which woke nobody (a turn's
-- release, see release.lua's cutoff and redlock's turns.go) sends later,
-- when its Client did not take the key back.
-- KEYS[1]: the lock's key. ARGV[1]: the released token (only its id is
-- published).
-- If KEYS[1] exists, it wakes nobody and returns 0. Else, as Release does
-- after its delete, it takes the Client that has waited longest off the
-- key's waiters, names it and publishes the release's id on its channel
-- (on the key's channel when none waits), and returns 1.
if redis.call("exists", KEYS[1]) == 1 then
  return 0
end
local id = string.sub(redis.sha1hex(ARGV[1]), 1, 16)
local n = redis.pcall("zpopmin", KEYS[1] .. "$WAITERS")[1]
if type(n) == "string" then
  redis.pcall("set", KEYS[1] .. "$NAMED", n, "px", $NAMEDMS)
  redis.pcall("spublish", "$RELEASED" .. KEYS[1] .. ":" .. n, id)
else
  redis.pcall("spublish", "$RELEASED" .. KEYS[1], id)
end
return 1
