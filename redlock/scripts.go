package redlock

// The two lock scripts of the Redlock spec. Lua runs atomically on the
// master, so each is a compare-and-act on the token.
const (
	// releaseScript deletes the key only if it still holds our token, and
	// then wakes its waiters: it publishes the release's id on the key's
	// channel (see releasedChannelPrefix). With pcall: an ACL that forbids
	// PUBLISH costs the waiters their RetryDelay, not the release.
	releaseScript = `if redis.call("get",KEYS[1]) == ARGV[1] then redis.call("del",KEYS[1]) redis.pcall("publish","volley:released:"..KEYS[1],string.sub(redis.sha1hex(ARGV[1]),1,16)) return 1 else return 0 end`
	// extendScript resets the TTL only if the key still holds our token; it
	// never re-creates a missing key.
	extendScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end`

	// SHA-1 of the scripts, for EVALSHA (checked by TestScriptSHAs).
	releaseSHA = "d9a935e59725c013c690dac08325a383984369e2"
	extendSHA  = "36e94d1c6e02fcefaa7ee5d79eee614dbac55f10"
)

// The multi-key scripts: one lock on several keys, all or none on each
// master, atomically. Every key gets the same token and the same TTL, so the
// keys of one lock live and die together.
const (
	// lockMultiScript sets every key to the token, only if none exists.
	// It returns 1 when it set them; when a key was taken, the first such
	// key's holder id and PTTL, as lockWaitScript does.
	lockMultiScript = `for i=1,#KEYS do local v=redis.call("get",KEYS[i]) if v then return {string.sub(redis.sha1hex(v),1,16),redis.call("pttl",KEYS[i])} end end for i=1,#KEYS do redis.call("set",KEYS[i],ARGV[1],"px",ARGV[2]) end return 1`
	// releaseMultiScript deletes every key that holds the token, waking
	// each one's waiters as releaseScript does. It returns 1 when every key
	// did, 0 otherwise.
	releaseMultiScript = `local n=0 for i=1,#KEYS do if redis.call("get",KEYS[i])==ARGV[1] then n=n+redis.call("del",KEYS[i]) redis.pcall("publish","volley:released:"..KEYS[i],string.sub(redis.sha1hex(ARGV[1]),1,16)) end end if n==#KEYS then return 1 else return 0 end`
	// extendMultiScript resets every key's TTL, only if every key still
	// holds the token; it never re-creates a missing key. It returns 1 when
	// it extended them, 0 otherwise.
	extendMultiScript = `for i=1,#KEYS do if redis.call("get",KEYS[i])~=ARGV[1] then return 0 end end for i=1,#KEYS do redis.call("pexpire",KEYS[i],ARGV[2]) end return 1`

	lockMultiSHA    = "62d90fcd9adad90330ad761d3a450935271ce595"
	releaseMultiSHA = "39ecf2a6a951920916f2a94110dcc3802415c853"
	extendMultiSHA  = "625585dd655db49164a0d3f383c152341a6e2375"
)

// extendBatchScript extends many locks in one call, each on its own terms:
// ARGV[1] is the number of locks; then, per lock, its token, its TTL in
// milliseconds and how many of KEYS are its keys, taken in order. A lock is
// extended, and its entry of the reply is 1, only if every one of its keys
// holds its token (it never re-creates a key); else its entry is 0. The
// reply is an array with one entry per lock.
const (
	extendBatchScript = `local out={} local k=1 local a=2 for i=1,tonumber(ARGV[1]) do local tok=ARGV[a] local ttl=ARGV[a+1] local n=tonumber(ARGV[a+2]) a=a+3 local ok=1 for j=k,k+n-1 do if redis.call("get",KEYS[j])~=tok then ok=0 break end end if ok==1 then for j=k,k+n-1 do redis.call("pexpire",KEYS[j],ttl) end end out[i]=ok k=k+n end return out`
	extendBatchSHA    = "addb89a91a9f524b6cf26091cf02a3d026ffe315"
)

// The scripts of waiting (see wait.go). A Lock that found its key taken
// waits for the holder's release, which publishes on the key's channel,
// "volley:released:" followed by the key, a message that identifies the
// release: the first 16 hex digits of the SHA-1 of the released token (the
// token itself never leaves the master). The id tells the N messages of one
// release (one per master) from those of the next, and the holders of a key
// on different masters apart.
const (
	releasedChannelPrefix = "volley:released:"

	// lockWaitScript is a waiting Lock's attempt: SET NX PX, and when the
	// key is taken, what a waiter needs to know: the holder's id and the
	// key's PTTL. It returns 1 when it set the key, else {id, pttl}.
	lockWaitScript = `local v=redis.call("get",KEYS[1]) if v then return {string.sub(redis.sha1hex(v),1,16),redis.call("pttl",KEYS[1])} end redis.call("set",KEYS[1],ARGV[1],"px",ARGV[2]) return 1`
	lockWaitSHA    = "abe342cb1a66ee49d7074e7cbc23c3564d16b8e8"

	// releaseQuietScript and releaseMultiQuietScript are releaseScript and
	// releaseMultiScript without the wake-up, for the release of a failed
	// attempt: waiters learn how to go on from their own attempts (see
	// wait.go), not from the release of a loser's partial votes.
	releaseQuietScript      = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
	releaseMultiQuietScript = `local n=0 for i=1,#KEYS do if redis.call("get",KEYS[i])==ARGV[1] then n=n+redis.call("del",KEYS[i]) end end if n==#KEYS then return 1 else return 0 end`
)

// handoverScript passes a key from one holder to the next in the same
// Client (see Lock.Unlock): if the key holds the releasing holder's token
// ARGV[1], it becomes the next holder's token ARGV[2] with a TTL of
// ARGV[3] milliseconds (1); else nothing changes (0). It never re-creates
// a missing key, and it publishes nothing: the key is not released.
const (
	handoverScript = `if redis.call("get",KEYS[1]) == ARGV[1] then redis.call("set",KEYS[1],ARGV[2],"px",ARGV[3]) return 1 else return 0 end`
	handoverSHA    = "655186e72d899174676eb3a8f0bb0f46cc70ec5a"
)

// sentBySHA are the scripts sent with EVALSHA: every connection loads them
// in its handshake (conn.Options.Scripts), so a master that restarted empty
// runs them at the first try instead of answering -NOSCRIPT, and a request
// answered after the decision (not resent) still does its work. The
// release scripts go with EVAL and need no loading.
var sentBySHA = []string{extendScript, lockMultiScript, extendMultiScript, extendBatchScript, lockWaitScript, fenceLockScript, fenceWriteScript, handoverScript}

// The scripts of fencing (see fence.go). Every master keeps one fencing
// counter, fenceKey, for all keys and all clients; a master that restarted
// since it last vouched for its counter has none, only fenceUnsureKey (a
// hash: since, the master's TIME in microseconds when it noticed; stale,
// the counter it had then, if any) until a repair gives it one. The keys
// are fixed: fencing adds three keys per master, however many locks there
// are.
const (
	fenceKey       = "volley:fence"
	fenceRunKey    = "volley:fence:run"
	fenceUnsureKey = "volley:fence:unsure"

	// fenceCheckScript runs in every connection's handshake (before the
	// connection takes requests). KEYS: fenceKey, fenceRunKey,
	// fenceUnsureKey. If the counter was vouched for under this master
	// process's run_id, nothing changes (1). Else the process restarted
	// since (or never had a counter): whatever counter it has may be older
	// than what it once acknowledged (a snapshot, a lost AOF tail, or
	// nothing), so the counter moves to the unsure hash as stale and the
	// master stops answering for it (0).
	fenceCheckScript = `local id=string.match(redis.call("info","server"),"run_id:(%x+)") if not id then return redis.error_reply("ERR fencing: INFO gave no run_id") end if redis.call("get",KEYS[2])==id then return 1 end local g=redis.call("get",KEYS[1]) if g then local s=redis.call("hget",KEYS[3],"stale") if not s or tonumber(s)<tonumber(g) then redis.call("hset",KEYS[3],"stale",g) end redis.call("del",KEYS[1]) end local t=redis.call("time") redis.call("hset",KEYS[3],"since",t[1]..string.format("%06d",tonumber(t[2]))) redis.call("set",KEYS[2],id) return 0`

	// fenceLockScript is a fenced Lock's first round: lockMultiScript (any
	// number of keys) with fenceKey as the last of KEYS. When it set the
	// keys it returns {1, counter}, or {1} when the master has no counter
	// it vouches for; when a key was taken, that key's {holder id, pttl}.
	fenceLockScript = `local n=#KEYS-1 for i=1,n do local v=redis.call("get",KEYS[i]) if v then return {string.sub(redis.sha1hex(v),1,16),redis.call("pttl",KEYS[i])} end end for i=1,n do redis.call("set",KEYS[i],ARGV[1],"px",ARGV[2]) end local g=redis.call("get",KEYS[#KEYS]) if g then return {1,g} end return {1}`
	fenceLockSHA    = "6dc12226ca32d6d7f26735375844d9f0d6a18afd"

	// fenceWriteScript is a fenced Lock's second round: if every key (all
	// of KEYS but the last, fenceKey) still holds the token ARGV[1], it
	// raises the counter to ARGV[2] (never lowers it) and returns 1; 0 if a
	// key does not hold the token; 2 if the master has no counter it
	// vouches for.
	fenceWriteScript = `local n=#KEYS-1 for i=1,n do if redis.call("get",KEYS[i])~=ARGV[1] then return 0 end end local g=redis.call("get",KEYS[#KEYS]) if not g then return 2 end if tonumber(g)<tonumber(ARGV[2]) then redis.call("set",KEYS[#KEYS],ARGV[2]) end return 1`
	fenceWriteSHA    = "b13efd7eaae92c5b27ae12c1f104a5e6028d0f23"

	// fenceStateScript is a repair's first look. KEYS: fenceKey,
	// fenceUnsureKey. It returns {counter, since, stale, now}, "" for what
	// is missing; now is the master's TIME in microseconds. A master with
	// neither a counter nor the unsure hash lost both without a restart
	// (FLUSHALL, an eviction): it becomes unsure now, as the check would
	// have made it.
	fenceStateScript = `local t=redis.call("time") local now=t[1]..string.format("%06d",tonumber(t[2])) local g=redis.call("get",KEYS[1]) local since=redis.call("hget",KEYS[2],"since") if not g and not since then since=now redis.call("hset",KEYS[2],"since",now) end return {g or "",since or "",redis.call("hget",KEYS[2],"stale") or "",now}`

	// fenceRepairScript gives an unsure master its counter back. KEYS:
	// fenceKey, fenceUnsureKey; ARGV: the since the repair saw, the value.
	// It sets the counter and drops the unsure hash only if the master is
	// still unsure since that moment (1); a master that restarted again
	// meanwhile is left alone (0). A master that has a counter raises it to
	// the value (1).
	fenceRepairScript = `local g=redis.call("get",KEYS[1]) if g then if tonumber(g)<tonumber(ARGV[2]) then redis.call("set",KEYS[1],ARGV[2]) end return 1 end if redis.call("hget",KEYS[2],"since")~=ARGV[1] then return 0 end redis.call("set",KEYS[1],ARGV[2]) redis.call("del",KEYS[2]) return 1`
)
