// Package redlockprom reports Volley's locks to Prometheus through
// redlock.Hooks, for users who do not run OpenTelemetry. It is its own
// module, so that the library pulls in no telemetry dependency.
//
//	hooks, err := redlockprom.Hooks(prometheus.DefaultRegisterer)
//	...
//	c, err := redlock.New(ctx, redlock.Config{Addrs: addrs, Hooks: hooks})
//
// The metrics are those of the redlockotel package, named the Prometheus
// way:
//
//   - redlock_operation_duration_seconds (histogram) by operation (lock,
//     extend, unlock, do) and outcome (ok, not_acquired, not_held,
//     no_quorum, extend_failed, unlock_failed, canceled, error);
//   - redlock_master_duration_seconds (histogram) by operation, master and
//     outcome (ok, taken, timeout, connection error, ...): each master's
//     answer that was in when the operation was decided (answers after
//     it are not recorded: on three healthy masters a Lock usually
//     records two);
//   - redlock_locks_held (gauge), redlock_lock_hold_duration_seconds
//     (histogram), redlock_lock_waiting (gauge: Lock calls waiting now);
//   - redlock_lock_extensions_total and redlock_locks_lost_total.
//
// The hooks are safe for concurrent use. Registering twice on one
// Registerer fails (as client_golang does for any collector): make one set
// of hooks per process and share it between Clients.
package redlockprom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/volleylock/volley/redlock"
)

// buckets span a lock's life: from a fraction of a millisecond (one round
// trip) to tens of seconds (a contended wait, a long hold).
var buckets = prometheus.ExponentialBuckets(0.0001, 4, 12)

type hooks struct {
	opDuration, masterDuration *prometheus.HistogramVec
	holdDuration               prometheus.Histogram
	held, waiting              prometheus.Gauge
	extensions, lost           prometheus.Counter
}

// Hooks registers the metrics on reg and returns the hooks that update
// them.
func Hooks(reg prometheus.Registerer) (redlock.Hooks, error) {
	h := &hooks{
		opDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "redlock_operation_duration_seconds", Buckets: buckets,
			Help: "Duration of Lock, TryLock, Extend, Unlock and Do calls, waits included.",
		}, []string{"operation", "outcome"}),
		masterDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "redlock_master_duration_seconds", Buckets: buckets,
			Help: "Latency of each master's part in an operation.",
		}, []string{"operation", "master", "outcome"}),
		holdDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "redlock_lock_hold_duration_seconds", Buckets: buckets,
			Help: "How long each lock was held, to its release or loss.",
		}),
		held:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "redlock_locks_held", Help: "Locks held by this process."}),
		waiting:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "redlock_lock_waiting", Help: "Lock calls waiting for a lock."}),
		extensions: prometheus.NewCounter(prometheus.CounterOpts{Name: "redlock_lock_extensions_total", Help: "Successful extensions."}),
		lost:       prometheus.NewCounter(prometheus.CounterOpts{Name: "redlock_locks_lost_total", Help: "Locks found lost by Extend or Do."}),
	}
	for _, c := range []prometheus.Collector{h.opDuration, h.masterDuration, h.holdDuration, h.held, h.waiting, h.extensions, h.lost} {
		if err := reg.Register(c); err != nil {
			return redlock.Hooks{}, err
		}
	}
	return redlock.Hooks{Master: h.master, Event: h.event, Call: h.call, Held: h.heldFor}, nil
}

func (h *hooks) call(ctx context.Context, op redlock.Op, _ string) (context.Context, func(redlock.CallEnd)) {
	if op == redlock.OpLock {
		h.waiting.Inc()
	}
	return ctx, func(e redlock.CallEnd) {
		if op == redlock.OpLock {
			h.waiting.Dec()
		}
		h.opDuration.WithLabelValues(op.String(), redlock.ResultOf(e.Err)).Observe(e.Took.Seconds())
	}
}

func (h *hooks) master(op redlock.Op, addr string, outcome redlock.Outcome, latency time.Duration) {
	if outcome == redlock.OutcomeNone {
		return // not awaited: no latency to tell
	}
	h.masterDuration.WithLabelValues(op.String(), addr, outcome.String()).Observe(latency.Seconds())
}

func (h *hooks) event(ev redlock.Event, _ string) {
	switch ev {
	case redlock.EventAcquired:
		h.held.Inc()
	case redlock.EventExtended:
		h.extensions.Inc()
	case redlock.EventLost:
		h.lost.Inc()
	}
}

func (h *hooks) heldFor(_ string, d time.Duration) {
	h.held.Dec()
	h.holdDuration.Observe(d.Seconds())
}
