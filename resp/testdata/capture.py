#!/usr/bin/env python3
"""Capture raw RESP replies from a real redis-server into *.resp files.

Usage: redis-server --port PORT --save '' --appendonly no --enable-debug-command yes &
       python3 capture.py PORT
Each file holds the exact bytes of one reply to the command listed below.
"""
import socket, sys, time

def enc(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out

class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
    def cmd(self, *args):
        self.s.sendall(enc(*args))
        # PING after the command marks the end of its reply.
        self.s.sendall(enc("PING", "__end__"))
        data = b""
        while True:
            data += self.s.recv(65536)
            for end in (b"$7\r\n__end__\r\n",):
                if data.endswith(end):
                    return data[: -len(end)]

LOCK = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

def main(port):
    c2 = Conn(port)
    c2.cmd("FLUSHALL")
    files = [
        ("set_nx_ok.resp", c2, ("SET", "lock", "token1", "NX", "PX", "30000")),
        ("set_nx_null_resp2.resp", c2, ("SET", "lock", "token2", "NX", "PX", "30000")),
        ("get_bulk.resp", c2, ("GET", "lock")),
        ("get_null_resp2.resp", c2, ("GET", "missing")),
        ("eval_unlock_ok.resp", c2, ("EVAL", LOCK, "1", "lock", "token1")),
        ("eval_unlock_miss.resp", c2, ("EVAL", LOCK, "1", "lock", "token1")),
        ("eval_nested.resp", c2, ("EVAL", "return {1, 'two', {3, 'four', {}}, redis.status_reply('FINE')}", "0")),
        ("noscript.resp", c2, ("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0")),
        ("wrongtype_setup.resp", c2, ("SET", "str", "x")),
        ("wrongtype.resp", c2, ("LPUSH", "str", "y")),
        ("incr.resp", c2, ("INCR", "counter")),
        ("pttl.resp", c2, ("PTTL", "missing")),
        ("info.resp", c2, ("INFO", "server")),
        ("hello3.resp", c2, ("HELLO", "3")),
    ]
    for name, c, args in files:
        write(name, c.cmd(*args))
    c3 = c2  # now speaking RESP3
    c3.cmd("HSET", "h", "f1", "v1", "f2", "v2")
    c3.cmd("SADD", "s", "m1")
    c3.cmd("ZADD", "z", "1.5", "a", "2", "b")
    files3 = [
        ("get_null_resp3.resp", ("GET", "missing")),
        ("set_nx_null_resp3.resp", ("SET", "str", "z", "NX")),
        ("hgetall_map.resp", ("HGETALL", "h")),
        ("smembers_set.resp", ("SMEMBERS", "s")),
        ("zscore_double.resp", ("ZSCORE", "z", "a")),
        ("zrange_withscores.resp", ("ZRANGE", "z", "0", "-1", "WITHSCORES")),
        ("eval_resp3_double.resp", ("EVAL", "redis.setresp(3); return {double=3.25}", "0")),
        ("eval_resp3_bool.resp", ("EVAL", "redis.setresp(3); return true", "0")),
        ("eval_resp3_map.resp", ("EVAL", "redis.setresp(3); return {map={a=1}}", "0")),
        ("noscript_resp3.resp", ("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0")),
        ("debug_attrib.resp", ("DEBUG", "PROTOCOL", "attrib")),
        ("debug_verbatim.resp", ("DEBUG", "PROTOCOL", "verbatim")),
        ("debug_bignum.resp", ("DEBUG", "PROTOCOL", "bignum")),
        ("debug_true.resp", ("DEBUG", "PROTOCOL", "true")),
        ("debug_false.resp", ("DEBUG", "PROTOCOL", "false")),
        ("debug_null.resp", ("DEBUG", "PROTOCOL", "null")),
        ("debug_double.resp", ("DEBUG", "PROTOCOL", "double")),
        ("debug_set.resp", ("DEBUG", "PROTOCOL", "set")),
        ("debug_map.resp", ("DEBUG", "PROTOCOL", "map")),
        ("debug_push.resp", ("DEBUG", "PROTOCOL", "push")),
    ]
    for name, args in files3:
        write(name, c3.cmd(*args))
    sub = Conn(port)
    sub.cmd("HELLO", "3")
    write("subscribe_push.resp", sub.cmd("SUBSCRIBE", "chan"))

def write(name, data):
    with open(name, "wb") as f:
        f.write(data)
    print(name, len(data), repr(data[:80]))

if __name__ == "__main__":
    main(int(sys.argv[1]))
