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

// The multi-key scripts: one lock on several keys, all or none on each
// master, atomically. Every key gets the same token and the same TTL, so the
// keys of one lock live and die together.
const (
	// lockMultiScript sets every key to the token, only if none exists.
	// It returns 1 when it set them, 0 when one was taken.
	lockMultiScript = `for i=1,#KEYS do if redis.call("exists",KEYS[i])==1 then return 0 end end for i=1,#KEYS do redis.call("set",KEYS[i],ARGV[1],"px",ARGV[2]) end return 1`
	// releaseMultiScript deletes every key that holds the token. It returns
	// 1 when every key did, 0 otherwise.
	releaseMultiScript = `local n=0 for i=1,#KEYS do if redis.call("get",KEYS[i])==ARGV[1] then n=n+redis.call("del",KEYS[i]) end end if n==#KEYS then return 1 else return 0 end`
	// extendMultiScript resets every key's TTL, only if every key still
	// holds the token; it never re-creates a missing key. It returns 1 when
	// it extended them, 0 otherwise.
	extendMultiScript = `for i=1,#KEYS do if redis.call("get",KEYS[i])~=ARGV[1] then return 0 end end for i=1,#KEYS do redis.call("pexpire",KEYS[i],ARGV[2]) end return 1`

	lockMultiSHA    = "f2c1aac8c82b0c9ed475254565a20f3b22c18725"
	releaseMultiSHA = "19c74fbcf900ae3f365e1b8b2107a5888b175452"
	extendMultiSHA  = "625585dd655db49164a0d3f383c152341a6e2375"
)
