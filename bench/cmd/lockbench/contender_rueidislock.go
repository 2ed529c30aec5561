package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

const nameRueidislock = "rueidislock"

// rueidisLock is rueidislock with KeyMajority = N/2+1, so that a lock is
// N = 2*KeyMajority-1 keys of which a majority must be taken. rueidislock
// puts every key on the one rueidis.Client it builds; to give it N
// independent masters, its ClientBuilder here returns a router that sends
// key number i ("prefix:i:name") to master i. With an even N, or one master,
// it falls back to the first master for every key.
type rueidisLock struct {
	lk   rueidislock.Locker
	note string
}

const rueidisPrefix = "rueidislock"

func newRueidislock(s Setup) (Contender, error) {
	n := len(s.Addrs)
	majority := int32(n/2 + 1)
	routed := n > 1 && n%2 == 1
	note := "KeyMajority " + strconv.Itoa(int(majority)) + " of " + strconv.Itoa(n) + " keys, key i routed to master i by the bench"
	if !routed {
		majority = 1
		note = "one key on the first master"
	}
	if s.Fake {
		note += "; no client-side caching (fake masters)"
	}
	tryNext := s.MasterTimeout
	if s.Defaults {
		tryNext = 0 // rueidislock's default
		note += "; defaults: TryNextAfter 20ms; no retry delay to set: a waiter retries on the key's invalidation, or every TryNextAfter without client-side caching"
	}
	opt := rueidislock.LockerOption{
		KeyPrefix:    rueidisPrefix,
		KeyValidity:  s.TTL,
		TryNextAfter: tryNext,
		KeyMajority:  majority,
		ClientOption: rueidis.ClientOption{
			InitAddress:  []string{s.Addrs[0]},
			DisableCache: s.Fake,
		},
	}
	opt.ClientBuilder = func(o rueidis.ClientOption) (rueidis.Client, error) {
		if !routed {
			return rueidis.NewClient(o)
		}
		r := &rueidisRouter{}
		for _, a := range s.Addrs {
			oo := o
			oo.InitAddress = []string{a}
			c, err := rueidis.NewClient(oo)
			if err != nil {
				for _, c := range r.nodes {
					c.Close()
				}
				return nil, err
			}
			r.nodes = append(r.nodes, c)
		}
		r.Client = r.nodes[0]
		return r, nil
	}
	lk, err := rueidislock.NewLocker(opt)
	if err != nil {
		return nil, err
	}
	return &rueidisLock{lk: lk, note: note}, nil
}

func (r *rueidisLock) Name() string { return nameRueidislock }
func (r *rueidisLock) Note() string { return r.note }

// LockUnlock ignores ttl: rueidislock takes it once, as KeyValidity (the
// harness uses one TTL throughout).
func (r *rueidisLock) LockUnlock(ctx context.Context, key string, _ time.Duration) error {
	_, cancel, err := r.lk.WithContext(ctx, key)
	if err != nil {
		return err
	}
	cancel() // releases every key, and waits for it
	return nil
}

func (r *rueidisLock) NewHolder() Holder { return &rueidisHolder{lk: r.lk} }

func (r *rueidisLock) Close() error {
	r.lk.Close()
	return nil
}

type rueidisHolder struct {
	lk     rueidislock.Locker
	cancel context.CancelFunc
}

func (h *rueidisHolder) Lock(ctx context.Context, key string, _ time.Duration) error {
	_, cancel, err := h.lk.WithContext(ctx, key)
	if err != nil {
		return err
	}
	h.cancel = cancel
	return nil
}

func (h *rueidisHolder) Unlock(context.Context) error {
	if h.cancel == nil {
		return errors.New("rueidislock: not held")
	}
	h.cancel()
	h.cancel = nil
	return nil
}

// rueidisRouter is a rueidis.Client over several independent masters: a
// command whose key is rueidislock's key number i goes to master i; any
// other command goes to the first master (the embedded Client).
type rueidisRouter struct {
	rueidis.Client
	nodes []rueidis.Client
}

// pick returns the master of a rueidislock command: SET/GET key, or
// EVAL/EVALSHA script 1 key.
func (r *rueidisRouter) pick(args []string) rueidis.Client {
	key := ""
	switch {
	case len(args) >= 4 && (strings.EqualFold(args[0], "EVALSHA") || strings.EqualFold(args[0], "EVAL")):
		key = args[3]
	case len(args) >= 2:
		key = args[1]
	}
	rest, ok := strings.CutPrefix(key, rueidisPrefix+":")
	if !ok {
		return r.Client
	}
	num, _, ok := strings.Cut(rest, ":")
	if !ok {
		return r.Client
	}
	i, err := strconv.Atoi(num)
	if err != nil || i < 0 || i >= len(r.nodes) {
		return r.Client
	}
	return r.nodes[i]
}

func (r *rueidisRouter) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	return r.pick(cmd.Commands()).Do(ctx, cmd)
}

func (r *rueidisRouter) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	return r.pick(cmd.Commands()).DoCache(ctx, cmd, ttl)
}

func (r *rueidisRouter) Close() {
	for _, c := range r.nodes {
		c.Close()
	}
}
