package redlockotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/volleylock/volley/internal/leakcheck"
	"github.com/volleylock/volley/internal/redistest"
	"github.com/volleylock/volley/redlock"
	"github.com/volleylock/volley/redlockotel"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

var bg = context.Background()

// telemetry is an in-memory metric reader and span recorder behind Hooks.
type telemetry struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	hooks  redlock.Hooks
}

func newTelemetry(t *testing.T, opts ...redlockotel.Option) *telemetry {
	t.Helper()
	tel := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	t.Cleanup(func() { mp.Shutdown(bg); tp.Shutdown(bg) })
	var err error
	tel.hooks, err = redlockotel.Hooks(append(opts, redlockotel.WithMeterProvider(mp), redlockotel.WithTracerProvider(tp))...)
	require.NoError(t, err)
	return tel
}

// metric returns the named metric of the last collection.
func (tel *telemetry) metric(t *testing.T, name string) metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(bg, &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m.Data
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// histCount is the count of a histogram's points whose attributes include
// every one of want.
func histCount(t *testing.T, data metricdata.Aggregation, want ...attribute.KeyValue) uint64 {
	t.Helper()
	h, ok := data.(metricdata.Histogram[float64])
	require.True(t, ok, "%T is not a float64 histogram", data)
	var n uint64
	for _, dp := range h.DataPoints {
		match := true
		for _, kv := range want {
			if v, ok := dp.Attributes.Value(kv.Key); !ok || v != kv.Value {
				match = false
			}
		}
		if match {
			n += dp.Count
		}
	}
	return n
}

func sumOf(t *testing.T, data metricdata.Aggregation) int64 {
	t.Helper()
	s, ok := data.(metricdata.Sum[int64])
	require.True(t, ok, "%T is not an int64 sum", data)
	var n int64
	for _, dp := range s.DataPoints {
		n += dp.Value
	}
	return n
}

// Against real masters: a contended lock, a lost lock and a master down,
// each visible in the metrics and the spans.
func TestMetricsAndSpans(t *testing.T) {
	tel := newTelemetry(t, redlockotel.WithKeyAttribute())
	servers := redistest.StartN(t, 3, redistest.Options{})
	c, err := redlock.New(bg, redlock.Config{
		Addrs: redistest.Addrs(servers), Hooks: tel.hooks, DisableRestartGuard: true,
		Conn: redlock.Connection{ReconnectMin: time.Millisecond, ReconnectMax: 10 * time.Millisecond},
	})
	require.NoError(t, err)
	defer c.Close()

	// Contended: the second attempt is refused.
	l, err := c.Lock(bg, "k", 10*time.Second)
	require.NoError(t, err)
	_, err = c.TryLock(bg, "k", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	op := attribute.String("redlock.operation", "lock")
	assert.Equal(t, uint64(1), histCount(t, tel.metric(t, "redlock.operation.duration"), op, attribute.String("redlock.outcome", "ok")))
	assert.Equal(t, uint64(1), histCount(t, tel.metric(t, "redlock.operation.duration"), op, attribute.String("redlock.outcome", "not_acquired")))
	assert.Equal(t, int64(1), sumOf(t, tel.metric(t, "redlock.lock.held")))

	// Lost: the keys vanish, the extension finds out.
	for _, s := range servers {
		require.NoError(t, s.Flush())
	}
	require.ErrorIs(t, l.Extend(bg, 10*time.Second), redlock.ErrNotHeld)
	assert.Equal(t, int64(1), sumOf(t, tel.metric(t, "redlock.lock.lost")))
	assert.Equal(t, int64(0), sumOf(t, tel.metric(t, "redlock.lock.held")))
	assert.Equal(t, uint64(1), histCount(t, tel.metric(t, "redlock.lock.hold.duration")))

	// A master down: locks still come, and its connection errors show.
	servers[0].Kill()
	l2, err := c.Lock(bg, "k2", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, l2.Unlock(bg))
	down := attribute.String("server.address", servers[0].Addr())
	assert.Positive(t, histCount(t, tel.metric(t, "redlock.master.duration"), down, attribute.String("redlock.master.outcome", "connection error")))

	// Spans: one per call, with the key, the outcome and the masters.
	spans := tel.spans.Ended()
	require.Len(t, spans, 5) // lock, trylock, extend, lock, unlock
	byName := map[string]int{}
	for _, s := range spans {
		byName[s.Name()]++
	}
	assert.Equal(t, map[string]int{"redlock.lock": 3, "redlock.extend": 1, "redlock.unlock": 1}, byName)
	extend := spans[2]
	assert.Equal(t, codes.Error, extend.Status().Code)
	assert.Contains(t, extend.Attributes(), attribute.String("redlock.outcome", "not_held"))
	assert.Contains(t, extend.Attributes(), attribute.String("redlock.key", "k"))
	assert.NotEmpty(t, extend.Events(), "no per-master events")
	assert.Equal(t, "redlock.master", extend.Events()[0].Name)
	refused := spans[1]
	assert.Equal(t, codes.Unset, refused.Status().Code, "contention is not an error")
}

// Do's span is the parent of its calls' spans; without WithKeyAttribute no
// span carries the key.
func TestDoSpanNestsItsCalls(t *testing.T) {
	tel := newTelemetry(t)
	servers := redistest.StartN(t, 3, redistest.Options{})
	c, err := redlock.New(bg, redlock.Config{Addrs: redistest.Addrs(servers), Hooks: tel.hooks, DisableRestartGuard: true})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Do(bg, "k", 10*time.Second, func(context.Context) error { return nil }))
	spans := tel.spans.Ended()
	require.Len(t, spans, 3) // lock, unlock, do
	do := spans[2]
	require.Equal(t, "redlock.do", do.Name())
	for _, s := range spans[:2] {
		assert.Equal(t, do.SpanContext().SpanID(), s.Parent().SpanID(), "%s is not under redlock.do", s.Name())
	}
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			assert.NotEqual(t, attribute.Key("redlock.key"), kv.Key)
		}
	}
}
