package redlock

// The two lock scripts of the Redlock spec. Lua runs atomically on the
// master, so each is a compare-and-act on the token.
const (
	// releaseScript deletes the key only if it still holds our token.
	releaseScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
	// extendScript resets the TTL only if the key still holds our token; it
	// never re-creates a missing key.
	extendScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end`

	// SHA-1 of the scripts, for EVALSHA (checked by TestScriptSHAs).
	releaseSHA = "b70c2384248f88e6b75b9f89241a180f856ad852"
	extendSHA  = "36e94d1c6e02fcefaa7ee5d79eee614dbac55f10"
)
