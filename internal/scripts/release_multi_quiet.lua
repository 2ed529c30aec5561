local n=0 for i=1,#KEYS do if redis.call("get",KEYS[i])==ARGV[1] then n=n+redis.call("del",KEYS[i]) end end if n==#KEYS then return 1 else return 0 end
