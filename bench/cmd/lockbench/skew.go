package main

import (
	"context"
	"errors"
	"time"
)

// Skew profiles: a latency added to each master's replies (toClient).
const (
	skewNone    = "none"
	skewOneSlow = "one-slow"
	skewSpread  = "spread"
)

// skewProfiles returns the delays of each profile for n masters: none (the
// proxies alone, the reference), one-slow (the last master +20ms) and
// spread (0.1, 0.2, 1, 5, 20 ms for five masters; a geometric spread from
// 0.1 to 20 ms otherwise).
func skewProfiles(n int) []SkewProfile {
	none := make([]time.Duration, n)
	slow := make([]time.Duration, n)
	slow[n-1] = 20 * time.Millisecond
	spread := make([]time.Duration, n)
	if n == 5 {
		copy(spread, []time.Duration{100 * time.Microsecond, 200 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond})
	} else {
		for i := range spread {
			f := 1.0
			if n > 1 {
				f = float64(i) / float64(n-1)
			}
			// 0.1ms * 200^f
			d := 0.1
			for range int(f * 100) {
				d *= 1.054406 // 200^(1/100)
			}
			spread[i] = time.Duration(d * float64(time.Millisecond))
		}
	}
	return []SkewProfile{{skewNone, none}, {skewOneSlow, slow}, {skewSpread, spread}}
}

// SkewProfile is a named set of per-master reply delays.
type SkewProfile struct {
	Name   string          `json:"name"`
	Delays []time.Duration `json:"delays_ns"`
}

// quorumDelay is the delay of the quorum's slowest member: the least a
// Redlock operation can cost under the profile.
func (p SkewProfile) quorumDelay() time.Duration {
	s := append([]time.Duration(nil), p.Delays...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// skew: every master behind a latency proxy; the latency mode's loop under
// each profile, interleaved.
func (r *Runner) skew(ctx context.Context) error {
	if r.opts.StartProxy == nil {
		return errors.New("lockbench: skew mode needs a proxy")
	}
	r.progress.phase("skew: starting %d proxies", len(r.masters.Addrs))
	proxies, closeProxies, err := r.startProxies()
	defer closeProxies()
	if err != nil {
		return err
	}
	s := r.opts.Setup
	s.Addrs = proxyAddrs(proxies)
	cs, err := r.connect(s, r.defsFor(modeSkew))
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	if len(r.report.Contenders) == 0 {
		for _, c := range cs {
			r.report.Contenders = append(r.report.Contenders, ContenderInfo{Name: c.Name(), Note: c.Note()})
		}
	}
	keys := map[string][]string{}
	for _, c := range cs {
		keys[c.Name()] = r.keyRing(c, modeSkew, 0, 8192)
	}
	profiles := skewProfiles(len(proxies))
	r.report.SkewProfiles = profiles
	rounds := map[string]map[string][]Latency{} // profile -> contender -> rounds
	errs := map[string]map[string]int{}
	for _, p := range profiles {
		rounds[p.Name] = map[string][]Latency{}
		errs[p.Name] = map[string]int{}
	}
	r.progress.phase("skew: %d profiles x %d rounds x %d contenders x %v", len(profiles), r.opts.Rounds, len(cs), r.opts.Duration)
	for round := range r.opts.Rounds {
		for _, p := range profiles {
			for i, px := range proxies {
				px.SetLatency(0, p.Delays[i])
			}
			for _, c := range order(cs, round) {
				if err := ctx.Err(); err != nil {
					return err
				}
				r.progress.step("skew %s round %d/%d: %s", p.Name, round+1, r.opts.Rounds, c.Name())
				warm(ctx, c, keys[c.Name()][:20], s.TTL)
				smp, e := latencySamples(ctx, c, keys[c.Name()], s.TTL, r.opts.Duration, nil)
				rounds[p.Name][c.Name()] = append(rounds[p.Name][c.Name()], summarize(smp))
				errs[p.Name][c.Name()] += e
			}
		}
	}
	for _, p := range profiles {
		for _, c := range cs {
			n := c.Name()
			r.report.Skew = append(r.report.Skew, SkewResult{
				Profile: p.Name, Name: n, Latency: medianLatency(rounds[p.Name][n]),
				QuorumDelayMs: ms(p.quorumDelay()), Errors: errs[p.Name][n],
			})
		}
	}
	return nil
}

// startProxies starts a fault proxy in front of every master. The returned
// function closes those started, also after an error.
func (r *Runner) startProxies() ([]faultProxy, func(), error) {
	var proxies []faultProxy
	closeAll := func() {
		for _, p := range proxies {
			p.Close()
		}
	}
	for _, a := range r.masters.Addrs {
		p, err := r.opts.StartProxy(a)
		if err != nil {
			return nil, closeAll, err
		}
		proxies = append(proxies, p)
	}
	return proxies, closeAll, nil
}

// proxyAddrs returns the proxies' addresses, what the contenders dial.
func proxyAddrs(proxies []faultProxy) []string {
	out := make([]string, len(proxies))
	for i, p := range proxies {
		out[i] = p.Addr()
	}
	return out
}
