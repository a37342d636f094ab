package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// newTestTenants returns a router over a test directory (or opts.Dir),
// closed when the test ends.
func newTestTenants(t *testing.T, opts tenantOptions) *tenants {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.MaxExemplars == 0 {
		opts.MaxExemplars = 1000
	}
	opts.Receiver.TrackActiveSeries = true // as receiverOptions sets it
	tt, err := newTenants(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tt.close(); err != nil {
			t.Error(err)
		}
	})
	return tt
}

// sendTenant sends s to h as tenant (no header if tenant is "") and returns
// the response.
func sendTenant(h http.Handler, header, tenant string, s difftest.Step) *httptest.ResponseRecorder {
	req := s.Request()
	if tenant != "" {
		req.Header.Set(header, tenant)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// mustSend sends s as tenant and requires the status code want.
func mustSend(t *testing.T, h http.Handler, tenant string, s difftest.Step, want int) *httptest.ResponseRecorder {
	t.Helper()
	rec := sendTenant(h, ingest.DefaultTenantHeader, tenant, s)
	if rec.Code != want {
		t.Fatalf("tenant %q: status %d, want %d: %.500s", tenant, rec.Code, want, rec.Body)
	}
	return rec
}

// tenantDB returns the TSDB of the open tenant id, or nil.
func (tt *tenants) tenantDB(id string) *tsdb.DB {
	tt.mu.RLock()
	defer tt.mu.RUnlock()
	if tn := tt.m[id]; tn != nil && tn.isOpen() {
		return tn.db
	}
	return nil
}

// openTenants returns the IDs of the open tenants, sorted.
func (tt *tenants) openTenants() []string {
	var ids []string
	tt.each(func(tn *tenant) { ids = append(ids, tn.id) })
	return ids
}

// readSeries returns the float samples of every series of db, by series,
// each as "t:v".
func readSeries(t *testing.T, db *tsdb.DB) map[string][]string {
	t.Helper()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
	got := map[string][]string{}
	var it chunkenc.Iterator
	for ss.Next() {
		it = ss.At().Iterator(it)
		var samples []string
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			samples = append(samples, fmt.Sprintf("%d:%g", ts, v))
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		got[ss.At().Labels().String()] = samples
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// checkSeries compares what db holds, series by series, with want.
func checkSeries(t *testing.T, what string, db *tsdb.DB, want map[string][]string) {
	t.Helper()
	got := readSeries(t, db)
	for s, w := range want {
		if !slices.Equal(got[s], w) {
			t.Errorf("%s: series %s holds %v, want %v", what, s, got[s], w)
		}
	}
	for s, g := range got {
		if _, ok := want[s]; !ok {
			t.Errorf("%s: series %s holds %v, want no such series", what, s, g)
		}
	}
}

// seriesOf is a 1.0 request of one float sample, at ts, for each metric
// named in names, with the value v.
func seriesOf(t testing.TB, ts int64, v float64, names ...string) difftest.Step {
	var series []difftest.Series
	for _, n := range names {
		series = append(series, difftest.FloatSeries(ts, v, "__name__", n, "job", "tenants"))
	}
	return difftest.V1Step(t, series)
}

// seriesKey is the key of readSeries for the metric name of seriesOf.
func seriesKey(name string) string { return `{__name__="` + name + `", job="tenants"}` }

func TestValidTenantID(t *testing.T) {
	for _, c := range []struct {
		id string
		ok bool
	}{
		{"a", true},
		{"team-a", true},
		{"A.b_c!*'()-9", true},
		{"...", true},
		{".a", true},
		{strings.Repeat("x", 150), true},
		{"", false},
		{".", false},
		{"..", false},
		{"../x", false},
		{"a/b", false},
		{`a\b`, false},
		{"/", false},
		{"a\x00b", false},
		{"a b", false},
		{"a|b", false},
		{"é", false},
		{strings.Repeat("x", 151), false},
		{strings.Repeat("x", 300), false},
	} {
		t.Run(fmt.Sprintf("%.20q", c.id), func(t *testing.T) {
			err := ingest.ValidTenantID(c.id)
			if (err == nil) != c.ok || err != nil && !errors.Is(err, ingest.ErrInvalidTenant) {
				t.Errorf("ingest.ValidTenantID(%.20q) = %v, want ok %v", c.id, err, c.ok)
			}
		})
	}
}

// TestTenantsHostileHeader checks that a tenant header that is not a valid
// tenant ID is answered 400, saying so, and that nothing is created in the
// data directory nor opened.
func TestTenantsHostileHeader(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "data")
	tt := newTestTenants(t, tenantOptions{Dir: dir})
	body := seriesOf(t, time.Now().UnixMilli(), 1, "up")
	for _, c := range []struct {
		name   string
		values []string
	}{
		{"parent", []string{"../x"}},
		{"dot dot", []string{".."}},
		{"dot", []string{"."}},
		{"absolute", []string{"/etc"}},
		{"separator", []string{"a/b"}},
		{"backslash", []string{`..\x`}},
		{"300 bytes", []string{strings.Repeat("a", 300)}},
		{"151 bytes", []string{strings.Repeat("a", 151)}},
		{"NUL", []string{"a\x00b"}},
		{"space", []string{"a b"}},
		{"two headers", []string{"a", "b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := body.Request()
			for _, v := range c.values {
				req.Header.Add(ingest.DefaultTenantHeader, v)
			}
			rec := httptest.NewRecorder()
			tt.ServeHTTP(rec, req)
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "invalid tenant ID") {
				t.Errorf("status %d %q, want 400 invalid tenant ID", rec.Code, rec.Body)
			}
			if ids := tt.openTenants(); len(ids) != 0 {
				t.Errorf("open tenants %q, want none", ids)
			}
			for _, d := range []string{dir, parent} {
				ents, err := os.ReadDir(d)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ents {
					if d == dir || e.Name() != "data" {
						t.Errorf("%s holds %s after the request", d, e.Name())
					}
				}
			}
		})
	}
	if n := tt.h.Stats().Invalid; n != 11 {
		t.Errorf("requests refused for their tenant = %d, want 11", n)
	}
}

// TestTenantsApart checks that tenants writing the same series stay apart,
// in a TSDB each in Dir/<tenant>, with each header: the one given, or none
// for the default tenant.
func TestTenantsApart(t *testing.T) {
	for _, c := range []struct{ header, def string }{
		{"", ""},
		{"X-Scope-OrgID", "anonymous"},
	} {
		t.Run("header="+c.header, func(t *testing.T) {
			dir := t.TempDir()
			tt := newTestTenants(t, tenantOptions{Dir: dir, Header: c.header, Default: c.def})
			ts := time.Now().UnixMilli()
			tenantsV := map[string]float64{"": 1, "team-a": 2, "team-b": 3}
			for i := range 3 {
				for tenant, v := range tenantsV {
					rec := sendTenant(tt, tt.opts.Header, tenant, seriesOf(t, ts+int64(i), v, "up", "requests"))
					if rec.Code != http.StatusNoContent {
						t.Fatalf("tenant %q: status %d: %s", tenant, rec.Code, rec.Body)
					}
				}
			}
			for tenant, v := range tenantsV {
				id := cmp.Or(tenant, tt.opts.Default)
				db := tt.tenantDB(id)
				if db == nil {
					t.Fatalf("tenant %q is not open", id)
				}
				if got, want := db.Dir(), filepath.Join(dir, id); got != want {
					t.Errorf("tenant %q's TSDB is in %s, want %s", id, got, want)
				}
				var samples []string
				for i := range 3 {
					samples = append(samples, fmt.Sprintf("%d:%g", ts+int64(i), v))
				}
				checkSeries(t, "tenant "+id, db, map[string][]string{seriesKey("up"): samples, seriesKey("requests"): samples})
			}
		})
	}
}

// TestTenantIdleReopen checks that a tenant closed when idle drops its
// WriteHandler and TSDB, and that the next request opens it again with every
// sample it had (WAL replay), a fresh cache and tracker; a tenant in use
// is not closed.
func TestTenantIdleReopen(t *testing.T) {
	tt := newTestTenants(t, tenantOptions{})
	ts := time.Now().UnixMilli()
	mustSend(t, tt, "a", seriesOf(t, ts, 1, "x", "y"), http.StatusNoContent)
	mustSend(t, tt, "b", seriesOf(t, ts, 1, "x"), http.StatusNoContent)
	old := tt.handler("a")

	// In use: not closed.
	inUse, err := tt.acquire("b")
	if err != nil {
		t.Fatal(err)
	}
	n, err := tt.closeIdle(time.Now().Add(time.Hour))
	tt.release(inUse)
	if err != nil || n != 1 {
		t.Fatalf("closeIdle() = %d, %v; want 1 tenant closed", n, err)
	}
	if got := tt.openTenants(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("open tenants after closeIdle = %q, want [b]", got)
	}
	// Used since: not closed.
	if n, _ := tt.closeIdle(time.Now().Add(-time.Hour)); n != 0 {
		t.Errorf("closeIdle(an hour ago) closed %d tenants, want 0", n)
	}

	mustSend(t, tt, "a", seriesOf(t, ts+1, 2, "x", "z"), http.StatusNoContent)
	tn := tt.m["a"]
	if tt.handler("a") == old {
		t.Fatal("the reopened tenant has its old WriteHandler")
	}
	if s := tt.handler("a").Stats(); s.ActiveSeries != 2 || s.Cache.Len != 2 || s.Requests != 1 {
		t.Errorf("reopened tenant's stats = %+v, want 2 active and cached series, 1 request", s)
	}
	checkSeries(t, "reopened tenant a", tn.db, map[string][]string{
		seriesKey("x"): {fmt.Sprintf("%d:1", ts), fmt.Sprintf("%d:2", ts+1)},
		seriesKey("y"): {fmt.Sprintf("%d:1", ts)},
		seriesKey("z"): {fmt.Sprintf("%d:2", ts+1)},
	})
	if got := tt.opened.Load(); got != 3 {
		t.Errorf("opens = %d, want 3 (a, b, a again)", got)
	}
}

// TestTenantDirRemoved checks a tenant whose directory is removed, while it
// is closed or while it is open: once closed and opened again its head
// starts afresh and numbers its series from 1, and none of its new samples
// lands in another series, nor do its own old samples or another tenant's
// come back.
func TestTenantDirRemoved(t *testing.T) {
	for _, whileOpen := range []bool{false, true} {
		t.Run(fmt.Sprintf("while open=%v", whileOpen), func(t *testing.T) {
			dir := t.TempDir()
			tt := newTestTenants(t, tenantOptions{Dir: dir})
			ts := time.Now().UnixMilli()
			// Refs 1, 2, 3 of tenant a's first head are x, y, z.
			mustSend(t, tt, "a", seriesOf(t, ts, 1, "x", "y", "z"), http.StatusNoContent)
			mustSend(t, tt, "b", seriesOf(t, ts, 5, "x", "y", "z"), http.StatusNoContent)
			if whileOpen {
				if err := os.RemoveAll(filepath.Join(dir, "a")); err != nil {
					t.Fatal(err)
				}
				mustSend(t, tt, "a", seriesOf(t, ts+1, 1, "x", "y", "z"), http.StatusNoContent)
			}
			if _, err := tt.closeIdle(time.Now().Add(time.Hour)); err != nil {
				t.Logf("closeIdle: %v", err) // a TSDB whose directory went away may fail to close cleanly
			}
			if !whileOpen {
				if err := os.RemoveAll(filepath.Join(dir, "a")); err != nil {
					t.Fatal(err)
				}
			}
			// The fresh head's refs 1, 2, 3 are z, w, x: with the old
			// cache, z's sample would land in x, w's in y.
			for i := range 3 {
				mustSend(t, tt, "a", seriesOf(t, ts+10+int64(i), 2, "z", "w", "x"), http.StatusNoContent)
			}
			mustSend(t, tt, "b", seriesOf(t, ts+10, 6, "x"), http.StatusNoContent)
			fresh := []string{fmt.Sprintf("%d:2", ts+10), fmt.Sprintf("%d:2", ts+11), fmt.Sprintf("%d:2", ts+12)}
			checkSeries(t, "tenant a", tt.tenantDB("a"), map[string][]string{seriesKey("z"): fresh, seriesKey("w"): fresh, seriesKey("x"): fresh})
			old := fmt.Sprintf("%d:5", ts)
			checkSeries(t, "tenant b", tt.tenantDB("b"), map[string][]string{
				seriesKey("x"): {old, fmt.Sprintf("%d:6", ts+10)}, seriesKey("y"): {old}, seriesKey("z"): {old},
			})
		})
	}
}

// TestTenantsConcurrentFirstRequests checks that concurrent first requests
// of a new tenant open one TSDB, and that every request is written to it.
func TestTenantsConcurrentFirstRequests(t *testing.T) {
	tt := newTestTenants(t, tenantOptions{})
	const n = 16
	ts := time.Now().UnixMilli()
	var wg sync.WaitGroup
	codes := make([]int, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			codes[i] = sendTenant(tt, ingest.DefaultTenantHeader, "new", seriesOf(t, ts, float64(i), fmt.Sprintf("s%d", i))).Code
		})
	}
	close(start)
	wg.Wait()
	want := map[string][]string{}
	for i, code := range codes {
		if code != http.StatusNoContent {
			t.Errorf("request %d: status %d", i, code)
		}
		want[seriesKey(fmt.Sprintf("s%d", i))] = []string{fmt.Sprintf("%d:%d", ts, i)}
	}
	if got := tt.opened.Load(); got != 1 {
		t.Errorf("TSDBs opened = %d, want 1", got)
	}
	checkSeries(t, "tenant new", tt.tenantDB("new"), want)
}

// TestTenantsCloseRace sends requests to a few tenants while idle tenants
// are closed as fast as possible: every request must succeed (none uses a
// closed TSDB: run it with -race) and every sample be read back from the
// TSDBs, reopened many times.
func TestTenantsCloseRace(t *testing.T) {
	tt := newTestTenants(t, tenantOptions{MaxExemplars: -1})
	const workers, requests = 4, 100
	ts := time.Now().UnixMilli()
	stop := make(chan struct{})
	closerDone := make(chan int)
	go func() {
		closed := 0
		for {
			select {
			case <-stop:
				closerDone <- closed
				return
			default:
			}
			n, err := tt.closeIdle(time.Now().Add(time.Hour))
			if err != nil {
				t.Error(err)
			}
			closed += n
			runtime.Gosched()
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			tenant := fmt.Sprintf("t%d", w%2)
			for i := range requests {
				rec := sendTenant(tt, ingest.DefaultTenantHeader, tenant, seriesOf(t, ts+int64(i), float64(i), fmt.Sprintf("w%d", w)))
				if rec.Code != http.StatusNoContent {
					t.Errorf("worker %d request %d: status %d: %s", w, i, rec.Code, rec.Body)
					return
				}
				time.Sleep(time.Duration(i%3) * 100 * time.Microsecond) // let the tenant go idle now and then
			}
		})
	}
	wg.Wait()
	close(stop)
	closed := <-closerDone
	t.Logf("%d tenants closed, %d opened", closed, tt.opened.Load())
	for tenant := range 2 {
		id := fmt.Sprintf("t%d", tenant)
		if _, err := tt.acquire(id); err != nil {
			t.Fatal(err)
		}
		want := map[string][]string{}
		for w := tenant; w < workers; w += 2 {
			var samples []string
			for i := range requests {
				samples = append(samples, fmt.Sprintf("%d:%d", ts+int64(i), i))
			}
			want[seriesKey(fmt.Sprintf("w%d", w))] = samples
		}
		checkSeries(t, "tenant "+id, tt.tenantDB(id), want)
		tt.release(tt.m[id])
	}
}

// TestTenantSeriesLimit checks -max-series-per-tenant: the new series of a
// tenant at its limit are refused with a 400 that names the limit, its
// other series are written, in both protocol versions, other tenants are
// not limited by it, and the refused series and samples are counted.
func TestTenantSeriesLimit(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v2=%v", v2), func(t *testing.T) {
			tt := newTestTenants(t, tenantOptions{Receiver: ingest.Options{MaxSeries: 3}})
			ts := time.Now().UnixMilli()
			req := func(ts int64, names ...string) difftest.Step {
				var series []difftest.Series
				for _, n := range names {
					s := difftest.FloatSeries(ts, 1, "__name__", n, "job", "tenants")
					s.Floats = append(s.Floats, prompb.Sample{Timestamp: ts + 1, Value: 2})
					series = append(series, s)
				}
				if v2 {
					return difftest.V2Step(t, series)
				}
				return difftest.V1Step(t, series)
			}
			rec := mustSend(t, tt, "a", req(ts, "s1", "s2", "s3", "s4", "s5"), http.StatusBadRequest)
			if body := rec.Body.String(); !strings.Contains(body, "per-tenant series limit of 3 exceeded") || !strings.Contains(body, `s4`) || !strings.Contains(body, `s5`) {
				t.Errorf("body %q, want the limit and the refused series", body)
			}
			// Known series are written, a new one refused.
			mustSend(t, tt, "a", req(ts+10, "s1", "s6", "s2", "s3"), http.StatusBadRequest)
			mustSend(t, tt, "a", req(ts+20, "s3", "s1"), http.StatusNoContent)
			mustSend(t, tt, "b", req(ts, "s1", "s2", "s3"), http.StatusNoContent)

			w := func(tss ...int64) (s []string) {
				for _, ts := range tss {
					s = append(s, fmt.Sprintf("%d:1", ts), fmt.Sprintf("%d:2", ts+1))
				}
				return s
			}
			checkSeries(t, "tenant a", tt.tenantDB("a"), map[string][]string{
				seriesKey("s1"): w(ts, ts+10, ts+20), seriesKey("s2"): w(ts, ts+10), seriesKey("s3"): w(ts, ts+10, ts+20),
			})
			s := tt.handler("a").Stats()
			if s.RefusedSeries != 3 || s.RefusedSamples != 6 || s.ActiveSeries != 3 {
				t.Errorf("tenant a: %d series refused, %d samples, %d active; want 3, 6, 3", s.RefusedSeries, s.RefusedSamples, s.ActiveSeries)
			}
			if s := tt.handler("b").Stats(); s.RefusedSeries != 0 {
				t.Errorf("tenant b: %d series refused, want 0", s.RefusedSeries)
			}
			// Once purged, the series are no longer active: new ones go in.
			tt.Purge(time.Now().Add(time.Hour))
			mustSend(t, tt, "a", req(ts+30, "s4", "s5"), http.StatusNoContent)
		})
	}
}

// TestTenantsOpenExisting checks that a router started on a directory
// opens the tenants it holds and the default tenant, with their series,
// leaves a directory that is not a tenant's alone, and refuses a directory
// that holds a single TSDB of its own.
func TestTenantsOpenExisting(t *testing.T) {
	dir := t.TempDir()
	tt, err := newTenants(tenantOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UnixMilli()
	mustSend(t, tt, "a", seriesOf(t, ts, 1, "x", "y"), http.StatusNoContent)
	mustSend(t, tt, "b", seriesOf(t, ts, 1, "x"), http.StatusNoContent)
	if err := tt.close(); err != nil {
		t.Fatal(err)
	}
	if rec := sendTenant(tt, ingest.DefaultTenantHeader, "a", seriesOf(t, ts, 1, "x")); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("after close: status %d, want 503", rec.Code)
	}
	if err := os.Mkdir(filepath.Join(dir, "not a tenant"), 0o777); err != nil {
		t.Fatal(err)
	}

	tt = newTestTenants(t, tenantOptions{Dir: dir})
	if err := tt.openExisting(); err != nil {
		t.Fatal(err)
	}
	if got, want := tt.openTenants(), []string{"a", "b", ingest.DefaultTenant}; !slices.Equal(got, want) {
		t.Errorf("open tenants %q, want %q", got, want)
	}
	c := tt.seriesCounts()
	if c.HeadSeries != 3 || c.Tenants["a"].HeadSeries != 2 || c.Tenants["b"].HeadSeries != 1 || c.HeadMinTimeMs != ts || c.HeadMaxTimeMs != ts {
		t.Errorf("series counts after a restart = %+v, want 2 series of a, 1 of b at %d", c, ts)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "not a tenant")); len(ents) != 0 {
		t.Errorf("a directory that is not a tenant's holds %d files", len(ents))
	}

	single := filepath.Join(t.TempDir(), "single")
	_, cleanup, err := openDB(single, 0, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := newTenants(tenantOptions{Dir: single}); !errors.Is(err, errSingleTenantDir) {
		t.Errorf("newTenants(a TSDB directory) = %v, want %v", err, errSingleTenantDir)
	}
}

// TestTenantsEndpoints checks /metrics and /api/v1/series_count with
// tenants: the per-tenant gauges and counters, the TSDBs' own metrics
// labelled tenant, gone once a tenant is closed when idle and back when
// it is opened again.
func TestTenantsEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	tt := newTestTenants(t, tenantOptions{Registerer: reg, Receiver: ingest.Options{MaxSeries: 2}})
	srv := httptest.NewServer(newRoutes(tt, newTenantCollectors(tt), func() any { return tt.seriesCounts() }, reg))
	defer srv.Close()
	ts := time.Now().UnixMilli()
	mustSend(t, tt, "a", seriesOf(t, ts, 1, "x", "y"), http.StatusNoContent)
	mustSend(t, tt, "b", seriesOf(t, ts, 1, "x", "y", "z", "w"), http.StatusBadRequest)
	mustSend(t, tt, "../b", seriesOf(t, ts, 1, "x"), http.StatusBadRequest)

	get := func(path string) string {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d: %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	var sc tenantsCountResponse
	if err := json.Unmarshal([]byte(get("/api/v1/series_count")), &sc); err != nil {
		t.Fatal(err)
	}
	if sc.HeadSeries != 4 || sc.Samples != 4 || sc.Rejected != 2 || sc.Tenants["a"].ActiveSeries != 2 || sc.Tenants["b"].HeadSeries != 2 || sc.Tenants["b"].Rejected != 1 {
		t.Errorf("series_count = %+v, want 4 series and samples, 2 of each tenant, 2 rejected", sc)
	}
	metrics := get("/metrics")
	for _, want := range []string{
		`ingestkit_receiver_active_series{tenant="a"} 2`,
		`ingestkit_receiver_head_series{tenant="b"} 2`,
		`ingestkit_receiver_cached_series{tenant="b"} 2`,
		`ingestkit_receiver_cache_stores_total{tenant="b"} 2`,
		`ingestkit_receiver_samples_total{tenant="a"} 2`,
		`ingestkit_receiver_discarded_series_total{reason="per_tenant_series_limit",tenant="b"} 2`,
		`ingestkit_receiver_discarded_samples_total{reason="per_tenant_series_limit",tenant="b"} 2`,
		`ingestkit_receiver_discarded_series_total{reason="per_tenant_series_limit",tenant="a"} 0`,
		`ingestkit_receiver_invalid_tenant_requests_total 1`,
		`ingestkit_receiver_tenants 2`,
		`prometheus_tsdb_head_series{tenant="a"} 2`,
		`prometheus_tsdb_head_series{tenant="b"} 2`,
	} {
		if !strings.Contains(metrics, "\n"+want+"\n") {
			t.Errorf("/metrics has no line %s", want)
		}
	}

	if _, err := tt.closeIdle(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	metrics = get("/metrics")
	if strings.Contains(metrics, `tenant="a"`) || !strings.Contains(metrics, "\ningestkit_receiver_idle_tenants_closed_total 2\n") {
		t.Errorf("/metrics after the tenants were closed:\n%s", metrics)
	}
	mustSend(t, tt, "a", seriesOf(t, ts+1, 1, "x"), http.StatusNoContent)
	metrics = get("/metrics")
	for _, want := range []string{`prometheus_tsdb_head_series{tenant="a"} 2`, `ingestkit_receiver_samples_total{tenant="a"} 1`} {
		if !strings.Contains(metrics, "\n"+want+"\n") {
			t.Errorf("/metrics after tenant a was opened again has no line %s", want)
		}
	}
}

// TestTenantsMaxTenants checks that a new tenant beyond MaxTenants is
// refused with a 503 and no directory, and admitted once a tenant was
// closed.
func TestTenantsMaxTenants(t *testing.T) {
	dir := t.TempDir()
	tt := newTestTenants(t, tenantOptions{Dir: dir, MaxTenants: 2})
	ts := time.Now().UnixMilli()
	mustSend(t, tt, "a", seriesOf(t, ts, 1, "x"), http.StatusNoContent)
	mustSend(t, tt, "b", seriesOf(t, ts, 1, "x"), http.StatusNoContent)
	rec := mustSend(t, tt, "c", seriesOf(t, ts, 1, "x"), http.StatusServiceUnavailable)
	if !strings.Contains(rec.Body.String(), "too many tenants") {
		t.Errorf("body %q, want too many tenants", rec.Body)
	}
	if _, err := os.Stat(filepath.Join(dir, "c")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused tenant's directory: %v, want none", err)
	}
	mustSend(t, tt, "a", seriesOf(t, ts+1, 1, "x"), http.StatusNoContent)
	if _, err := tt.closeIdle(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	mustSend(t, tt, "c", seriesOf(t, ts, 1, "x"), http.StatusNoContent)
	if n := tt.h.Stats().Unrouted; n != 1 {
		t.Errorf("requests refused before a tenant = %d, want 1", n)
	}
}

// TestTenantIdleLoop checks that tenantIdleLoop closes a tenant that
// received nothing for the idle time, and only then.
func TestTenantIdleLoop(t *testing.T) {
	tt := newTestTenants(t, tenantOptions{})
	mustSend(t, tt, "a", seriesOf(t, time.Now().UnixMilli(), 1, "x"), http.StatusNoContent)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const idle = 200 * time.Millisecond
	start := time.Now()
	go tenantIdleLoop(ctx, tt, 10*time.Millisecond, idle, tt.logger)
	for tt.idleClosed.Load() == 0 {
		if time.Since(start) > time.Minute {
			t.Fatal("tenant a still open after a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := time.Since(start); d < idle {
		t.Errorf("tenant closed %v after its request, want at least %v", d, idle)
	}
	if ids := tt.openTenants(); len(ids) != 0 {
		t.Errorf("open tenants %q, want none", ids)
	}
}

// TestTenantsMoreDirsThanLimit reopens a data directory of five tenants
// with MaxTenants 3: openExisting does not fail, it opens the default
// tenant and the two most recently written, leaving the others closed; a
// request for one of those is answered 503 while three are open, and is
// written once an idle tenant was closed.
func TestTenantsMoreDirsThanLimit(t *testing.T) {
	dir := t.TempDir()
	tt := newTestTenants(t, tenantOptions{Dir: dir})
	ts := time.Now().UnixMilli()
	for i, id := range []string{"a", "b", "c", "d"} {
		mustSend(t, tt, id, seriesOf(t, ts, 1, "x"), http.StatusNoContent)
		// Each written later than the last, as existing sees it.
		when := time.Now().Add(time.Duration(i-10) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, id, "wal"), when, when); err != nil {
			t.Fatal(err)
		}
	}
	if err := tt.close(); err != nil {
		t.Fatal(err)
	}

	tt = newTestTenants(t, tenantOptions{Dir: dir, MaxTenants: 3})
	if err := tt.openExisting(); err != nil {
		t.Fatalf("openExisting with more tenant directories than MaxTenants: %v", err)
	}
	if got, want := tt.openTenants(), []string{"c", "d", ingest.DefaultTenant}; !slices.Equal(got, want) {
		t.Errorf("open tenants %q, want %q: the default, then the most recently written", got, want)
	}
	mustSend(t, tt, "d", seriesOf(t, ts+1000, 1, "x"), http.StatusNoContent)
	mustSend(t, tt, "a", seriesOf(t, ts+1000, 1, "x"), http.StatusServiceUnavailable)
	if _, err := tt.closeIdle(time.Now().Add(-time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	mustSend(t, tt, "a", seriesOf(t, ts+1000, 1, "x"), http.StatusNoContent)
	checkSeries(t, "tenant a", tt.tenantDB("a"), map[string][]string{seriesKey("x"): {fmt.Sprintf("%d:1", ts), fmt.Sprintf("%d:1", ts+1000)}})
}

// TestTenantsSeriesBudget runs tenants that share a series budget of 5:
// tenant a writes 3 series, tenant b 3 of which 1 is refused (400) and 2
// written. After a restart over the same directory, countHeld finds the 5
// series in the heads: every series written before is there, a known
// series is written, a new one refused.
func TestTenantsSeriesBudget(t *testing.T) {
	dir := t.TempDir()
	open := func() *tenants {
		return newTestTenants(t, tenantOptions{Dir: dir, Receiver: ingest.Options{SeriesBudget: ingest.NewSeriesBudget(5)}})
	}
	tt := open()
	ts := time.Now().UnixMilli()
	mustSend(t, tt, "a", seriesOf(t, ts, 1, "x", "y", "z"), http.StatusNoContent)
	rec := mustSend(t, tt, "b", seriesOf(t, ts, 1, "x", "y", "z"), http.StatusBadRequest)
	if !strings.Contains(rec.Body.String(), "series budget") {
		t.Errorf("body %q, want the budget named", rec.Body)
	}
	tt.countHeld()
	if held := tt.opts.Receiver.SeriesBudget.Held(); held != 5 {
		t.Errorf("held %d, want 5", held)
	}
	if err := tt.close(); err != nil {
		t.Fatal(err)
	}

	tt = open()
	if err := tt.openExisting(); err != nil {
		t.Fatal(err)
	}
	tt.countHeld()
	if held := tt.opts.Receiver.SeriesBudget.Held(); held != 5 {
		t.Errorf("after a restart: held %d, want 5", held)
	}
	checkSeries(t, "tenant a", tt.tenantDB("a"), map[string][]string{
		seriesKey("x"): {fmt.Sprintf("%d:1", ts)}, seriesKey("y"): {fmt.Sprintf("%d:1", ts)}, seriesKey("z"): {fmt.Sprintf("%d:1", ts)},
	})
	checkSeries(t, "tenant b", tt.tenantDB("b"), map[string][]string{
		seriesKey("x"): {fmt.Sprintf("%d:1", ts)}, seriesKey("y"): {fmt.Sprintf("%d:1", ts)},
	})
	mustSend(t, tt, "b", seriesOf(t, ts+1000, 2, "x"), http.StatusNoContent)
	mustSend(t, tt, "c", seriesOf(t, ts+1000, 2, "x"), http.StatusBadRequest)
}
