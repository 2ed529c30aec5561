package redlock

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/volleylock/volley/internal/pipe"
)

// Connection is how a Client connects to its masters: the settings every
// master shares. An address's own URL fields (redis://user:pass@host/db,
// rediss:// for TLS) override them. Zero fields mean the documented
// defaults. It is a value: copy it freely.
//
// The Client owns its connections' plumbing (the scripts loaded at every
// connect, pub/sub, read timeouts, buffers): none of it is configured
// here, so that no setting can take a lock connection off its fast path.
type Connection struct {
	// Username and Password authenticate with AUTH (or HELLO ... AUTH
	// with Protocol 3). An empty Username with a Password is the
	// "default" user. They never appear in logs or error texts.
	Username string
	Password string
	// DB is selected with SELECT when not 0.
	DB int
	// ClientName is set with CLIENT SETNAME when not "".
	ClientName string
	// Protocol is 2 (default) or 3 (RESP3, with HELLO 3).
	Protocol int
	// TLS, when not nil, wraps every connection in TLS; an empty
	// ServerName is filled from the address's host.
	TLS *tls.Config
	// DialTimeout bounds dialing plus the handshake. Default 5s.
	DialTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the jittered exponential backoff
	// between reconnect attempts to a master that is down. Defaults 10ms
	// and 1s.
	ReconnectMin, ReconnectMax time.Duration
	// Dialer opens the socket; nil means a net.Dialer. For proxies and
	// tests; TLS, when set, is layered on what it returns.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
}

// dialTimeout is DialTimeout or its default: how long New waits for a
// master's answers to its checks.
func (cc Connection) dialTimeout() time.Duration {
	if cc.DialTimeout > 0 {
		return cc.DialTimeout
	}
	return 5 * time.Second
}

// options is the base pipe.Options of every master's connection: cc, and
// a ReadTimeout of twice the MasterTimeout (see "Slow masters" in the
// package documentation).
func (cc Connection) options(masterTimeout time.Duration) pipe.Options {
	return pipe.Options{
		Username:     cc.Username,
		Password:     cc.Password,
		DB:           cc.DB,
		ClientName:   cc.ClientName,
		Protocol:     cc.Protocol,
		TLS:          cc.TLS,
		DialTimeout:  cc.DialTimeout,
		ReconnectMin: cc.ReconnectMin,
		ReconnectMax: cc.ReconnectMax,
		Dialer:       cc.Dialer,
		// A connection whose oldest request has waited this long is
		// behind: nothing sent on it now could be answered within
		// MasterTimeout. See "Slow masters" in the package documentation.
		ReadTimeout: 2 * masterTimeout,
	}
}
