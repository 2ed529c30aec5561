package redlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/volleylock/volley/internal/pipe"
)

// A Sentinel-managed primary as one master of the quorum: a Config.Addrs
// entry
//
//	redis-sentinel://[[user]:password@]host:port[,host:port...]/name[?db=N]
//	rediss-sentinel://...   (the same, with TLS to the primary)
//
// names the Sentinels that watch the primary called name. The credentials
// and db are the primary's; Sentinels are asked without them, unless the
// parameters sentinel_user and sentinel_password give theirs (as go-redis'
// FailoverOptions.SentinelUsername and SentinelPassword do), and without
// TLS unless sentinel_tls=true (with the same TLS config as the primary). The Client
// asks the Sentinels for the current primary (SENTINEL
// get-master-addr-by-name), and again whenever an answer says the server
// is no primary (READONLY) or a connection fails, and every second; when
// they name another server, the master moves there (see master.move and
// "Sentinel" in the package documentation). Several such entries, and
// standalone masters beside them, make up the quorum.

// sentinelEntry is a parsed Sentinel address.
type sentinelEntry struct {
	sentinels []string     // host:port
	name      string       // the primary's name at the Sentinels
	opts      pipe.Options // the primary's, Addr aside
	ask       pipe.Options // a Sentinel's, Addr aside
}

// isSentinelAddr reports whether addr is a Sentinel entry.
func isSentinelAddr(addr string) bool {
	return strings.HasPrefix(addr, "redis-sentinel://") || strings.HasPrefix(addr, "rediss-sentinel://")
}

// parseSentinelAddr parses a Sentinel entry over base. Its errors never
// contain the password.
func parseSentinelAddr(addr string, base pipe.Options) (*sentinelEntry, error) {
	scheme, rest, q, opts, err := parseEntry(addr, base)
	if err != nil {
		return nil, err
	}
	e := &sentinelEntry{opts: opts}
	hosts, name, ok := strings.Cut(rest, "/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("redlock: %s address: want %s://host:port[,host:port...]/name", scheme, scheme)
	}
	e.name = name
	if e.sentinels, err = hostPorts(hosts, scheme, "Sentinel"); err != nil {
		return nil, err
	}
	e.ask = base
	e.ask.Network, e.ask.Username, e.ask.Password, e.ask.DB, e.ask.TLS = "tcp", "", "", 0, nil
	for k, v := range q {
		last := v[len(v)-1]
		switch k {
		case "sentinel_user":
			e.ask.Username = last
		case "sentinel_password":
			e.ask.Password = last
		case "sentinel_tls":
			on, err := strconv.ParseBool(last)
			if err != nil {
				return nil, fmt.Errorf("redlock: %s address: sentinel_tls=%q: want true or false", scheme, last)
			}
			e.ask.TLS = nil
			if on {
				e.ask.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
				if base.TLS != nil {
					e.ask.TLS = base.TLS.Clone()
				}
			}
		case "db":
			var n int
			if _, err := fmt.Sscan(v[len(v)-1], &n); err != nil || n < 0 {
				return nil, fmt.Errorf("redlock: %s address: db=%q: want a number", scheme, v[len(v)-1])
			}
			e.opts.DB = n
		default:
			return nil, fmt.Errorf("redlock: %s address: unknown parameter %q", scheme, k)
		}
	}
	return e, nil
}

// primaryOptions returns the options of a connection to the primary at
// addr.
func (e *sentinelEntry) primaryOptions(addr string) pipe.Options { return atAddr(e.opts, addr) }

// errUnknownName: the Sentinels answered, and none knows the name.
var errUnknownName = errors.New("no Sentinel knows a primary by that name")

// primary asks the Sentinels, one after another, for the address of the
// primary they call e.name, and returns the first answer.
func (e *sentinelEntry) primary(ctx context.Context) (string, error) {
	var errs []error
	unknown := 0
	for _, s := range e.sentinels {
		cn, err := pipe.Dial(ctx, atAddr(e.ask, s))
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		vals, err := cn.Do(ctx, "SENTINEL", "get-master-addr-by-name", e.name)
		cn.Close()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", s, err))
		case len(vals) > 0 && vals[0].IsError():
			errs = append(errs, fmt.Errorf("%s: %w", s, vals[0].Err()))
		case len(vals) > 0 && vals[0].Null:
			unknown++
		case len(vals) == 3 && vals[0].Int == 2:
			return net.JoinHostPort(string(vals[1].Bytes), string(vals[2].Bytes)), nil
		default:
			errs = append(errs, fmt.Errorf("%s: malformed SENTINEL get-master-addr-by-name reply", s))
		}
	}
	if unknown > 0 && len(errs) == 0 {
		return "", fmt.Errorf("%w: %s: %q", ErrMasterUnusable, errUnknownName, e.name)
	}
	err := errors.Join(errs...)
	if strings.Contains(err.Error(), "NOAUTH") && e.ask.Password == "" {
		return "", fmt.Errorf("redlock: no Sentinel of %q answered: %w (%s)", e.name, err, hintSentinelAuth)
	}
	return "", fmt.Errorf("redlock: no Sentinel of %q answered: %w", e.name, err)
}

// hintSentinelAuth is what a NOAUTH from a Sentinel asked without
// credentials adds to the error: the address's own credentials are the
// primary's, never sent to the Sentinels.
const hintSentinelAuth = "the Sentinels require a password: give it with the address's sentinel_password parameter (and sentinel_user for an ACL user); the address's own credentials are the primary's"

// addSentinel resolves a Sentinel entry and adds its primary to c's
// masters.
func (c *Client) addSentinel(ctx context.Context, addr string) error {
	e, err := parseSentinelAddr(addr, c.cfg.Conn.options(c.cfg.MasterTimeout))
	if err != nil {
		return invalid(err)
	}
	primary, err := e.primary(ctx)
	if err != nil {
		return err
	}
	opts := c.masterOptions(e.primaryOptions(primary))
	cn, err := pipe.New(opts)
	if err != nil {
		return invalidf("Config.Addrs: %w", err)
	}
	m := newMaster(e.name+"@"+primary, opts, cn)
	m.sentinel = e
	c.masters = append(c.masters, m)
	return nil
}

// sentinelGrace is FailoverGrace for a Client with Sentinel entries, read
// at New from their primaries: how long a deposed primary may still take
// writes. Only min-replicas-to-write bounds that (a primary cut off from
// its replicas refuses writes once they lag min-replicas-max-lag
// seconds); the Sentinels' own timings (down-after-milliseconds, the
// failover timeout) bound when a failover starts, not when the old
// primary stops. So: the largest min-replicas-max-lag of the primaries,
// plus graceMargin, when every one has min-replicas-to-write set (CONFIG
// GET); else Config.FailoverGrace's default, since nothing bounds it (and
// a primary that refuses CONFIG GET tells nothing). Without Sentinel
// entries, the default.
func (c *Client) sentinelGrace(ctx context.Context) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Conn.dialTimeout())
	defer cancel()
	var lag time.Duration
	for _, m := range c.masters {
		if m.sentinel == nil {
			continue
		}
		cn := m.conn()
		if cn == nil {
			return c.cfg.FailoverGrace
		}
		vals, err := cn.Do(ctx, "CONFIG", "GET", "min-replicas-*")
		if err != nil || len(vals) == 0 || vals[0].IsError() {
			return c.cfg.FailoverGrace
		}
		fields := map[string]string{}
		for i := 1; i+1 < len(vals); i += 2 {
			fields[string(vals[i].Bytes)] = string(vals[i+1].Bytes)
		}
		toWrite, err1 := strconv.Atoi(fields["min-replicas-to-write"])
		maxLag, err2 := strconv.Atoi(fields["min-replicas-max-lag"])
		if err1 != nil || err2 != nil || toWrite <= 0 || maxLag <= 0 {
			return c.cfg.FailoverGrace
		}
		lag = max(lag, time.Duration(maxLag)*time.Second)
	}
	if lag == 0 {
		return c.cfg.FailoverGrace
	}
	return lag + graceMargin
}
