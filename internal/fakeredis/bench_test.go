package fakeredis

import (
	"bufio"
	"net"
	"strconv"
	"testing"

	"github.com/volleylock/volley/internal/scripts"
)

// BenchmarkPipeline measures one connection sending batches of 100 SET NX
// PX and release-script commands; one op is one command.
func BenchmarkPipeline(b *testing.B) {
	s := StartT(b, Options{})
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	const batchLen = 100
	var batch []byte
	for i := range batchLen / 2 {
		key := "lock-" + strconv.Itoa(i)
		batch = encodeCommand(batch, "SET", key, "tok", "NX", "PX", "30000")
		batch = encodeCommand(batch, "EVAL", scripts.ReleaseQuiet.Source, "1", key, "tok")
	}
	var reply []byte
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		if n%batchLen == 0 {
			if _, err := nc.Write(batch); err != nil {
				b.Fatal(err)
			}
		}
		if reply, err = readFrame(reply[:0], br); err != nil {
			b.Fatal(err)
		}
		n++
	}
	for ; n%batchLen != 0; n++ { // drain the last batch
		if reply, err = readFrame(reply[:0], br); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParallelConnections measures many connections each doing one
// acquire/release round trip at a time; one op is one command.
func BenchmarkParallelConnections(b *testing.B) {
	s := StartT(b, Options{})
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		nc, err := net.Dial("tcp", s.Addr())
		if err != nil {
			b.Error(err)
			return
		}
		defer nc.Close()
		br := bufio.NewReader(nc)
		acquire := encodeCommand(nil, "SET", "lock", "tok", "NX", "PX", "30000")
		release := encodeCommand(nil, "EVAL", scripts.ReleaseQuiet.Source, "1", "lock", "tok")
		var reply []byte
		for i := 0; pb.Next(); i++ {
			cmd := acquire
			if i%2 == 1 {
				cmd = release
			}
			if _, err := nc.Write(cmd); err != nil {
				b.Error(err)
				return
			}
			if reply, err = readFrame(reply[:0], br); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
