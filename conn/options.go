package conn

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/resp"
)

// Options configure the connection to one master. It is a value: copy it
// freely. Every zero field means the documented default.
type Options struct {
	// Network is "tcp" (default) or "unix".
	Network string
	// Addr is "host:port" for tcp (default "127.0.0.1:6379"), a socket path
	// for unix.
	Addr string

	// Dialer opens the socket. Nil means a net.Dialer with DialTimeout. Tests
	// inject net.Pipe or a proxy here. TLS, when configured, is layered on
	// top of what Dialer returns.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialTimeout bounds dialing plus the handshake (AUTH, HELLO, SELECT,
	// CLIENT SETNAME, SCRIPT LOAD, INFO). Default 5s.
	DialTimeout time.Duration
	// TLS, when not nil, wraps the socket in TLS. An empty ServerName is
	// filled from Addr's host.
	TLS *tls.Config

	// Username and Password authenticate with AUTH (or HELLO ... AUTH).
	// An empty Username with a Password is the "default" user. They are
	// never written to logs or error texts.
	Username string
	Password string
	// DB is selected with SELECT when not 0.
	DB int
	// ClientName is set with CLIENT SETNAME (or HELLO ... SETNAME) when not "".
	ClientName string
	// Protocol is 2 (default, no HELLO sent) or 3 (HELLO 3).
	Protocol int
	// Scripts are loaded with SCRIPT LOAD in the handshake of the first
	// connect and of every reconnect to a master whose run_id changed (it
	// restarted, its script cache empty), so that EVALSHA of them finds
	// them at the first try. A reconnect to the same process loads
	// nothing, so that a master that is merely slow is not asked for that
	// work by every client at once. A master that refuses to load one (an
	// ACL without SCRIPT, say) is not an error, and neither is a cache
	// that loses them (SCRIPT FLUSH): the Conn answers a -NOSCRIPT to an
	// EVALSHA of one of them by sending the EVAL form of the same call in
	// its place, on the same socket (behind what was sent meanwhile), and
	// the request completes with that reply, its Cmd then the EVAL form.
	// It does so while the request's caller waits for it, and for a
	// request that asked for replay (Request.ReplayUntil) until its
	// deadline, also after its caller gave it up; a request given up
	// otherwise completes with the NOSCRIPT, unsent again.
	Scripts []string
	// Setup are commands run in every (re)connect's handshake, before the
	// scripts are loaded and before the Conn takes requests, so that every
	// request on a socket follows them (a master that restarts drops the
	// socket: the next one runs them again). An error reply fails the
	// connect, which is then retried like any other. Each is a command's
	// arguments, e.g. {"EVAL", script, "1", key}.
	Setup [][]string

	// OnMessage, when set, makes the Conn a pub/sub connection: every
	// published message that arrives (RESP2's ["message", channel,
	// payload] or, from a shard channel, ["smessage", channel, payload], or
	// the RESP3 push of either) goes to OnMessage instead of to a request;
	// every other reply completes a request as usual, confirmations of
	// (S)SUBSCRIBE and (S)UNSUBSCRIBE included, so send those with exactly
	// one channel each (one command, one confirmation). A confirmation the
	// server sends unasked (the SUNSUBSCRIBE of a Redis Cluster node that
	// lost the channel's slot) completes the oldest request, or, with none
	// pending, fails the socket (ErrUnexpectedReply) and the Conn
	// reconnects. Over RESP2 a subscribed connection accepts only the
	// pub/sub commands and PING.
	// Subscriptions end with the socket: after a reconnect (see
	// ServerInfo.Generation) the caller subscribes again.
	//
	// OnMessage runs on the Conn's reader goroutine, one message at a
	// time: it must return quickly and not call into this Conn's Send and
	// wait for the reply. channel and payload are valid only during the
	// call.
	OnMessage func(channel, payload []byte)
	// OnConnect, when set, is called after every successful connect and
	// reconnect, with what the handshake learned, from the Conn's manager
	// goroutine; the socket already takes requests. A pub/sub client
	// learns here that its subscriptions are gone. It must return quickly.
	OnConnect func(info *ServerInfo)

	// ReadBufferSize is the initial size of the reply buffer. Default 16 KiB.
	ReadBufferSize int
	// WriteBufferSize is the initial size of the batch buffer. Default 16 KiB.
	WriteBufferSize int
	// Limits bound what a reply may declare (bulk size, element count,
	// nesting depth). Zero fields mean resp's defaults.
	Limits resp.Limits

	// ReadTimeout judges whether the master is alive. When a reply is
	// owed and none has come for ReadTimeout, and at least a second (the
	// master is hung, paused or cut off), the socket is reset, which fails the pending requests
	// with ErrReadTimeout and drops the backlog, requests fail fast until
	// it reconnects, and it reconnects after a random wait of at most
	// ReconnectMin. A master that answers, however slowly, keeps its
	// socket; while its oldest pending request has waited longer than
	// ReadTimeout, new requests wait in the Conn's queue instead of
	// joining the master's backlog, and those their callers abandon
	// meanwhile are never sent. The handshake's replies are waited for
	// the same way: ReadTimeout, at least a second. It is not a
	// per-request timeout (callers bound their own waits with a context or
	// timer). Set it above the longest command you send (a blocking
	// BLPOP, say). Default 3s; the redlock package
	// defaults it to twice its MasterTimeout.
	ReadTimeout time.Duration
	// MaxPending bounds the requests written but not yet answered; a request
	// beyond it fails at once with ErrTooManyPending. Default 65536.
	MaxPending int

	// ReconnectMin and ReconnectMax bound the jittered exponential backoff
	// between reconnect attempts. Defaults 10ms and 1s.
	ReconnectMin time.Duration
	ReconnectMax time.Duration
}

// ParseAddr turns one master address into Options, starting from base (the
// settings shared by all masters). It accepts
//
//	host:port
//	redis://[[user]:password@]host[:port][/db][?protocol=3&client_name=NAME]
//	rediss://...                       (the same, with TLS)
//	unix:/path/to/socket[?db=N]        (also unix:///path and a bare /path)
//
// Fields the address does not mention keep base's values. A host:port
// whose host cannot be one (a character no host name has, as in the typo
// redis//10.0.0.1:7001) or whose port is not one is refused, with what to
// fix. An error never contains the password.
func ParseAddr(addr string, base Options) (Options, error) {
	o, err := pipe.ParseAddr(addr, pipe.Options(base))
	return Options(o), err
}
