if redis.call("get",KEYS[1]) == ARGV[1] then redis.call("del",KEYS[1]) redis.pcall("spublish","$RELEASED"..KEYS[1],string.sub(redis.sha1hex(ARGV[1]),1,16)) return 1 else return 0 end
