// Package redlockotel reports Volley's locks to OpenTelemetry, as metrics
// and traces, through redlock.Hooks. It is its own module, so that the
// library pulls in no telemetry dependency.
//
//	hooks, err := redlockotel.Hooks() // the global meter and tracer providers
//	...
//	c, err := redlock.New(ctx, redlock.Config{Addrs: addrs, Hooks: hooks})
//
// # Metrics
//
//   - redlock.operation.duration (histogram, s): every Lock, TryLock,
//     Extend, Unlock and Do, by redlock.operation (lock, extend, unlock,
//     do) and redlock.outcome (ok, not_acquired, not_held, no_quorum,
//     extend_failed, unlock_failed, canceled, error). A contended lock
//     shows as not_acquired, one that too few masters could vote on (an
//     outage) as no_quorum, and Lock's duration includes its waits.
//   - redlock.master.duration (histogram, s): each master's answer that
//     was in when the operation was decided, by redlock.operation,
//     server.address and redlock.master.outcome (ok, taken, timeout,
//     connection error, ...). Operations return at their decision, so
//     answers that come after it are not recorded: on three healthy
//     masters a Lock usually records two.
//   - redlock.lock.held (up-down counter): locks held by this client now.
//   - redlock.lock.hold.duration (histogram, s): how long each lock was
//     held, to its release or loss.
//   - redlock.lock.waiting (up-down counter): Lock calls waiting now.
//   - redlock.lock.extensions and redlock.lock.lost (counters).
//
// # Traces
//
// A span per Lock, TryLock, Extend, Unlock and Do (named redlock.lock,
// redlock.extend, redlock.unlock, redlock.do; Do's calls nest under Do's
// span), with redlock.operation, redlock.outcome and redlock.attempts, an
// event per master (server.address, redlock.master.outcome,
// redlock.master.latency_ms), and an error status for outcomes other than
// ok and not_acquired. The lock's key is an attribute (redlock.key) only
// with WithKeyAttribute: keys can be sensitive, and many.
//
// # Concurrency
//
// The Hooks are safe for concurrent use, as redlock requires. Each call
// allocates (a span and its attributes); with the hooks unset, a lock
// costs nothing extra.
package redlockotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/volleylock/volley/redlock"
)

// scope is the instrumentation scope name of the meter and the tracer.
const scope = "github.com/volleylock/volley/redlockotel"

// Option configures Hooks.
type Option func(*options)

type options struct {
	mp      metric.MeterProvider
	tp      trace.TracerProvider
	withKey bool
}

// WithMeterProvider sets the meter provider (default: otel's global one).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(o *options) { o.mp = mp } }

// WithTracerProvider sets the tracer provider (default: otel's global one).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(o *options) { o.tp = tp } }

// WithKeyAttribute adds the lock's key to spans as redlock.key.
func WithKeyAttribute() Option { return func(o *options) { o.withKey = true } }

// instruments are the metrics the hooks record.
type instruments struct {
	opDuration, masterDuration, holdDuration metric.Float64Histogram
	held, waiting                            metric.Int64UpDownCounter
	extensions, lost                         metric.Int64Counter
}

// Hooks returns redlock.Hooks that record the metrics and spans of the
// package documentation. It fails only if an instrument cannot be created.
func Hooks(opts ...Option) (redlock.Hooks, error) {
	o := options{mp: otel.GetMeterProvider(), tp: otel.GetTracerProvider()}
	for _, opt := range opts {
		opt(&o)
	}
	m := o.mp.Meter(scope)
	var in instruments
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	in.opDuration, err = m.Float64Histogram("redlock.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of Lock, TryLock, Extend, Unlock and Do calls, waits included."))
	add(err)
	in.masterDuration, err = m.Float64Histogram("redlock.master.duration", metric.WithUnit("s"),
		metric.WithDescription("Latency of each master's part in an operation."))
	add(err)
	in.holdDuration, err = m.Float64Histogram("redlock.lock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("How long each lock was held, to its release or loss."))
	add(err)
	in.held, err = m.Int64UpDownCounter("redlock.lock.held", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks held by this client."))
	add(err)
	in.waiting, err = m.Int64UpDownCounter("redlock.lock.waiting", metric.WithUnit("{call}"),
		metric.WithDescription("Lock calls waiting for a lock."))
	add(err)
	in.extensions, err = m.Int64Counter("redlock.lock.extensions", metric.WithUnit("{extension}"),
		metric.WithDescription("Successful extensions."))
	add(err)
	in.lost, err = m.Int64Counter("redlock.lock.lost", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks found lost by Extend or Do."))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return redlock.Hooks{}, err
	}
	h := &hooks{in: in, tracer: o.tp.Tracer(scope), withKey: o.withKey}
	return redlock.Hooks{Master: h.master, Event: h.event, Call: h.call, Held: h.heldFor}, nil
}

type hooks struct {
	in      instruments
	tracer  trace.Tracer
	withKey bool
}

var spanNames = map[redlock.Op]string{
	redlock.OpLock: "redlock.lock", redlock.OpExtend: "redlock.extend",
	redlock.OpUnlock: "redlock.unlock", redlock.OpDo: "redlock.do",
}

func (h *hooks) call(ctx context.Context, op redlock.Op, key string) (context.Context, func(redlock.CallEnd)) {
	attrs := []attribute.KeyValue{attribute.String("redlock.operation", op.String())}
	if h.withKey {
		attrs = append(attrs, attribute.String("redlock.key", key))
	}
	ctx, span := h.tracer.Start(ctx, spanNames[op], trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if op == redlock.OpLock {
		h.in.waiting.Add(ctx, 1)
	}
	return ctx, func(e redlock.CallEnd) {
		outcome := redlock.ResultOf(e.Err)
		if op == redlock.OpLock {
			h.in.waiting.Add(ctx, -1)
		}
		h.in.opDuration.Record(ctx, e.Took.Seconds(), metric.WithAttributes(
			attribute.String("redlock.operation", op.String()), attribute.String("redlock.outcome", outcome)))
		for _, n := range e.Masters {
			if n.Outcome == redlock.OutcomeNone {
				continue
			}
			span.AddEvent("redlock.master", trace.WithAttributes(
				attribute.String("server.address", n.Addr),
				attribute.String("redlock.master.outcome", n.Outcome.String()),
				attribute.Float64("redlock.master.latency_ms", float64(n.Latency)/float64(time.Millisecond))))
		}
		span.SetAttributes(attribute.String("redlock.outcome", outcome), attribute.Int("redlock.attempts", e.Attempts))
		if outcome != "ok" && outcome != "not_acquired" {
			span.SetStatus(codes.Error, e.Err.Error())
		}
		span.End()
	}
}

func (h *hooks) master(op redlock.Op, addr string, outcome redlock.Outcome, latency time.Duration) {
	if outcome == redlock.OutcomeNone {
		return // not awaited: no latency to tell
	}
	h.in.masterDuration.Record(context.Background(), latency.Seconds(), metric.WithAttributes(
		attribute.String("redlock.operation", op.String()),
		attribute.String("server.address", addr),
		attribute.String("redlock.master.outcome", outcome.String())))
}

func (h *hooks) event(ev redlock.Event, _ string) {
	ctx := context.Background()
	switch ev {
	case redlock.EventAcquired:
		h.in.held.Add(ctx, 1)
	case redlock.EventExtended:
		h.in.extensions.Add(ctx, 1)
	case redlock.EventLost:
		h.in.lost.Add(ctx, 1)
	}
}

func (h *hooks) heldFor(_ string, d time.Duration) {
	ctx := context.Background()
	h.in.held.Add(ctx, -1)
	h.in.holdDuration.Record(ctx, d.Seconds())
}
