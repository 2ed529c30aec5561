package pipe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"syscall"
	"time"

	"github.com/volleylock/volley/resp"
)

// handshake prepares a fresh socket: HELLO 3 (with AUTH and SETNAME) or AUTH
// and CLIENT SETNAME, then SELECT, then Options.Setup, then INFO server and
// INFO replication, all in one write; then, on the Conn's first connect and
// whenever INFO names another run_id than the last connect's (the master
// restarted, and its script cache is empty), SCRIPT LOAD of each of
// Options.Scripts in a second write. A reconnect to the same process loads
// nothing: its cache still holds them. It returns what INFO said. Errors
// name the command, never its arguments.
func (s *socket) handshake() (*ServerInfo, error) {
	o := &s.c.opts
	var names []string
	cmd := s.wbuf[:0]
	if o.Protocol == 3 {
		args := []string{"HELLO", "3"}
		if o.Password != "" {
			user := o.Username
			if user == "" {
				user = "default"
			}
			args = append(args, "AUTH", user, o.Password)
		}
		if o.ClientName != "" {
			args = append(args, "SETNAME", o.ClientName)
		}
		cmd = resp.AppendCommand(cmd, args...)
		names = append(names, "HELLO")
	} else {
		if o.Password != "" {
			if o.Username != "" {
				cmd = resp.AppendCommand(cmd, "AUTH", o.Username, o.Password)
			} else {
				cmd = resp.AppendCommand(cmd, "AUTH", o.Password)
			}
			names = append(names, "AUTH")
		}
		if o.ClientName != "" {
			cmd = resp.AppendCommand(cmd, "CLIENT", "SETNAME", o.ClientName)
			names = append(names, "CLIENT SETNAME")
		}
	}
	if o.DB != 0 {
		cmd = resp.AppendCommand(cmd, "SELECT", strconv.Itoa(o.DB))
		names = append(names, "SELECT")
	}
	for _, args := range o.Setup {
		cmd = resp.AppendCommand(cmd, args...)
		names = append(names, "setup "+args[0])
	}
	cmd = resp.AppendCommand(cmd, "INFO", "server")
	names = append(names, "INFO")
	cmd = resp.AppendCommand(cmd, "INFO", "replication")
	names = append(names, "INFO replication")
	if _, err := s.nc.Write(cmd); err != nil {
		return nil, err
	}
	s.wbuf = cmd[:0]

	info := &ServerInfo{}
	for i, name := range names {
		vals, err := s.rd.ReadReply()
		if err != nil {
			if i == 0 && o.TLS == nil && isTLSPort(err) {
				return nil, fmt.Errorf("%s: %w (%w)", name, err, errHintTLS)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := vals[0].Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if name == "INFO" {
			// Stamped after the reply arrived: an upper bound on when the
			// master measured its uptime, so StartedAt errs late, never early
			// (the restart guard depends on that).
			info.ConnectedAt = time.Now()
			if err := parseInfo(vals[0], info); err != nil {
				return nil, err
			}
		}
		if name == "INFO replication" {
			info.Role = infoField(vals[0], "role")
		}
	}
	if last := s.c.info.Load(); len(o.Scripts) > 0 && (last == nil || last.RunID != info.RunID) {
		if err := s.loadScripts(); err != nil {
			return nil, err
		}
	}
	return info, nil
}

// loadScripts loads each of Options.Scripts with SCRIPT LOAD, in one
// write. A master that refuses one (an ACL without SCRIPT, say) is not an
// error: callers still handle -NOSCRIPT.
func (s *socket) loadScripts() error {
	cmd := s.wbuf[:0]
	for _, script := range s.c.opts.Scripts {
		cmd = resp.AppendCommand(cmd, "SCRIPT", "LOAD", script)
	}
	if _, err := s.nc.Write(cmd); err != nil {
		return err
	}
	s.wbuf = cmd[:0]
	for range s.c.opts.Scripts {
		if _, err := s.rd.ReadReply(); err != nil {
			return fmt.Errorf("SCRIPT LOAD: %w", err)
		}
	}
	return nil
}

// parseInfo reads run_id, uptime_in_seconds, the mode, the server's name
// and its version from an INFO server reply (a bulk string in RESP2, a
// verbatim string in RESP3).
func parseInfo(v resp.Value, info *ServerInfo) error {
	text := v.Bytes
	if v.Type == resp.TypeVerbatim {
		_, text = v.Verbatim()
	}
	if v.Type != resp.TypeBulk && v.Type != resp.TypeVerbatim || v.Null {
		return errors.New("INFO: reply is not a string")
	}
	found := 0
	var redisVersion, valkeyVersion string
	for line := range bytes.Lines(text) {
		line = bytes.TrimRight(line, "\r\n")
		if k, val, ok := bytes.Cut(line, []byte{':'}); ok {
			switch string(k) {
			case "run_id":
				info.RunID = string(val)
				found++
			case "redis_mode", "server_mode":
				if info.Mode == "" || string(k) == "server_mode" {
					info.Mode = string(val)
				}
			case "server_name":
				info.Server = string(val)
			case "redis_version":
				redisVersion = string(val)
			case "valkey_version":
				valkeyVersion = string(val)
			case "uptime_in_seconds":
				secs, err := strconv.ParseInt(string(val), 10, 64)
				if err != nil || secs < 0 {
					return fmt.Errorf("INFO: bad uptime_in_seconds %q", val)
				}
				info.Uptime = time.Duration(secs) * time.Second
				found++
			}
		}
	}
	if found < 2 {
		return errors.New("INFO: no run_id or uptime_in_seconds")
	}
	if info.Server == "" {
		info.Server = "redis"
	}
	info.Version = redisVersion
	if info.Server == "valkey" && valkeyVersion != "" {
		info.Version = valkeyVersion
	}
	return nil
}

// infoField returns the value of field in an INFO reply, or "".
func infoField(v resp.Value, field string) string {
	text := v.Bytes
	if v.Type == resp.TypeVerbatim {
		_, text = v.Verbatim()
	}
	for line := range bytes.Lines(text) {
		line = bytes.TrimRight(line, "\r\n")
		if k, val, ok := bytes.Cut(line, []byte{':'}); ok && string(k) == field {
			return string(val)
		}
	}
	return ""
}

// isTLSPort reports whether the handshake's first reply failed as it does
// when the port speaks TLS: a TLS server takes our plain command for a
// broken record and closes the connection (reset, or end of file), or
// answers with a TLS alert, which is no RESP.
func isTLSPort(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, resp.ErrProtocol)
}
