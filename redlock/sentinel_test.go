package redlock

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/conn"
)

func TestParseSentinelAddr(t *testing.T) {
	e, err := parseSentinelAddr("redis-sentinel://bob:s3cret@10.0.0.1:26379,10.0.0.2:26379/mymaster?db=2", conn.Options{ClientName: "me"})
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1:26379", "10.0.0.2:26379"}, e.sentinels)
	assert.Equal(t, "mymaster", e.name)
	assert.Equal(t, "bob", e.opts.Username)
	assert.Equal(t, "s3cret", e.opts.Password)
	assert.Equal(t, 2, e.opts.DB)
	assert.Equal(t, "me", e.opts.ClientName)
	assert.Empty(t, e.ask.Password, "Sentinels are asked without the primary's credentials")
	assert.Zero(t, e.ask.DB)

	e, err = parseSentinelAddr("rediss-sentinel://h:1/m", conn.Options{})
	require.NoError(t, err)
	assert.Equal(t, "p", e.primaryOptions("p:6379").TLS.ServerName)
	assert.Nil(t, e.ask.TLS)

	for _, bad := range []string{
		"redis-sentinel://h:1",
		"redis-sentinel://h:1/",
		"redis-sentinel://h/m",
		"redis-sentinel://h:1/m/x",
		"redis-sentinel://h:1/m?db=x",
		"redis-sentinel://h:1/m?copies=3",
		"redis-sentinel://pw:sec%zzret@h:1/m",
	} {
		_, err := parseSentinelAddr(bad, conn.Options{})
		require.Error(t, err, bad)
		assert.NotContains(t, err.Error(), "sec", "an error must not show the password")
	}
}
