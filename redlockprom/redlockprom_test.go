package redlockprom_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/volleylock/volley/internal/leakcheck"
	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/redlock"
	"github.com/volleylock/volley/redlockprom"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

var bg = context.Background()

// histCount returns how many observations the registry's histogram name
// holds under the labels (all of them, when labels is nil).
func histCount(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue metrics
				}
			}
			n += m.GetHistogram().GetSampleCount()
		}
	}
	return n
}

// Against real masters: a contended lock, a lost lock and a master down,
// each visible in what the registry gathers.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	hooks, err := redlockprom.Hooks(reg)
	require.NoError(t, err)
	_, err = redlockprom.Hooks(reg)
	require.Error(t, err, "registered twice")

	servers := redistest.StartN(t, 3, redistest.Options{})
	c, err := redlock.New(bg, redlock.Config{
		Addrs: redistest.Addrs(servers), Hooks: hooks, DisableRestartGuard: true,
		Conn: redlock.Connection{ReconnectMin: time.Millisecond, ReconnectMax: 10 * time.Millisecond},
	})
	require.NoError(t, err)
	defer c.Close()

	l, err := c.Lock(bg, "k", 10*time.Second)
	require.NoError(t, err)
	_, err = c.TryLock(bg, "k", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	assert.Equal(t, uint64(1), histCount(t, reg, "redlock_operation_duration_seconds", map[string]string{"operation": "lock", "outcome": "not_acquired"}))
	assert.Equal(t, 1.0, testutil.ToFloat64(gauge(t, reg, "redlock_locks_held")))

	for _, s := range servers {
		require.NoError(t, s.Flush())
	}
	require.ErrorIs(t, l.Extend(bg, 10*time.Second), redlock.ErrNotHeld)
	assert.Equal(t, 0.0, testutil.ToFloat64(gauge(t, reg, "redlock_locks_held")))
	assert.Equal(t, 1.0, testutil.ToFloat64(gauge(t, reg, "redlock_locks_lost_total")))
	assert.Equal(t, uint64(1), histCount(t, reg, "redlock_lock_hold_duration_seconds", nil))

	servers[0].Kill()
	l2, err := c.Lock(bg, "k2", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l2.Unlock(bg))
	assert.Positive(t, histCount(t, reg, "redlock_master_duration_seconds",
		map[string]string{"master": servers[0].Addr(), "outcome": "connection error"}))

	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems, "metric names and help texts follow Prometheus' conventions")
}

// gauge is a collector that gathers the registry's single-series metric
// name, for testutil.ToFloat64.
func gauge(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	return prometheus.CollectorFunc(func(ch chan<- prometheus.Metric) {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			m := mf.GetMetric()[0]
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, "copy", nil, nil), prometheus.GaugeValue, v)
		}
	})
}
