package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

// TestOpsHandler checks the probes before and after the receiver is ready:
// /-/healthy always 200, /-/ready and every other path 503 before, and
// after, /-/ready 200 and the other paths served by the routes.
func TestOpsHandler(t *testing.T) {
	o := &opsHandler{}
	routes := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	type probe struct {
		method, path string
		code         int
		body         string
	}
	for _, phase := range []struct {
		name   string
		ready  bool
		probes []probe
	}{
		{"starting", false, []probe{
			{"GET", "/-/healthy", 200, healthyText},
			{"HEAD", "/-/healthy", 200, ""},
			{"POST", "/-/healthy", 405, "Method Not Allowed\n"},
			{"GET", "/-/ready", 503, notReadyText},
			{"HEAD", "/-/ready", 503, notReadyText}, // as Prometheus; a server sends no body to a HEAD
			{"GET", "/metrics", 503, notReadyText},
			{"POST", "/api/v1/write", 503, notReadyText},
		}},
		{"ready", true, []probe{
			{"GET", "/-/healthy", 200, healthyText},
			{"GET", "/-/ready", 200, readyText},
			{"HEAD", "/-/ready", 200, ""},
			{"PUT", "/-/ready", 405, "Method Not Allowed\n"},
			{"GET", "/metrics", http.StatusTeapot, ""},
			{"POST", "/api/v1/write", http.StatusTeapot, ""},
		}},
	} {
		if phase.ready {
			o.setReady(routes)
		}
		for _, p := range phase.probes {
			t.Run(phase.name+"/"+p.method+" "+p.path, func(t *testing.T) {
				w := httptest.NewRecorder()
				o.ServeHTTP(w, httptest.NewRequest(p.method, p.path, nil))
				if w.Code != p.code || w.Body.String() != p.body {
					t.Errorf("%s %s = %d %q, want %d %q", p.method, p.path, w.Code, w.Body, p.code, p.body)
				}
			})
		}
	}
}

// TestServeProbes runs serve without -data-dir and checks that it says
// its data is temporary, and that /-/ready and /-/healthy answer 200 once
// it has printed its address.
func TestServeProbes(t *testing.T) {
	check := emptyTempDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, done := make(lineWriter, 4), make(chan error, 1)
	go func() { done <- serve(ctx, out, serveConfig("tsdb")) }()
	var addr string
	select {
	case line := <-out:
		m := listenLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("serve printed %q, want the address", line)
		}
		addr = m[1]
	case err := <-done:
		t.Fatalf("serve() = %v before it listened", err)
	case <-time.After(time.Minute):
		t.Fatal("serve did not listen within a minute")
	}
	select {
	case line := <-out:
		if line != temporaryDataText {
			t.Errorf("serve's second line = %q, want %q", line, temporaryDataText)
		}
	case <-time.After(time.Minute):
		t.Error("serve did not say that its data is temporary")
	}
	for _, p := range []struct{ path, body string }{{"/-/ready", readyText}, {"/-/healthy", healthyText}} {
		resp, err := http.Get("http://" + addr + p.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != p.body {
			t.Errorf("GET %s = %d %q, want 200 %q", p.path, resp.StatusCode, b, p.body)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve() = %v after ctx was done, want nil", err)
	}
	check()
}

func TestByteSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"0", 0, false},
		{"1B", 1, false},
		{"512MB", 512 << 20, false},
		{"1KB", 1024, false},
		{"3GB", 3 << 30, false},
		{"2TB", 2 << 40, false},
		{"7EB", 7 << 60, false},
		{"8EB", 0, true},
		{"", 0, true},
		{"10", 0, true},
		{"MB", 0, true},
		{"1.5GB", 0, true},
		{"-1GB", 0, true},
		{"1K", 0, true},
		{"1gb", 0, true},
	} {
		t.Run(c.in, func(t *testing.T) {
			var s byteSize
			err := s.Set(c.in)
			if c.err {
				if !errors.Is(err, errByteSize) {
					t.Errorf("Set(%q) = %v, want errByteSize", c.in, err)
				}
				return
			}
			if err != nil || int64(s) != c.want {
				t.Errorf("Set(%q) = %d, %v, want %d", c.in, s, err, c.want)
			}
		})
	}
}

// TestStripeSizeFlag refuses a -tsdb.stripe-size that is not a power of 2,
// which the head's stripe index (a hash masked by the size minus one)
// needs.
func TestStripeSizeFlag(t *testing.T) {
	for _, v := range []string{"1000", "-1", "x", "2097152"} {
		fs := flag.NewFlagSet("receiver", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var tc tsdbConfig
		tsdbFlags(fs, &tc)
		if err := fs.Parse([]string{"-tsdb.stripe-size", v}); err == nil {
			t.Errorf("-tsdb.stripe-size %s: accepted, want an error", v)
		}
	}
}

// TestTSDBFlags parses the TSDB's flags, checks the options they make,
// Prometheus's defaults without them, and that a TSDB opened with an
// out-of-order window takes a sample older than the newest of its series,
// which one without refuses.
func TestTSDBFlags(t *testing.T) {
	def := tsdb.DefaultOptions()
	for _, c := range []struct {
		name                      string
		args                      []string
		ooo, retention, sizeBytes int64
		stripes                   int
	}{
		{"defaults", nil, 0, def.RetentionDuration, 0, defaultStripeSize},
		{"all", []string{"-tsdb.out-of-order-time-window", "30m", "-tsdb.retention.time", "1y", "-tsdb.retention.size", "512MB", "-tsdb.stripe-size", "0"}, 30 * 60 * 1000, 365 * 24 * 3600 * 1000, 512 << 20, def.StripeSize},
		{"stripes", []string{"-tsdb.stripe-size", "64"}, 0, def.RetentionDuration, 0, 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("receiver", flag.ContinueOnError)
			var tc tsdbConfig
			tsdbFlags(fs, &tc)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			opts := tsdb.DefaultOptions()
			tc.options(opts)
			if opts.OutOfOrderTimeWindow != c.ooo || opts.RetentionDuration != c.retention || opts.MaxBytes != c.sizeBytes || opts.StripeSize != c.stripes {
				t.Errorf("options(%q) = window %d, retention %d, size %d, stripes %d; want %d, %d, %d, %d",
					c.args, opts.OutOfOrderTimeWindow, opts.RetentionDuration, opts.MaxBytes, opts.StripeSize, c.ooo, c.retention, c.sizeBytes, c.stripes)
			}

			db, cleanup, err := openTSDB(t.TempDir(), tc, 0, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := cleanup(); err != nil {
					t.Error(err)
				}
			}()
			ls := labels.FromStrings("__name__", "a")
			now := time.Now().UnixMilli()
			app := db.AppenderV2(context.Background())
			if _, err := app.Append(0, ls, 0, now, 1, nil, nil, storage.AppendV2Options{}); err != nil {
				t.Fatal(err)
			}
			if err := app.Commit(); err != nil {
				t.Fatal(err)
			}
			app = db.AppenderV2(context.Background())
			_, err = app.Append(0, ls, 0, now-60_000, 2, nil, nil, storage.AppendV2Options{})
			_ = app.Rollback()
			if wantErr := c.ooo < 60_000; (err != nil) != wantErr || (err != nil && !errors.Is(err, storage.ErrOutOfOrderSample)) {
				t.Errorf("appending a sample 1m older than the newest with a window of %d ms: %v", c.ooo, err)
			}
			if got := db.Dir(); !strings.HasPrefix(got, "/") {
				t.Errorf("Dir() = %q", got)
			}
		})
	}
}

// TestSetMemoryLimit sets the soft memory limit as -auto-gomemlimit does,
// to a ratio of the container's or the machine's memory, and refuses a
// ratio out of (0, 1].
func TestSetMemoryLimit(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: -auto-gomemlimit keeps it")
	}
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	for _, ratio := range []float64{0, -0.5, 1.5, math.NaN()} {
		if err := setMemoryLimit(config{autoGoMemLimit: true, goMemLimitRatio: ratio}, slog.New(slog.DiscardHandler)); err == nil {
			t.Errorf("ratio %v: no error", ratio)
		}
	}
	if err := setMemoryLimit(config{autoGoMemLimit: false}, slog.New(slog.DiscardHandler)); err != nil || debug.SetMemoryLimit(-1) != prev {
		t.Fatalf("-auto-gomemlimit=false: %v, limit %d; want nothing set", err, debug.SetMemoryLimit(-1))
	}
	if err := setMemoryLimit(config{autoGoMemLimit: true, goMemLimitRatio: 0.5}, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got == math.MaxInt64 || got <= 0 {
		t.Errorf("limit %d after -auto-gomemlimit, want one of half the memory detected", got)
	}
}
