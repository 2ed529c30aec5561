package redlock

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/volleylock/volley/internal/hostport"
	"github.com/volleylock/volley/internal/pipe"
)

// parseEntry reads what a redis-cluster:// and a redis-sentinel:// entry
// (and their rediss- forms) share: the scheme; the credentials before the
// last '@', into base's Username and Password (a lone one is the
// password, as in a redis:// URL); TLS for a rediss- scheme; what comes
// between the credentials and '?'; and the query. Its errors never contain
// the password.
func parseEntry(addr string, base pipe.Options) (scheme, rest string, q url.Values, o pipe.Options, err error) {
	o = base
	scheme, rest, _ = strings.Cut(addr, "://")
	rest, query, _ := strings.Cut(rest, "?")
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		u, perr := url.Parse("redis://" + rest[:at+1] + "x")
		if perr != nil || u.User == nil {
			return "", "", nil, o, fmt.Errorf("redlock: malformed credentials in a %s:// address", scheme)
		}
		if pw, ok := u.User.Password(); ok {
			o.Username, o.Password = u.User.Username(), pw
		} else {
			o.Username, o.Password = "", u.User.Username()
		}
		rest = rest[at+1:]
	}
	if q, err = url.ParseQuery(query); err != nil {
		return "", "", nil, o, fmt.Errorf("redlock: %s address: bad query: %w", scheme, err)
	}
	o.Network = "tcp"
	if strings.HasPrefix(scheme, "rediss-") {
		if o.TLS == nil {
			o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		} else {
			o.TLS = o.TLS.Clone()
		}
	}
	return scheme, rest, q, o, nil
}

// hostPorts splits a comma-separated list of host:port; what names them in
// an error ("seed", "Sentinel").
func hostPorts(list, scheme, what string) ([]string, error) {
	var out []string
	for _, h := range strings.Split(list, ",") {
		if _, _, err := net.SplitHostPort(h); err != nil {
			return nil, fmt.Errorf("redlock: %s address: %s %q: want host:port", scheme, what, h)
		}
		if err := hostport.Check(h); err != nil {
			return nil, fmt.Errorf("redlock: %s address: %s: %w", scheme, what, err)
		}
		out = append(out, h)
	}
	return out, nil
}

// atAddr returns o for the server at addr, its TLS server name that host
// unless o names one.
func atAddr(o pipe.Options, addr string) pipe.Options {
	o.Addr = addr
	if o.TLS != nil {
		o.TLS = o.TLS.Clone()
		if o.TLS.ServerName == "" {
			o.TLS.ServerName, _, _ = net.SplitHostPort(addr)
		}
	}
	return o
}
