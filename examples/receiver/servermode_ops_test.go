//go:build unix

package main

import (
	"strings"
	"testing"
)

// testServerModeOps runs the receiver binary with the flags of ops.go and
// capture.go: the probes answer 200 once it has printed its address; the
// TSDB's own log lines (its WAL replay) reach stderr; -capture-max 1
// writes the first of the two requests postCaptured sends, and only it;
// the -tsdb.* flags are taken.
func testServerModeOps(t *testing.T, bin string) {
	dir, capture := t.TempDir(), t.TempDir()
	p := startReceiver(t, bin, nil, "-listen", "127.0.0.1:0", "-data-dir", dir, "-capture-dir", capture, "-capture-max", "1",
		"-tsdb.retention.time", "30d", "-tsdb.retention.size", "1GB", "-tsdb.out-of-order-time-window", "10m")
	for path, want := range map[string]string{"/-/ready": readyText, "/-/healthy": healthyText} {
		if got := string(p.get(t, path)); got != want {
			t.Errorf("GET %s = %q, want %q", path, got, want)
		}
	}
	postCaptured(t, p.addr)
	if got := p.metric(t, `prometheus_tsdb_retention_limit_bytes{tenant="default-tenant"}`); got != 1<<30 {
		t.Errorf("prometheus_tsdb_retention_limit_bytes = %v, want 1 GiB", got)
	}
	p.stop(t)
	if !strings.Contains(p.stderr.String(), "WAL replay completed") {
		t.Errorf("stderr has no log line of the TSDB's WAL replay:\n%.2000s", p.stderr)
	}
	if got, want := strings.Join(dirNames(t, capture), " "), "rw1-0001.headers rw1-0001.snappy"; got != want {
		t.Errorf("-capture-dir holds %s, want %s", got, want)
	}
}
