package main

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/redlock"
)

// The native mode measures what Volley's native compare-and-set commands
// (redlock.Config.DisableNativeCommands) save the masters: the masters'
// CPU per Lock+Unlock (a waiting Lock: Client.Lock) and per Extend, with
// the native commands (volley) and with the Lua scripts (volley-lua), on
// the run's masters, interleaved round by round; and Lock+Unlock
// throughput (and the masters' CPU) at nativeThroughputG goroutines of
// both, next to floor-pipelined on the same masters (whose release is an
// EVALSHA of the plain compare-and-delete script, without a wake-up). The masters' CPU is theirs from
// INFO cpu (used_cpu_sys + used_cpu_user, every thread) and the time their
// commands took from INFO commandstats (the commands the client sends, not
// a script's inner calls), each summed over the masters and divided by the
// operations of the window. On a server without the native commands both
// rows run the scripts.

const (
	modeNative        = "native"
	nameVolleyLua     = "volley-lua"
	nativeG           = 16  // goroutines of the CPU rows
	nativeThroughputG = 256 // goroutines of the throughput rows
)

// NativeResult is one row of the native mode.
type NativeResult struct {
	Name       string  `json:"name"`
	Op         string  `json:"op"` // "lock+unlock", "extend", or "throughput"
	Goroutines int     `json:"goroutines"`
	OpsPerSec  float64 `json:"ops_per_sec"`
	// MasterCPUUs is the masters' CPU (INFO cpu) per operation, summed
	// over the masters; CommandUs the time their commands took (INFO
	// commandstats usec) per operation. -1: not measured.
	MasterCPUUs float64   `json:"master_cpu_us"`
	CommandUs   float64   `json:"command_us"`
	Rounds      []float64 `json:"rounds_master_cpu_us,omitempty"`
	Errors      int       `json:"errors"`
	Server      string    `json:"server"` // the masters' server and version
}

// masterCounters is the masters' CPU and command time, summed.
type masterCounters struct {
	cpuUs, cmdUs float64
	ok           bool
}

// topLevel are the commands a Volley client sends for a Lock+Unlock or an
// Extend; the inner calls of a script are left out of commandstats' sum.
var topLevel = []string{"set", "eval", "evalsha", "delifeq", "delex", "spublish"}

// readMasters sums INFO cpu and INFO commandstats over addrs. The
// SPUBLISH a script makes is counted in commandstats too, so it is
// counted only for the native row (withPublish).
func readMasters(addrs []string, withPublish bool) masterCounters {
	var m masterCounters
	for _, a := range addrs {
		cpu, err := redistest.Do(a, "INFO", "cpu")
		if err != nil {
			return masterCounters{}
		}
		info, err := redistest.Do(a, "INFO", "commandstats")
		if err != nil {
			return masterCounters{}
		}
		fields := infoFields(string(cpu[0].Bytes))
		for _, k := range []string{"used_cpu_sys", "used_cpu_user"} {
			if v, ok := fields[k]; ok {
				f, _ := strconv.ParseFloat(v, 64)
				m.cpuUs += f * 1e6
			}
		}
		stats, err := commandStats(string(info[0].Bytes))
		if err != nil {
			return masterCounters{}
		}
		for name, st := range stats {
			if slices.Contains(topLevel, name) && (name != "spublish" || withPublish) {
				m.cmdUs += st.Usec
			}
		}
	}
	m.ok = true
	return m
}

// serverOf returns the server and version of the master at addr.
func serverOf(addr string) string {
	vals, err := redistest.Do(addr, "INFO", "server")
	if err != nil {
		return "unknown"
	}
	kind, version := redistest.Identity(string(vals[0].Bytes))
	return kind + " " + version
}

// nativeCase is one row's client.
type nativeCase struct {
	name string
	c    *redlock.Client
	lua  bool
}

func (n nativeCase) Name() string { return n.name }

// native runs the native mode.
func (r *Runner) native(ctx context.Context) error {
	s := r.opts.Setup
	if r.masters.Kind == kindFake {
		r.skip(nameVolleyLua, "native mode: the masters' CPU is measured on real servers only")
		return nil
	}
	server := serverOf(s.Addrs[0])
	var cases []nativeCase
	for _, lua := range []bool{false, true} {
		c, err := redlock.New(ctx, redlock.Config{
			Addrs: s.Addrs, MaxTTL: max(s.TTL, 30*time.Second), DisableRestartGuard: true,
			MasterTimeout: s.MasterTimeout, Tries: s.Tries, RetryDelay: s.RetryDelay,
			DisableNativeCommands: lua,
		})
		if err != nil {
			return err
		}
		defer c.Close()
		name := nameVolley
		if lua {
			name = nameVolleyLua
		}
		cases = append(cases, nativeCase{name: name, c: c, lua: lua})
	}
	for _, op := range []string{"lock+unlock", "extend"} {
		r.progress.phase("native %s: %d rounds x %d clients x %v, G=%d, masters' CPU", op, r.opts.Rounds, len(cases), r.opts.Duration, nativeG)
		cpu, cmd, ops := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
		errs := map[string]int{}
		err := eachRound(ctx, r, "native "+op, cases, func(round int, nc nativeCase) error {
			prefix := "lb:" + r.run + ":" + nc.name + ":native:" + op + ":" + strconv.Itoa(round) + ":"
			before := readMasters(s.Addrs, !nc.lua)
			n, e, el := nativeLoad(ctx, nc.c, op, prefix, nativeG, s.TTL, r.opts.Duration)
			after := readMasters(s.Addrs, !nc.lua)
			errs[nc.name] += int(e)
			if n > 0 {
				ops[nc.name] = append(ops[nc.name], float64(n)/el.Seconds())
			}
			if n > 0 && before.ok && after.ok {
				cpu[nc.name] = append(cpu[nc.name], (after.cpuUs-before.cpuUs)/float64(n))
				cmd[nc.name] = append(cmd[nc.name], (after.cmdUs-before.cmdUs)/float64(n))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, nc := range cases {
			res := NativeResult{Name: nc.name, Op: op, Goroutines: nativeG, MasterCPUUs: -1, CommandUs: -1, Errors: errs[nc.name], Server: server}
			if len(ops[nc.name]) > 0 {
				res.OpsPerSec = median(ops[nc.name])
			}
			if len(cpu[nc.name]) > 0 {
				res.MasterCPUUs, res.CommandUs, res.Rounds = median(cpu[nc.name]), median(cmd[nc.name]), cpu[nc.name]
			}
			r.report.Native = append(r.report.Native, res)
		}
	}

	// Throughput at nativeThroughputG, against floor-pipelined.
	var floor pipeliner
	for _, d := range r.opts.Contenders {
		if d.name == nameFloor {
			if c, err := d.new(s); err == nil {
				defer c.Close()
				floor, _ = c.(pipeliner)
			}
		}
	}
	var tcases []tcase
	for i := range cases {
		tcases = append(tcases, tcase{name: cases[i].name, nc: &cases[i]})
	}
	if floor != nil {
		tcases = append(tcases, tcase{name: nameFloorPipelined})
	}
	r.progress.phase("native throughput: %d rounds x %d rows x %v, G=%d", r.opts.Rounds, len(tcases), r.opts.Duration, nativeThroughputG)
	ops, cpu, cmd, errs := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}, map[string]int{}
	err := eachRound(ctx, r, "native throughput", tcases, func(round int, tc tcase) error {
		prefix := "lb:" + r.run + ":" + tc.name + ":native:tp:" + strconv.Itoa(round) + ":"
		native := tc.nc != nil && !tc.nc.lua
		before := readMasters(s.Addrs, native)
		var n, e int64
		var el time.Duration
		if tc.nc == nil {
			var err error
			if n, e, el, err = floor.Pipelined(ctx, prefix, s.TTL, r.opts.Duration); err != nil {
				r.skip(nameFloorPipelined, err.Error())
				return nil
			}
		} else {
			n, e, el = nativeLoad(ctx, tc.nc.c, "lock+unlock", prefix, nativeThroughputG, s.TTL, r.opts.Duration)
		}
		after := readMasters(s.Addrs, native)
		ops[tc.name] = append(ops[tc.name], float64(n)/el.Seconds())
		if n > 0 && before.ok && after.ok {
			cpu[tc.name] = append(cpu[tc.name], (after.cpuUs-before.cpuUs)/float64(n))
			cmd[tc.name] = append(cmd[tc.name], (after.cmdUs-before.cmdUs)/float64(n))
		}
		errs[tc.name] += int(e)
		return nil
	})
	if err != nil {
		return err
	}
	for _, tc := range tcases {
		if len(ops[tc.name]) == 0 {
			continue
		}
		res := NativeResult{
			Name: tc.name, Op: "throughput", Goroutines: nativeThroughputG, OpsPerSec: median(ops[tc.name]),
			MasterCPUUs: -1, CommandUs: -1, Errors: errs[tc.name], Server: server,
		}
		if len(cpu[tc.name]) > 0 {
			res.MasterCPUUs, res.CommandUs, res.Rounds = median(cpu[tc.name]), median(cmd[tc.name]), cpu[tc.name]
		}
		r.report.Native = append(r.report.Native, res)
	}
	return nil
}

// tcase is a throughput row's: a client, or floor-pipelined (nc nil).
type tcase struct {
	name string
	nc   *nativeCase
}

func (t tcase) Name() string { return t.name }

// nativeLoad runs g goroutines for d, each on keys of its own that start
// with prefix: Lock+Unlock of a new key each time (op "lock+unlock"), or
// Extend of one lock it holds (op "extend"). It returns the operations
// done, those that failed, and the time taken.
func nativeLoad(ctx context.Context, c *redlock.Client, op, prefix string, g int, ttl, d time.Duration) (n, errs int64, elapsed time.Duration) {
	var nOps, nErrs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i := range g {
		wg.Go(func() {
			key := prefix + strconv.Itoa(i)
			var held redlock.Lock
			if op == "extend" {
				var err error
				if held, err = c.Lock(ctx, key, ttl); err != nil {
					nErrs.Add(1)
					return
				}
				defer held.Unlock(context.Background())
			}
			for j := 0; time.Now().Before(deadline) && ctx.Err() == nil; j++ {
				var err error
				if op == "extend" {
					err = held.Extend(ctx, ttl)
				} else {
					var l redlock.Lock
					if l, err = c.Lock(ctx, key+":"+strconv.Itoa(j%64), ttl); err == nil {
						err = l.Unlock(ctx)
					}
				}
				if err != nil {
					nErrs.Add(1)
					continue
				}
				nOps.Add(1)
			}
		})
	}
	wg.Wait()
	return nOps.Load(), nErrs.Load(), time.Since(start)
}
