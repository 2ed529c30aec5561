for i=1,#KEYS do if redis.call("get",KEYS[i])~=ARGV[1] then return 0 end end for i=1,#KEYS do redis.call("pexpire",KEYS[i],ARGV[2]) end return 1
