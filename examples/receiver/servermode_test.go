//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
	"github.com/ingestkit/ingestkit/internal/rwtest"
)

// Bounds of TestServerMode's steps, generous for a loaded machine.
const (
	serverBuildTimeout = 5 * time.Minute
	serverStartTimeout = time.Minute
	serverStopTimeout  = time.Minute
)

// TestServerMode runs the receiver as its README documents it, as a
// separate process built from this package: with its default flags (but
// -listen on a free loopback port and a -data-dir), with
// -exemplar-store ring and with -peers. Each run POSTs a captured 1.0 and
// a captured 2.0 request, reads /api/v1/series_count and /metrics, stops
// the receiver with SIGTERM (a clean exit is required), starts it again on
// the same -data-dir and checks that the series and samples are back
// (WAL replay), and the exemplars with the TSDB's exemplar storage, the
// default; the ring's, in memory only, are gone, as documented. After the
// last stop it opens the directory read-only and counts every series and
// sample. A run with the flags of ops.go and capture.go checks the probes,
// the TSDB's logs and the capture (testServerModeOps). A last run without
// -data-dir checks that the temporary directory is removed at exit. A panic or an error at start fails it.
//
// CI runs it by name in a step of its own (.ci/run, "receiver server
// mode").
func TestServerMode(t *testing.T) {
	bin := buildReceiver(t)
	exemplarsOf := map[string]float64{} // by case, before the restart
	for _, c := range []struct {
		name string
		args []string
		// exemplars is the metric of the exemplars in storage; kept says
		// whether they survive a restart.
		exemplars string
		kept      bool
		peers     bool
		// moreThan names a case run before, whose exemplars this one
		// must exceed.
		moreThan string
	}{
		{name: "default flags", exemplars: defaultTenantMetric("prometheus_tsdb_exemplar_exemplars_in_storage"), kept: true},
		{name: "exemplar-store=ring", args: []string{"-exemplar-store", "ring"}, exemplars: defaultTenantMetric(ringMetricsPrefix + "exemplars_in_storage")},
		{name: "peers", args: []string{"-peers", "r1:10901,r2:10901,r3:10901", "-replication-factor", "2"}, exemplars: defaultTenantMetric("prometheus_tsdb_exemplar_exemplars_in_storage"), kept: true, peers: true},
		// The captured 2.0 requests carry exemplars in series without
		// samples, as Prometheus's sender sends them: kept only with the
		// feature.
		{name: "exemplar-only-series", args: []string{"-enable-feature", "exemplar-only-series"}, exemplars: defaultTenantMetric("prometheus_tsdb_exemplar_exemplars_in_storage"), kept: true, moreThan: "default flags"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"-listen", "127.0.0.1:0", "-data-dir", dir}, c.args...)

			p := startReceiver(t, bin, nil, args...)
			postCaptured(t, p.addr)
			before := p.seriesCount(t)
			exBefore := p.metric(t, c.exemplars)
			p.stop(t)
			if before.HeadSeries == 0 || before.Samples == 0 || before.Exemplars == 0 || exBefore == 0 {
				t.Fatalf("after the requests: %+v, %s %v; want series, samples and exemplars", before, c.exemplars, exBefore)
			}
			exemplarsOf[c.name] = exBefore
			if prev, ok := exemplarsOf[c.moreThan]; c.moreThan != "" && (!ok || exBefore <= prev) {
				t.Errorf("%s = %v, want more than with %s (%v)", c.exemplars, exBefore, c.moreThan, prev)
			}
			if c.peers && len(before.OwnedPerPeer) != 3 {
				t.Errorf("series_owned_per_peer = %v, want 3 peers", before.OwnedPerPeer)
			}

			p = startReceiver(t, bin, nil, args...)
			after := p.seriesCount(t)
			exAfter := p.metric(t, c.exemplars)
			p.stop(t)
			if after.HeadSeries != before.HeadSeries || after.HeadMinTimeMs != before.HeadMinTimeMs || after.HeadMaxTimeMs != before.HeadMaxTimeMs {
				t.Errorf("after a restart: head_series %d from %d to %d ms, want %d from %d to %d ms",
					after.HeadSeries, after.HeadMinTimeMs, after.HeadMaxTimeMs, before.HeadSeries, before.HeadMinTimeMs, before.HeadMaxTimeMs)
			}
			want := exBefore
			if !c.kept {
				want = 0
			}
			if exAfter != want {
				t.Errorf("after a restart: %s = %v, want %v (%v before)", c.exemplars, exAfter, want, exBefore)
			}

			series, samples := countDir(t, filepath.Join(dir, ingest.DefaultTenant))
			if series != int(before.HeadSeries) || samples != int(before.Samples+before.Histograms) {
				t.Errorf("the TSDB in -data-dir holds %d series and %d samples, want %d and %d (%d floats, %d histograms)",
					series, samples, before.HeadSeries, before.Samples+before.Histograms, before.Samples, before.Histograms)
			}
		})
	}
	t.Run("probes, capture and TSDB flags", func(t *testing.T) { testServerModeOps(t, bin) })
	t.Run("no data-dir", func(t *testing.T) {
		tmp := t.TempDir()
		p := startReceiver(t, bin, []string{"TMPDIR=" + tmp}, "-listen", "127.0.0.1:0")
		postCaptured(t, p.addr)
		if s := p.seriesCount(t); s.HeadSeries == 0 {
			t.Errorf("series_count = %+v, want series", s)
		}
		p.stop(t)
		left, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range left {
			t.Errorf("left behind in the temporary directory after a SIGTERM: %s", e.Name())
		}
	})
}

// buildReceiver builds this package's command into the test's directory.
func buildReceiver(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to build the receiver with: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "receiver")
	ctx, cancel := context.WithTimeout(context.Background(), serverBuildTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, goBin, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// receiverProcess is a receiver running as a child process.
type receiverProcess struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer
	done   chan error // the result of cmd.Wait
	exited bool       // done was received from
}

// lockedBuffer is a bytes.Buffer that the process's output goroutine
// writes while the test may read it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer // guarded by mu
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startReceiver starts bin with args and env added to the test's
// environment, and returns once it has printed the address it listens on.
// It fails the test if the process exits first, or prints nothing in
// serverStartTimeout.
func startReceiver(t *testing.T, bin string, env []string, args ...string) *receiverProcess {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &receiverProcess{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.exited { // the test failed before stop
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		p.done <- cmd.Wait()
	}()
	select {
	case p.addr = <-addr:
		return p
	case err := <-p.done:
		p.exited = true
		t.Fatalf("receiver %s exited at start: %v\n%s", strings.Join(args, " "), err, p.stderr)
	case <-time.After(serverStartTimeout):
		t.Fatalf("receiver %s printed no address in %v\n%s", strings.Join(args, " "), serverStartTimeout, p.stderr)
	}
	return nil
}

// stop sends SIGTERM and requires a clean exit within serverStopTimeout.
func (p *receiverProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.exited = true
		if err != nil {
			t.Fatalf("receiver after SIGTERM: %v, want exit status 0\n%s", err, p.stderr)
		}
	case <-time.After(serverStopTimeout):
		t.Fatalf("receiver did not exit within %v of SIGTERM\n%s", serverStopTimeout, p.stderr)
	}
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// get returns the body of a GET of path, which must answer 200.
func (p *receiverProcess) get(t *testing.T, path string) []byte {
	t.Helper()
	resp, err := httpClient.Get("http://" + p.addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d, want 200: %.500s", path, resp.StatusCode, b)
	}
	return b
}

func (p *receiverProcess) seriesCount(t *testing.T) seriesCountResponse {
	t.Helper()
	var s seriesCountResponse
	if err := json.Unmarshal(p.get(t, "/api/v1/series_count"), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// defaultTenantMetric is the name of a per-tenant metric of the default
// tenant, as metric takes it.
func defaultTenantMetric(name string) string { return name + `{tenant="` + ingest.DefaultTenant + `"}` }

// metric returns the value of the metric name, with its labels if any as
// /metrics writes them, from /metrics.
func (p *receiverProcess) metric(t *testing.T, name string) float64 {
	t.Helper()
	for line := range strings.SplitSeq(string(p.get(t, "/metrics")), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("/metrics: %q: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

// postCaptured POSTs a captured 1.0 and a captured 2.0 request, as
// Prometheus sent them, headers included. The 1.0 one must be answered
// 204; the 2.0 one 204, or 400 for a partial write that wrote samples (the
// captured 2.0 requests carry series without samples, which 2.0 rejects,
// and Prometheus's handler answers them the same: TestDifferential).
func postCaptured(t *testing.T, addr string) {
	t.Helper()
	for i, path := range []string{rwtest.Files(t, 1)[0], rwtest.Files(t, 2)[1]} {
		body, h := rwtest.Raw(t, path)
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/write", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		partial := i == 1 && resp.StatusCode == http.StatusBadRequest && resp.Header.Get(difftest.HeaderSamplesWritten) > "0"
		if resp.StatusCode != http.StatusNoContent && !partial {
			t.Fatalf("POST %s = %d, want 204: %.500s", filepath.Base(path), resp.StatusCode, b)
		}
	}
}

// countDir opens the TSDB in dir read-only and counts its series and
// samples (floats and histograms).
func countDir(t *testing.T, dir string) (series, samples int) {
	t.Helper()
	db, err := tsdb.OpenDBReadOnly(dir, t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
	var it chunkenc.Iterator
	for ss.Next() {
		series++
		it = ss.At().Iterator(it)
		for it.Next() != chunkenc.ValNone {
			samples++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(fmt.Errorf("selecting every series of %s: %w", dir, err))
	}
	return series, samples
}
