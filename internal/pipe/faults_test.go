package pipe

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/fakeredis"
	"github.com/volleylock/volley/resp"
)

// Each fault of the fake master gives a clear error, no hang, and the Conn
// recovers once the master behaves again.
func TestFakeMasterFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault fakeredis.Fault
		check func(t *testing.T, err error)
	}{
		{"hang", fakeredis.Fault{Hang: true}, func(t *testing.T, err error) {
			require.ErrorIs(t, err, ErrReadTimeout)
		}},
		{"close before reply", fakeredis.Fault{CloseBefore: true}, func(t *testing.T, err error) {
			require.ErrorIs(t, err, io.EOF)
		}},
		{"close mid-reply", fakeredis.Fault{CloseMidReply: true}, func(t *testing.T, err error) {
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		}},
		{"garbage frame", fakeredis.Fault{Raw: []byte("$-2\r\n")}, func(t *testing.T, err error) {
			require.ErrorIs(t, err, resp.ErrProtocol)
		}},
		{"huge length", fakeredis.Fault{Raw: []byte("$99999999999999999999\r\n")}, func(t *testing.T, err error) {
			require.ErrorIs(t, err, resp.ErrProtocol)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeredis.StartT(t, fakeredis.Options{})
			c := dialT(t, Options{Addr: srv.Addr(), ReadTimeout: 100 * time.Millisecond,
				ReconnectMin: time.Millisecond, ReconnectMax: 5 * time.Millisecond})
			srv.SetFault("GET", tt.fault)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := c.Do(ctx, "GET", "k")
			var ce *Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, srv.Addr(), ce.Addr)
			tt.check(t, err)

			srv.ClearFaults()
			require.Eventually(t, func() bool {
				_, err := c.Do(ctx, "GET", "k")
				return err == nil
			}, 5*time.Second, 5*time.Millisecond, "no recovery after the fault cleared")
		})
	}
}

func TestFakeMasterRefusesThenAccepts(t *testing.T) {
	srv := fakeredis.StartT(t, fakeredis.Options{})
	srv.RefuseConnections(true)
	c, err := New(Options{Addr: srv.Addr(), ReconnectMin: time.Millisecond, ReconnectMax: 5 * time.Millisecond})
	require.NoError(t, err)
	defer c.Close()
	var ce *Error
	require.ErrorAs(t, c.WaitReady(context.Background()), &ce)
	_, err = c.Do(context.Background(), "PING")
	require.ErrorAs(t, err, &ce, "requests must fail fast while refused")

	srv.RefuseConnections(false)
	require.Eventually(t, func() bool { return c.Err() == nil }, 5*time.Second, time.Millisecond)
}

func TestFakeMasterRestartIsNoticed(t *testing.T) {
	srv := fakeredis.StartT(t, fakeredis.Options{})
	c := dialT(t, Options{Addr: srv.Addr(), ReconnectMin: time.Millisecond, ReconnectMax: 5 * time.Millisecond})
	assert.Equal(t, srv.RunID(), c.Info().RunID)
	srv.Restart()
	require.Eventually(t, func() bool {
		info := c.Info()
		return c.Err() == nil && info.Generation == 2
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, srv.RunID(), c.Info().RunID)
	assert.Zero(t, c.Info().Uptime)
}
