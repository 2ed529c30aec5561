package bench

import (
	"bufio"
	"io"
	"unsafe"

	"github.com/redis/rueidis"
)

// The reply decoders of rueidis and go-redis are not exported: rueidis's is
// the unexported function readNextMessage, go-redis's lives in its internal
// proto package. BenchmarkDecode reaches them by linkname, so that the same
// replies go through every peer's decoder in the same run, as their clients
// call them (each over a bufio.Reader). The signatures below are those of
// rueidis v1.0.79 and go-redis v9.23.0 (bench/go.mod pins both);
// TestDecodersAgree fails if a new version changes what they return.

//go:linkname rueidisReadNextMessage github.com/redis/rueidis.readNextMessage
func rueidisReadNextMessage(i *bufio.Reader) (rueidis.RedisMessage, error)

// goredisReader stands for go-redis's *proto.Reader, whose type is
// internal: only its address is passed around.
type goredisReader = unsafe.Pointer

//go:linkname goredisNewReader github.com/redis/go-redis/v9/internal/proto.NewReader
func goredisNewReader(rd io.Reader) goredisReader

//go:linkname goredisReadReply github.com/redis/go-redis/v9/internal/proto.(*Reader).ReadReply
func goredisReadReply(r goredisReader) (any, error)
