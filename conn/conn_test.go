package conn_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volleylock/volley/conn"
	"github.com/volleylock/volley/redlock/redlocktest"
	"github.com/volleylock/volley/resp"
)

// exported lists the exported methods and fields reachable from a value of
// type t: what a user of conn can call, aliases included.
func exported(t reflect.Type) []string {
	var names []string
	for i := range t.NumMethod() {
		names = append(names, t.Method(i).Name+"()")
	}
	if s := t; s.Kind() == reflect.Pointer && s.Elem().Kind() == reflect.Struct {
		for _, f := range reflect.VisibleFields(s.Elem()) {
			if f.IsExported() && len(f.Index) == 1 {
				names = append(names, f.Name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// TestPublicFaceIsOneConnection pins what conn's types offer, through
// their aliases too: a user's pipelined connection, and none of the fan-out
// machinery the redlock package runs on (Batch, Group, a Request's reply
// check and arrival time, SendWith, SendForget). A new export fails here
// until it is added on purpose.
func TestPublicFaceIsOneConnection(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want []string
	}{
		{&conn.Conn{}, []string{"Addr()", "Close()", "Do()", "Err()", "Info()", "ReplyLatency()", "Send()", "Wait()", "WaitReady()"}},
		{conn.NewRequest(), []string{"Abandon()", "Cmd", "Err()", "Release()", "ReplayUntil", "Reply()", "Tag"}},
		{&conn.ServerInfo{}, []string{"ConnectedAt", "Generation", "Mode", "Role", "RunID", "Server", "StartedAt()", "Uptime", "Version", "VersionAtLeast()"}},
		{&conn.Error{}, []string{"Addr", "ConnUsable()", "Err", "Error()", "Op", "Unwrap()"}},
	} {
		if got := exported(reflect.TypeOf(tc.v)); !slices.Equal(got, tc.want) {
			t.Errorf("%T offers %v, want %v", tc.v, got, tc.want)
		}
	}
}

// TestRequestRoundTripAndErrors runs the zero-allocation API against a
// master, then a cancelled wait and a closed Conn, whose errors are
// *conn.Error with the documented Op and cause.
func TestRequestRoundTripAndErrors(t *testing.T) {
	ms, err := redlocktest.Start(1)
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := conn.Dial(ctx, conn.Options{Addr: ms.Addrs()[0]})
	if err != nil {
		t.Fatal(err)
	}
	if info := c.Info(); info == nil || info.Generation != 1 {
		t.Fatalf("Info after Dial = %+v, want the first connect's", info)
	}

	r := conn.NewRequest()
	r.Cmd = resp.AppendCommand(r.Cmd[:0], "SET", "k", "v")
	c.Send(r, nil)
	if err := c.Wait(ctx, r); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if got := string(r.Reply()[0].Bytes); got != "OK" {
		t.Fatalf("SET's reply = %q, want OK", got)
	}

	// A wait whose context already ended gives the Request up: OpWait,
	// the connection usable.
	done, stop := context.WithCancel(ctx)
	stop()
	r.Cmd = resp.AppendCommand(r.Cmd[:0], "GET", "k")
	c.Send(r, nil)
	var ce *conn.Error
	if err := c.Wait(done, r); err == nil {
		r.Release() // it completed first: fine, and still ours
	} else if !errors.As(err, &ce) || ce.Op != conn.OpWait || !ce.ConnUsable() || !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a cancelled context: %v, want a usable OpWait *conn.Error wrapping context.Canceled", err)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(ctx, "GET", "k")
	if !errors.As(err, &ce) || ce.ConnUsable() || !errors.Is(err, conn.ErrClosed) {
		t.Fatalf("Do after Close: %v, want a sticky *conn.Error wrapping ErrClosed", err)
	}
}

// TestParseAddrKeepsBaseAndNeverEchoesThePassword: conn.ParseAddr is the
// connection code's, over conn.Options.
func TestParseAddrKeepsBaseAndNeverEchoesThePassword(t *testing.T) {
	base := conn.Options{ClientName: "svc", ReadTimeout: time.Second}
	o, err := conn.ParseAddr("rediss://u:s3cret@h.example:7001/2?protocol=3", base)
	if err != nil {
		t.Fatal(err)
	}
	if o.Addr != "h.example:7001" || o.TLS == nil || o.Username != "u" || o.Password != "s3cret" ||
		o.DB != 2 || o.Protocol != 3 || o.ClientName != "svc" || o.ReadTimeout != time.Second {
		t.Fatalf("ParseAddr = %+v", o)
	}
	_, err = conn.ParseAddr("redis://u:s3cret@h.example:notaport", base)
	if err == nil {
		t.Fatal("ParseAddr accepted a port that is not a number")
	}
	if s := err.Error(); strings.Contains(s, "s3cret") {
		t.Fatalf("ParseAddr's error repeats the password: %q", s)
	}
	if _, err := conn.New(conn.Options{Protocol: 4}); err == nil {
		t.Fatal("New accepted Protocol 4")
	}
}
