// Package hostport checks a host:port address before anything dials it,
// so that a typo is refused with what to fix rather than taken for a host
// name that never resolves.
package hostport

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"unicode"
)

// Check returns nil when addr is host:port with a port (a number up to
// 65535, or a service name) and a host that can be one: empty (the local
// system), an IP address (an IPv6 one in brackets, with or without a
// zone), or a name of letters, digits, '-', '_' and '.'. Otherwise its
// error says what is wrong; it repeats addr's host only when addr holds
// no '@' (it may then hold credentials).
func Check(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want host:port")
	}
	if err := checkPort(port); err != nil {
		return err
	}
	if host == "" || isIP(host) {
		return nil
	}
	for _, r := range host {
		if r == '-' || r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			continue
		}
		if strings.ContainsRune(addr, '@') {
			return fmt.Errorf("the host cannot be a host name: it contains %q", r)
		}
		return fmt.Errorf("%q cannot be a host name: it contains %q%s", host, r, schemeHint(host, port))
	}
	return nil
}

// checkPort accepts a port number from 1 to 65535 or a service name
// (letters, digits and '-', with a letter).
func checkPort(port string) error {
	if port == "" {
		return errors.New("no port: want host:port")
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 1 || n > 65535 {
			return fmt.Errorf("port %d: want 1 to 65535", n)
		}
		return nil
	}
	letter := false
	for _, r := range port {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letter = true
		case r >= '0' && r <= '9', r == '-':
		default:
			return fmt.Errorf("port %q: want a number", port)
		}
	}
	if !letter {
		return fmt.Errorf("port %q: want a number", port)
	}
	return nil
}

// isIP reports whether host is an IP address, maybe with an IPv6 zone.
func isIP(host string) bool {
	if i := strings.IndexByte(host, '%'); i >= 0 {
		host = host[:i]
	}
	return net.ParseIP(host) != nil
}

// schemeHint says what host:port likely meant when host starts with a
// scheme whose "://" lost a character ("redis//10.0.0.1", "redis:10.0.0.1"
// is refused earlier: too many colons).
func schemeHint(host, port string) string {
	scheme, rest, ok := strings.Cut(host, "//")
	scheme = strings.TrimSuffix(scheme, ":")
	if !ok || scheme == "" || rest == "" {
		return ""
	}
	for _, r := range scheme {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-') {
			return ""
		}
	}
	return ": did you mean " + scheme + "://" + net.JoinHostPort(rest, port) + "?"
}
