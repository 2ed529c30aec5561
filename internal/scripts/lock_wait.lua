local v=redis.call("get",KEYS[1]) if v then return {string.sub(redis.sha1hex(v),1,16),redis.call("pttl",KEYS[1])} end redis.call("set",KEYS[1],ARGV[1],"px",ARGV[2]) return 1
