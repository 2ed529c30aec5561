package hostport

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheck(t *testing.T) {
	for _, ok := range []string{
		"127.0.0.1:6379", "[::1]:6379", "[fe80::1%eth0]:6379", "redis-1.example.com:7001",
		"my_redis:6379", "localhost:6379", ":6379", "héte.example:1", "h:redis",
	} {
		assert.NoError(t, Check(ok), ok)
	}
	for addr, want := range map[string]string{
		"redis//127.0.0.1:7001": `"redis//127.0.0.1" cannot be a host name: it contains '/': did you mean redis://127.0.0.1:7001?`,
		"rediss//h:7001":        `did you mean rediss://h:7001?`,
		"redis//u:pw@h:7001":    "want host:port",
		"redis//pw@h:7001":      "the host cannot be a host name: it contains '/'",
		"10.0.0.1 :1":           `"10.0.0.1 " cannot be a host name: it contains ' '`,
		"h\x00:1":               `it contains '\x00'`,
		"h:0":                   "port 0: want 1 to 65535",
		"h:65536":               "port 65536",
		"h:":                    "no port",
		"h:12a!":                `port "12a!": want a number`,
		"h:-1":                  `port -1: want 1 to 65535`,
		"nohostport":            "want host:port",
		"host/path:1":           `"host/path" cannot be a host name`,
	} {
		err := Check(addr)
		if assert.Error(t, err, addr) {
			assert.Contains(t, err.Error(), want, addr)
			assert.NotContains(t, err.Error(), "pw", addr)
		}
	}
}
