if redis.call("get",KEYS[1]) == ARGV[1] then redis.call("set",KEYS[1],ARGV[2],"px",ARGV[3]) return 1 else return 0 end
