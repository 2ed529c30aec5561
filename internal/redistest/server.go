package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNoRedisServer is returned when no redis-server binary can be found.
// Its text says how to install one.
var ErrNoRedisServer = errors.New("redistest: redis-server not found in PATH; " +
	"install it (Debian/Ubuntu: apt-get install -y redis-server) or run `make test`, which installs it")

// Options configure one redis-server process. The zero value is a plain,
// persistence-free master.
type Options struct {
	// Binary is the redis-server to run. Empty means "redis-server" from PATH,
	// or $REDIS_SERVER when set.
	Binary string
	// Args are extra configuration arguments, e.g. {"--requirepass", "s3cret"}.
	Args []string
	// StartTimeout bounds how long Start waits for the server to accept
	// connections. Zero means 10 seconds.
	StartTimeout time.Duration
	// Cluster starts the server as a Redis Cluster node (cluster-enabled,
	// its nodes.conf in its directory, its cluster bus on a free port of
	// its own, a node timeout of ClusterNodeTimeout, default 1s). See
	// StartCluster.
	Cluster            bool
	ClusterNodeTimeout time.Duration
}

// Server is one redis-server process listening on 127.0.0.1 on a port
// chosen when it started. Its methods are safe for concurrent use. The
// process is owned by the Server: Stop (or the test cleanup registered by
// Start) kills it; nothing else does.
type Server struct {
	opts Options
	bin  string
	dir  string // working directory: log file and dump file
	port int
	bus  int // the cluster bus port, for Options.Cluster
	// conf is the path of a Sentinel configuration file, which the
	// process gets as its first argument, with --sentinel: set for the
	// sentinels of a SentinelGroup, empty for every other server.
	conf string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
	paused bool
}

// StartServer starts a redis-server on a free 127.0.0.1 port in its own
// temporary directory, and waits until it accepts connections. The caller owns
// the Server and must call Stop.
func StartServer(opts Options) (*Server, error) { return startServer(opts, "") }

// startServer starts a server as StartServer does; with sentinelConf not
// empty, a Sentinel whose configuration file (in its directory, which
// the Sentinel rewrites) starts as sentinelConf.
func startServer(opts Options, sentinelConf string) (*Server, error) {
	bin, err := findBinary(opts.Binary)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "volley-redis-*")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	s := &Server{opts: opts, bin: bin, dir: dir}
	if sentinelConf != "" {
		s.conf = filepath.Join(dir, "sentinel.conf")
		if err := os.WriteFile(s.conf, []byte(sentinelConf), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("redistest: %w", err)
		}
	}
	// A free port can be taken by someone else between our probe and the
	// server's bind; try a few ports before giving up.
	for attempt := 0; ; attempt++ {
		s.bus = 0
		s.port, err = freePort()
		if err == nil {
			err = s.start()
		}
		if err == nil {
			return s, nil
		}
		if attempt == 4 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

func findBinary(bin string) (string, error) {
	if bin == "" {
		bin = os.Getenv("REDIS_SERVER")
	}
	if bin == "" {
		bin = "redis-server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("%w (looked for %s)", ErrNoRedisServer, bin)
	}
	return path, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redistest: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Addr returns "127.0.0.1:port". The port stays the same across Restart.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Dir returns the server's working directory (log and dump files).
func (s *Server) Dir() string { return s.dir }

// LogPath returns the path of the server's log file.
func (s *Server) LogPath() string { return filepath.Join(s.dir, "redis.log") }

// start launches the process and waits until it accepts connections.
// Callers hold no lock; start takes s.mu itself.
func (s *Server) start() error {
	var args []string
	if s.conf != "" {
		args = append(args, s.conf, "--sentinel")
	}
	args = append(args,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--dbfilename", "dump.rdb",
		"--logfile", s.LogPath(),
		"--daemonize", "no",
		"--protected-mode", "no",
		// A replica's first sync starts at once, not after the default
		// 5s wait for more replicas to share it.
		"--repl-diskless-sync-delay", "0",
		// A primary pings its replicas every second, not every 10s: the
		// ping moves the replication offset, and a cluster node whose
		// offset is 0 counts as loading (absent from CLUSTER SLOTS).
		"--repl-ping-replica-period", "1",
	)
	if s.opts.Cluster {
		if s.bus == 0 { // a restarted node keeps its bus port, as its peers know it
			bus, err := freePort()
			if err != nil {
				return err
			}
			s.bus = bus
		}
		timeout := s.opts.ClusterNodeTimeout
		if timeout <= 0 {
			timeout = time.Second
		}
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(s.bus), "--cluster-node-timeout", strconv.FormatInt(timeout.Milliseconds(), 10))
	}
	args = append(args, s.opts.Args...)
	cmd := exec.Command(s.bin, args...)
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: starting %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() { // owned by the process: ends when it exits
		cmd.Wait()
		close(exited)
	}()

	timeout := s.opts.StartTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		pid, err := s.processID()
		if err == nil {
			if pid != cmd.Process.Pid {
				// Another server holds the port (a port picked free at the
				// same moment by a concurrent start, in this process or
				// another): ours cannot bind it. Using that one would
				// give two Servers one process, a master counted twice.
				cmd.Process.Kill()
				<-exited
				return fmt.Errorf("redistest: port %d is another server's (pid %d, ours %d)", s.port, pid, cmd.Process.Pid)
			}
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("redistest: redis-server on port %d exited at start; log:\n%s", s.port, s.LogTail(20))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redistest: redis-server on port %d not accepting after %v; log:\n%s", s.port, timeout, s.LogTail(20))
		}
	}
	s.mu.Lock()
	s.cmd, s.exited, s.paused = cmd, exited, false
	s.mu.Unlock()
	return nil
}

// processID asks the server on s's port for its process_id (INFO
// server), authenticating first when Options.Args set --requirepass.
func (s *Server) processID() (int, error) {
	c, err := net.DialTimeout("tcp", s.Addr(), 100*time.Millisecond)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	var req strings.Builder
	for i, a := range s.opts.Args {
		if a == "--requirepass" && i+1 < len(s.opts.Args) {
			pw := s.opts.Args[i+1]
			fmt.Fprintf(&req, "*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(pw), pw)
		}
	}
	req.WriteString("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")
	if _, err := c.Write([]byte(req.String())); err != nil {
		return 0, err
	}
	rd := bufio.NewReader(c)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return 0, err
		}
		if strings.HasPrefix(line, "-") {
			return 0, fmt.Errorf("redistest: %s: %s", s.Addr(), strings.TrimSpace(line))
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
}

// Running reports whether the process is running (paused counts).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL and waits for the process to exit. Keys not saved are
// lost, as in a crash. Killing a stopped server is a no-op.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *Server) killLocked() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
	s.cmd, s.exited, s.paused = nil, nil, false
}

// Restart stops the server (SIGKILL, like a crash) and starts it again on the
// same port. With keepData the data set is saved first (SAVE) and loaded on
// start, like a restart with persistence; without it the server comes back
// empty, like a restart without persistence. Either way the new process has a
// new run_id and its uptime starts at zero.
func (s *Server) Restart(keepData bool) error {
	dump := filepath.Join(s.dir, "dump.rdb")
	if keepData {
		if err := s.Command("SAVE"); err != nil {
			return fmt.Errorf("redistest: restart: %w", err)
		}
	}
	s.Kill()
	if !keepData {
		if err := os.Remove(dump); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("redistest: restart: %w", err)
		}
	}
	return s.start()
}

// RestartFromSnapshot stops the server and starts it again on the same
// port from the RDB file at snapshot (a copy of Dir's dump.rdb taken with
// SAVE earlier): a restart that loads an old data set, as one from an old
// RDB or a truncated AOF does.
func (s *Server) RestartFromSnapshot(snapshot string) error {
	data, err := os.ReadFile(snapshot)
	if err != nil {
		return fmt.Errorf("redistest: restart: %w", err)
	}
	s.Kill()
	if err := os.WriteFile(filepath.Join(s.dir, "dump.rdb"), data, 0o600); err != nil {
		return fmt.Errorf("redistest: restart: %w", err)
	}
	return s.start()
}

// Pause stops the process (SIGSTOP): connections stay open, nothing is
// answered, keys do not expire while it is stopped. Resume undoes it. On
// systems without SIGSTOP (Windows) it returns ErrNoPause.
func (s *Server) Pause() error { return s.setPaused(true) }

// Resume continues a paused process (SIGCONT).
func (s *Server) Resume() error { return s.setPaused(false) }

// ErrNoPause is returned by Pause and Resume where processes cannot be
// stopped and continued.
var ErrNoPause = errors.New("redistest: pausing a process is not supported on this system")

func (s *Server) setPaused(paused bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redistest: server is not running")
	}
	if err := pauseProcess(s.cmd.Process, paused); err != nil {
		return err
	}
	s.paused = paused
	return nil
}

// Flush removes every key and every cached script (FLUSHALL, SCRIPT FLUSH).
func (s *Server) Flush() error {
	if err := s.Command("FLUSHALL"); err != nil {
		return err
	}
	return s.Command("SCRIPT", "FLUSH")
}

// Stop kills the process (resuming it first if paused) and removes its
// directory. It is safe to call more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	s.killLocked()
	s.mu.Unlock()
	os.RemoveAll(s.dir)
}

// Command sends one command on a fresh connection and expects a simple-string
// reply such as +OK; an error reply or any other reply is returned as an
// error. It is a small control channel for tests (SAVE, FLUSHALL, CONFIG SET),
// not a client: use the conn package for anything else.
func (s *Server) Command(args ...string) error {
	c, err := net.DialTimeout("tcp", s.Addr(), 2*time.Second)
	if err != nil {
		return fmt.Errorf("redistest: %s: %w", s.Addr(), err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return fmt.Errorf("redistest: %s: %w", s.Addr(), err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("redistest: %s: %s: %w", s.Addr(), args[0], err)
	}
	if !strings.HasPrefix(line, "+") {
		return fmt.Errorf("redistest: %s: %s: %s", s.Addr(), args[0], strings.TrimSpace(line))
	}
	return nil
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.LogPath())
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
