package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// serveConfig is the command line's defaults, on a free loopback port and
// with the given exemplar store.
func serveConfig(store string) config {
	return config{
		listen: "127.0.0.1:0", replication: 1, ringAlgorithm: "hashmod", tenant: "default-tenant",
		maxExemplars: 100_000, exemplarStore: store, purgeInterval: time.Minute, activeIdle: 10 * time.Minute,
	}
}

// lineWriter sends each write to a channel: serve's one line of output.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	select {
	case w <- string(p):
	default:
	}
	return len(p), nil
}

// startServe runs serve(ctx, c) in a goroutine and returns its output
// channel and the channel of its result; a panic is returned as an error.
func startServe(ctx context.Context, c config) (lineWriter, chan error) {
	out, done := make(lineWriter, 1), make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("serve panicked: %v", p)
			}
		}()
		done <- serve(ctx, out, c)
	}()
	return out, done
}

// emptyTempDir points the temporary directory of the test's process at a
// fresh one, and returns a check that nothing is left in it.
func emptyTempDir(t *testing.T) func() {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	return func() {
		t.Helper()
		left, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range left {
			t.Errorf("left behind in the temporary directory: %s", e.Name())
		}
	}
}

var listenLine = regexp.MustCompile(`remote write on http://(\S+)/api/v1/write, TSDB in (\S+)`)

// TestServe starts the receiver's server mode with each exemplar store and
// no -data-dir, scrapes /metrics, stops it and checks that its temporary
// TSDB directory is gone. With the ring, the ring's collector and the
// TSDB's head both export exemplar metrics: before they took different
// names, serve panicked at start ("descriptor ... already exists") and
// left the directory behind.
func TestServe(t *testing.T) {
	for _, c := range []struct {
		store string
		want  []string // exemplar metrics /metrics shows
	}{
		// The TSDB's storage opens small and grows (exemplar_growth.go).
		{"tsdb", []string{fmt.Sprintf(`prometheus_tsdb_exemplar_max_exemplars{tenant="default-tenant"} %d`, initialExemplars)}},
		{"ring", []string{`prometheus_tsdb_exemplar_max_exemplars{tenant="default-tenant"} 0`, ringMetricsPrefix + `max_exemplars{tenant="default-tenant"} ` + fmt.Sprint(initialExemplars)}},
	} {
		t.Run("exemplar-store="+c.store, func(t *testing.T) {
			check := emptyTempDir(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out, done := startServe(ctx, serveConfig(c.store))
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
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /metrics = %d, want 200: %.500s", resp.StatusCode, body)
			}
			for _, w := range c.want {
				if !strings.Contains(string(body), "\n"+w+"\n") {
					t.Errorf("GET /metrics has no line %q", w)
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("serve() = %v after ctx was done, want nil", err)
			}
			check()
		})
	}
}

// TestServeFailure checks that serve returns an error, and leaves no
// temporary directory behind, on each way its start can fail.
func TestServeFailure(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(*config)
	}{
		{"unknown exemplar store", func(c *config) { c.exemplarStore = "disk" }},
		{"data dir is a file", func(c *config) { c.dataDir = file }},
		{"unknown ring algorithm", func(c *config) { c.peers, c.ringAlgorithm = "a:1,b:1", "nope" }},
		{"address in use", func(c *config) { c.listen = held.Addr().String() }},
		{"address in use, tsdb exemplars", func(c *config) { c.listen, c.exemplarStore = held.Addr().String(), "tsdb" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			check := emptyTempDir(t)
			cfg := serveConfig("ring")
			c.edit(&cfg)
			_, done := startServe(context.Background(), cfg)
			select {
			case err := <-done:
				if err == nil || strings.Contains(err.Error(), "panicked") {
					t.Errorf("serve() = %v, want an error", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("serve did not fail within a minute")
			}
			check()
		})
	}
}

// TestOpenDBPanic checks that openDB removes the temporary directory it
// made when tsdb.Open panics, here on a registry that already holds the
// TSDB metrics.
func TestOpenDBPanic(t *testing.T) {
	check := emptyTempDir(t)
	reg := prometheus.NewRegistry()
	_, cleanup, err := openDB("", 10, false, reg)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("openDB with the TSDB's metrics registered twice did not panic")
			}
		}()
		_, c2, err := openDB("", 10, false, reg)
		if err == nil {
			_ = c2()
		}
	}()
	if err := cleanup(); err != nil {
		t.Fatal(err)
	}
	check()
}
