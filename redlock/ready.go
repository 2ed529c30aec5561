package redlock

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/volleylock/volley/internal/ctxerr"
	"github.com/volleylock/volley/internal/pipe"
	"github.com/volleylock/volley/resp"
)

// ErrMasterUnusable: New found a master that no retry can make usable:
// it refused the credentials (or was sent a password and has none) or an
// ACL denied a command of the handshake, its TLS certificate did not
// verify, it speaks TLS where its address has none or the other way
// round (conn.ErrTLSMismatch: the error says which scheme to use), it
// refused the database index, it is not an independent master (a Redis
// Cluster node, a Sentinel, a replica), or it is listed twice under two
// addresses. The error wraps it and names the master.
var ErrMasterUnusable = errors.New("redlock: master unusable")

// unusable returns why server sv can never take part in a quorum, judged
// from its first connect attempt (err, nil when connected, and what the
// server said of itself), or nil when it can, or may once it is reachable.
// cluster says that sv is a node of a redis-cluster:// entry.
func unusable(sv server, cluster bool, err error) error {
	if err == nil {
		info := sv.cn.Info()
		switch {
		case info == nil:
			return nil
		case info.Mode == "cluster" && !cluster:
			return fmt.Errorf("%w: %s is a Redis Cluster node: name the cluster with a redis-cluster:// address (its primaries are then the masters), or list standalone masters", ErrMasterUnusable, sv.addr)
		case info.Mode == "sentinel":
			return fmt.Errorf("%w: %s is a Sentinel, not a master", ErrMasterUnusable, sv.addr)
		case info.Role != "" && info.Role != "master":
			return fmt.Errorf("%w: %s is a replica (role %s): list masters in Config.Addrs", ErrMasterUnusable, sv.addr, info.Role)
		}
		return nil
	}
	var ce *pipe.Error
	if !errors.As(err, &ce) {
		return nil
	}
	if errors.Is(err, pipe.ErrTLSMismatch) {
		// The server answered in the other protocol: TLS where the
		// address has none, or plain RESP where it has TLS.
		return fmt.Errorf("%w: %w", ErrMasterUnusable, err)
	}
	switch ce.Op {
	case pipe.OpHandshake:
		// An error reply to HELLO, AUTH, SELECT or INFO: the server is
		// there and said no; it will say it again.
		var se *resp.ServerError
		if errors.As(err, &se) {
			switch se.Prefix {
			case "WRONGPASS", "NOAUTH", "NOPERM":
				return fmt.Errorf("%w: %w", ErrMasterUnusable, err)
			case "ERR":
				if strings.Contains(se.Message, "DB index") || strings.Contains(se.Message, "invalid DB") {
					return fmt.Errorf("%w: %w", ErrMasterUnusable, err)
				}
				if strings.Contains(se.Message, "without any password configured") {
					// AUTH <password> to a server that has none (the
					// reply says "<password>", not the password).
					return fmt.Errorf("%w: %s has no password configured, but a password was sent: give none (Connection.Password, or the address's), or set requirepass on the server: %w", ErrMasterUnusable, sv.addr, err)
				}
			}
		}
	case pipe.OpTLS:
		var verify *tls.CertificateVerificationError
		var authority x509.UnknownAuthorityError
		var host x509.HostnameError
		var invalid x509.CertificateInvalidError
		var record tls.RecordHeaderError
		if errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &host) ||
			errors.As(err, &invalid) || errors.As(err, &record) {
			return fmt.Errorf("%w: %w", ErrMasterUnusable, err)
		}
	}
	return nil
}

// probeScript is what New runs on every master with EVAL and EVALSHA,
// keyless, to learn whether an ACL denies either (see scriptsDenied).
const probeScript = "return 1"

// probeSHA is probeScript's SHA-1. EVALSHA of it is checked against the
// ACL before the script is looked up: NOPERM if denied, else NOSCRIPT or
// its result.
const probeSHA = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"

// scriptsDenied asks server sv whether its ACL lets this user run EVAL and
// EVALSHA, which every lock needs (SET alone takes a single-key lock on
// the first attempt; every release, extension and waiting attempt is a
// script). It cannot check the commands the scripts call or the key
// patterns (that needs the user's keys): those show in the first lock's
// error, as the server's NOPERM reply naming them. Only a NOPERM answer
// counts; a master that does not answer in time is left to the locks.
func scriptsDenied(ctx context.Context, sv server, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for _, args := range [][]any{{"EVAL", probeScript, "0"}, {"EVALSHA", probeSHA, "0"}} {
		_, err := sv.cn.Do(ctx, args...)
		var se *resp.ServerError
		if errors.As(err, &se) && se.Prefix == "NOPERM" {
			return fmt.Errorf("%w: %s: the ACL denies %s, which every lock needs: %w", ErrMasterUnusable, sv.addr, args[0], err)
		}
	}
	return nil
}

// sameServers reports masters that are one server under two addresses
// (a host name and its IP, another database index): its run_id is the
// same, and it would vote twice in every quorum. Masters not connected yet
// are not compared; a restart gives a server a new run_id, so two
// different servers never share one.
func sameServers(servers []server) error {
	seen := make(map[string]string, len(servers))
	var errs []error
	for _, sv := range servers {
		info := sv.cn.Info()
		if info == nil || info.RunID == "" {
			continue
		}
		if first, ok := seen[info.RunID]; ok {
			errs = append(errs, fmt.Errorf("%w: %s and %s are the same server (one run_id): it would vote twice", ErrMasterUnusable, first, sv.addr))
			continue
		}
		seen[info.RunID] = sv.addr
	}
	return errors.Join(errs...)
}

// WaitQuorum waits until a quorum of masters is connected (reachable, and
// their handshake done) and returns nil, or returns an error matching
// ctx's (errors.Is) with each master's state once ctx ends. It is meant
// for readiness probes: New does not wait for unreachable masters, which
// reconnect in the background. Masters that the restart guard holds out
// count as connected here (Masters reports their Guard); a Lock then
// waits for the guard's end or fails naming it.
func (c *Client) WaitQuorum(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		up := 0
		for _, st := range c.Masters() {
			if st.Err == nil {
				up++
			}
		}
		if up >= c.quorum {
			return nil
		}
		if c.closed.Load() {
			return ErrClosed
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			errs := []error{fmt.Errorf("redlock: %d of %d masters connected, quorum %d: %w", up, len(c.masters), c.quorum, ctxerr.Of(ctx))}
			for _, sv := range c.servers() {
				if err := sv.cn.Err(); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		}
	}
}
