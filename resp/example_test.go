package resp_test

import (
	"fmt"
	"strings"

	"github.com/volleylock/volley/resp"
)

func Example() {
	// Encode a command.
	cmd := resp.AppendCommand(nil, "SET", "lock", "token", "NX", "PX", "30000")
	fmt.Printf("%q\n", cmd)

	// Decode replies as a server sends them: a RESP3 map, then an error.
	stream := "%2\r\n$5\r\nproto\r\n:3\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n" +
		"-NOSCRIPT No matching script. Please use EVAL.\r\n"
	r := resp.NewReader(strings.NewReader(stream), 0, resp.Limits{})

	vals, err := r.ReadReply()
	if err != nil {
		panic(err)
	}
	m := vals[0]
	fmt.Println(m.Type, m.Int, "pairs")
	for i := 1; i < 1+m.Size; i += 2 + vals[i].Size + vals[i+1].Size {
		k, v := vals[i], vals[i+1]
		if v.Type == resp.TypeInteger {
			fmt.Printf("%s = %d\n", k.Bytes, v.Int)
		} else {
			fmt.Printf("%s = %s\n", k.Bytes, v.Bytes)
		}
	}

	vals, err = r.ReadReply()
	if err != nil {
		panic(err)
	}
	fmt.Println(vals[0].IsError(), string(vals[0].ErrorPrefix()))
	fmt.Println(vals[0].Err())
	// Output:
	// "*6\r\n$3\r\nSET\r\n$4\r\nlock\r\n$5\r\ntoken\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n"
	// map 2 pairs
	// proto = 3
	// mode = standalone
	// true NOSCRIPT
	// NOSCRIPT No matching script. Please use EVAL.
}
