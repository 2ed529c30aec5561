package pipe

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAddr(t *testing.T) {
	base := Options{DialTimeout: time.Second, ClientName: "base"}
	tests := []struct {
		in   string
		want func(o *Options)
	}{
		{"10.0.0.1:6380", func(o *Options) { o.Network, o.Addr = "tcp", "10.0.0.1:6380" }},
		{"redis://h:1234/2", func(o *Options) { o.Network, o.Addr, o.DB = "tcp", "h:1234", 2 }},
		{"redis://h", func(o *Options) { o.Network, o.Addr = "tcp", "h:6379" }},
		{"redis://:pw@h:1", func(o *Options) { o.Network, o.Addr, o.Password = "tcp", "h:1", "pw" }},
		{"redis://pw@h:1", func(o *Options) { o.Network, o.Addr, o.Password = "tcp", "h:1", "pw" }},
		{"redis://u:pw@h:1?protocol=3&client_name=x&read_timeout=2s", func(o *Options) {
			o.Network, o.Addr, o.Username, o.Password, o.Protocol, o.ClientName, o.ReadTimeout = "tcp", "h:1", "u", "pw", 3, "x", 2*time.Second
		}},
		{"unix:/tmp/r.sock?db=3", func(o *Options) { o.Network, o.Addr, o.DB = "unix", "/tmp/r.sock", 3 }},
		{"unix:///tmp/r.sock", func(o *Options) { o.Network, o.Addr = "unix", "/tmp/r.sock" }},
		{"/tmp/r.sock", func(o *Options) { o.Network, o.Addr = "unix", "/tmp/r.sock" }},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseAddr(tt.in, base)
			require.NoError(t, err)
			want := base
			tt.want(&want)
			assert.Equal(t, want, got)
		})
	}

	got, err := ParseAddr("rediss://h:1", base)
	require.NoError(t, err)
	require.NotNil(t, got.TLS, "rediss:// must turn TLS on")

	// A typo is refused with what to fix, not dialled as a host name.
	_, err = ParseAddr("redis//127.0.0.1:7001", base)
	require.ErrorContains(t, err, "did you mean redis://127.0.0.1:7001?")
}

func TestParseAddrErrorsHidePassword(t *testing.T) {
	for _, in := range []string{"redis://u:sekrit@h:1/notadb", "redis://u:sekrit@h:1?bogus=1", "redis://u:sekrit@[::1", "nohostport", "unix:", "redis//sekrit@h:1"} {
		_, err := ParseAddr(in, Options{})
		require.Error(t, err, in)
		assert.NotContains(t, err.Error(), "sekrit")
	}
}

func TestOptionsValidation(t *testing.T) {
	for name, o := range map[string]Options{
		"protocol":   {Protocol: 4},
		"network":    {Network: "udp"},
		"db":         {DB: -1},
		"user":       {Username: "u"},
		"timeout":    {ReadTimeout: -1},
		"backoff":    {ReconnectMin: time.Second, ReconnectMax: time.Millisecond},
		"unix empty": {Network: "unix"},
	} {
		_, err := New(o)
		assert.Error(t, err, name)
	}
}
