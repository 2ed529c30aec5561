package fakeredis_test

import (
	"bufio"
	"fmt"
	"net"
	"time"

	"github.com/volleylock/volley/internal/fakeredis"
)

// A test starts a fake master, makes SET slow for one call, and talks RESP
// to it.
func ExampleStart() {
	srv, err := fakeredis.Start(fakeredis.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	srv.SetFault("SET", fakeredis.Fault{Latency: 10 * time.Millisecond, Times: 1})

	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	fmt.Fprint(nc, "*6\r\n$3\r\nSET\r\n$4\r\nlock\r\n$5\r\ntoken\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n30000\r\n")
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q keys=%d\n", line, srv.Keys())
	// Output: "+OK\r\n" keys=1
}
