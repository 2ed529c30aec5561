package pipe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/volleylock/volley/internal/hostport"
	"github.com/volleylock/volley/resp"
)

// Options are conn.Options, field for field (conn converts one to the
// other): see there for what each field means and its default.
type Options struct {
	Network         string
	Addr            string
	Dialer          func(ctx context.Context, network, addr string) (net.Conn, error)
	DialTimeout     time.Duration
	TLS             *tls.Config
	Username        string
	Password        string
	DB              int
	ClientName      string
	Protocol        int
	Scripts         []string
	Setup           [][]string
	OnMessage       func(channel, payload []byte)
	OnConnect       func(info *ServerInfo)
	ReadBufferSize  int
	WriteBufferSize int
	Limits          resp.Limits
	ReadTimeout     time.Duration
	MaxPending      int
	ReconnectMin    time.Duration
	ReconnectMax    time.Duration
}

// withDefaults returns o with every zero field replaced by its default, or an
// error naming the first invalid field.
func (o Options) withDefaults() (Options, error) {
	if o.Network == "" {
		o.Network = "tcp"
	}
	if o.Network != "tcp" && o.Network != "tcp4" && o.Network != "tcp6" && o.Network != "unix" {
		return o, fmt.Errorf("conn: Network %q: want tcp or unix", o.Network)
	}
	if o.Addr == "" {
		if o.Network == "unix" {
			return o, errors.New("conn: Addr: a unix socket needs a path")
		}
		o.Addr = "127.0.0.1:6379"
	}
	if o.Protocol == 0 {
		o.Protocol = 2
	}
	if o.Protocol != 2 && o.Protocol != 3 {
		return o, fmt.Errorf("conn: Protocol %d: want 2 or 3", o.Protocol)
	}
	if o.DB < 0 {
		return o, fmt.Errorf("conn: DB %d is negative", o.DB)
	}
	if o.Username != "" && o.Password == "" {
		return o, errors.New("conn: Username set without a Password")
	}
	for i, args := range o.Setup {
		if len(args) == 0 {
			return o, fmt.Errorf("conn: Setup[%d] is an empty command", i)
		}
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"DialTimeout", &o.DialTimeout, 5 * time.Second},
		{"ReadTimeout", &o.ReadTimeout, 3 * time.Second},
		{"ReconnectMin", &o.ReconnectMin, 10 * time.Millisecond},
		{"ReconnectMax", &o.ReconnectMax, time.Second},
	} {
		if *d.v < 0 {
			return o, fmt.Errorf("conn: %s %v is negative", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if o.ReconnectMax < o.ReconnectMin {
		return o, fmt.Errorf("conn: ReconnectMax %v is below ReconnectMin %v", o.ReconnectMax, o.ReconnectMin)
	}
	if o.ReadBufferSize <= 0 {
		o.ReadBufferSize = 16 << 10
	}
	if o.WriteBufferSize <= 0 {
		o.WriteBufferSize = 16 << 10
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 1 << 16
	}
	return o, nil
}

// ParseAddr is conn.ParseAddr, over this package's Options.
func ParseAddr(addr string, base Options) (Options, error) {
	o := base
	switch {
	case strings.HasPrefix(addr, "redis://"), strings.HasPrefix(addr, "rediss://"):
		return parseURL(addr, o)
	case strings.HasPrefix(addr, "unix:"), strings.HasPrefix(addr, "/"):
		path, query, _ := strings.Cut(strings.TrimPrefix(addr, "unix:"), "?")
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return o, errors.New("conn: unix address without a path")
		}
		o.Network, o.Addr = "unix", path
		q, err := url.ParseQuery(query)
		if err != nil {
			return o, fmt.Errorf("conn: unix address query: %w", err)
		}
		return applyQuery(o, q)
	default:
		if _, _, err := net.SplitHostPort(addr); err != nil {
			if strings.ContainsAny(addr, "@/") {
				// It may hold credentials: not repeated.
				return o, errors.New("conn: address: want host:port or a redis://, rediss:// or unix: address")
			}
			return o, fmt.Errorf("conn: address %q: want host:port or a redis://, rediss:// or unix: address", addr)
		}
		// A typo ("redis//h:1") would be dialled as a host name that
		// never resolves, the server taken for down.
		if err := hostport.Check(addr); err != nil {
			return o, fmt.Errorf("conn: address: %w (want host:port or a redis://, rediss:// or unix: address)", err)
		}
		o.Network, o.Addr = "tcp", addr
		return o, nil
	}
}

func parseURL(raw string, o Options) (Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url errors quote the whole URL, password included: say less.
		return o, errors.New("conn: malformed redis:// URL")
	}
	o.Network = "tcp"
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "6379"
	}
	o.Addr = net.JoinHostPort(host, port)
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			o.Username, o.Password = u.User.Username(), pw
		} else {
			// redis://secret@host: a lone userinfo is the password.
			o.Username, o.Password = "", u.User.Username()
		}
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return o, fmt.Errorf("conn: URL database %q is not a number", db)
		}
		o.DB = n
	}
	if u.Scheme == "rediss" {
		if o.TLS == nil {
			o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		} else {
			o.TLS = o.TLS.Clone()
		}
	}
	return applyQuery(o, u.Query())
}

func applyQuery(o Options, q url.Values) (Options, error) {
	for key, vals := range q {
		v := vals[len(vals)-1]
		var err error
		switch key {
		case "db":
			o.DB, err = strconv.Atoi(v)
		case "protocol":
			o.Protocol, err = strconv.Atoi(v)
		case "client_name":
			o.ClientName = v
		case "dial_timeout":
			o.DialTimeout, err = time.ParseDuration(v)
		case "read_timeout":
			o.ReadTimeout, err = time.ParseDuration(v)
		default:
			return o, fmt.Errorf("conn: unknown address parameter %q", key)
		}
		if err != nil {
			return o, fmt.Errorf("conn: address parameter %s=%q: %w", key, v, err)
		}
	}
	return o, nil
}
