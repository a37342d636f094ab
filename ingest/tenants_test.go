package ingest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest"
)

// tenantDBs is a TenantStorage over one tsdb.DB per tenant in a test
// directory, which a test can close and open again, or remove and
// re-create, between requests, as Thanos prunes a tenant.
type tenantDBs struct {
	t    *testing.T
	dir  string
	mu   sync.Mutex
	dbs  map[string]*tsdb.DB
	held atomic.Int64 // storages handed out and not done
}

func newTenantDBs(t *testing.T) *tenantDBs {
	x := &tenantDBs{t: t, dir: t.TempDir(), dbs: map[string]*tsdb.DB{}}
	t.Cleanup(func() {
		for _, db := range x.dbs {
			db.Close()
		}
	})
	return x
}

func (x *tenantDBs) storage(_ context.Context, tenant string) (storage.Appendable, func(), error) {
	switch tenant {
	case "busy":
		return nil, nil, fmt.Errorf("%w: too many tenants", ingest.ErrTenantUnavailable)
	case "banned":
		return nil, nil, fmt.Errorf("%w: %s", ingest.ErrTenantForbidden, tenant)
	case "broken":
		return nil, nil, errors.New("disk on fire")
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	db := x.dbs[tenant]
	if db == nil {
		var err error
		if db, err = tsdb.Open(x.dir+"/"+tenant, nil, nil, tsdb.DefaultOptions(), nil); err != nil {
			return nil, nil, err
		}
		x.dbs[tenant] = db
	}
	x.held.Add(1)
	return db, func() { x.held.Add(-1) }, nil
}

// close closes tenant's TSDB; the next request opens it again.
func (x *tenantDBs) close(tenant string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.dbs[tenant].Close(); err != nil {
		x.t.Fatal(err)
	}
	delete(x.dbs, tenant)
}

// headSeries returns the series of tenant's head.
func (x *tenantDBs) headSeries(tenant string) uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.dbs[tenant].Head().NumSeries()
}

// v1Request returns a remote-write 1.0 request of n series with one sample
// at ts each, for tenant (none: no header).
func v1Request(t *testing.T, tenant string, n int, ts int64) *http.Request {
	t.Helper()
	req := &prompb.WriteRequest{}
	for i := range n {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
			Labels:  []prompb.Label{{Name: "__name__", Value: "up"}, {Name: "i", Value: fmt.Sprint(i)}},
			Samples: []prompb.Sample{{Timestamp: ts, Value: 1}},
		})
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(snappy.Encode(nil, b)))
	r.Header.Set("Content-Encoding", "snappy")
	r.Header.Set("Content-Type", "application/x-protobuf")
	if tenant != "" {
		r.Header.Set(ingest.DefaultTenantHeader, tenant)
	}
	return r
}

func serveTenant(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestTenantWriteHandler routes requests to their tenants' storages: the
// header's tenant, the default tenant without one, and the answers to
// tenants that cannot be served; every storage handed out is given back.
func TestTenantWriteHandler(t *testing.T) {
	dbs := newTenantDBs(t)
	h := ingest.NewTenantWriteHandler(nil, dbs.storage, ingest.TenantOptions{})
	ts := time.Now().Add(-time.Minute).UnixMilli()
	for _, c := range []struct {
		tenant string
		header []string
		code   int
		want   string // in the error
	}{
		{tenant: "a", code: http.StatusNoContent},
		{tenant: "", code: http.StatusNoContent}, // the default tenant
		{tenant: "busy", code: http.StatusServiceUnavailable, want: "too many tenants"},
		{tenant: "banned", code: http.StatusForbidden, want: "not allowed"},
		{tenant: "broken", code: http.StatusInternalServerError, want: "disk on fire"},
		{tenant: "../etc", code: http.StatusBadRequest, want: "invalid tenant ID"},
		{tenant: strings.Repeat("x", ingest.MaxTenantIDLength+1), code: http.StatusBadRequest, want: "longer than"},
		{header: []string{"a", "b"}, code: http.StatusBadRequest, want: "want one"},
	} {
		r := v1Request(t, c.tenant, 3, ts)
		for _, v := range c.header {
			r.Header.Add(ingest.DefaultTenantHeader, v)
		}
		w := serveTenant(h, r)
		if w.Code != c.code || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("tenant %.20q %q: %d %q, want %d with %q", c.tenant, c.header, w.Code, w.Body, c.code, c.want)
		}
	}
	if got := dbs.headSeries("a"); got != 3 {
		t.Errorf("tenant a's head holds %d series, want 3", got)
	}
	if got := dbs.headSeries(ingest.DefaultTenant); got != 3 {
		t.Errorf("the default tenant's head holds %d series, want 3", got)
	}
	if n := dbs.held.Load(); n != 0 {
		t.Errorf("%d storages not given back", n)
	}
	st := h.Stats()
	if st.Tenants != 2 || st.Invalid != 3 || st.Unrouted != 3 {
		t.Errorf("Stats() = %+v, want 2 tenants, 3 invalid, 3 unrouted", st)
	}
}

// TestTenantWriteHandlerReopened closes a tenant's TSDB between requests,
// as a receiver closes an idle tenant and Thanos prunes one, and opens it
// again: the tenant's ref cache, bound to the closed TSDB, starts empty on
// the new one (a rebind), and the requests after it are written.
func TestTenantWriteHandlerReopened(t *testing.T) {
	dbs := newTenantDBs(t)
	h := ingest.NewTenantWriteHandler(nil, dbs.storage, ingest.TenantOptions{})
	ts := time.Now().Add(-time.Hour).UnixMilli()
	for i := range 4 {
		if i == 2 {
			dbs.close("a")
		}
		if w := serveTenant(h, v1Request(t, "a", 5, ts+int64(i)*1000)); w.Code != http.StatusNoContent {
			t.Fatalf("request %d: %d %s", i, w.Code, w.Body)
		}
	}
	s := h.Handler("a").Stats()
	if s.Cache.Rebinds != 1 || s.Samples != 20 || s.Cache.Hits != 10 {
		t.Errorf("tenant a: %d rebinds, %d samples, %d cache hits; want 1, 20 and 10 (the second and fourth requests)", s.Cache.Rebinds, s.Samples, s.Cache.Hits)
	}
	if got := dbs.headSeries("a"); got != 5 {
		t.Errorf("tenant a's reopened head holds %d series, want 5", got)
	}
}

// TestTenantWriteHandlerForget checks that Forget and Purge drop tenants'
// handlers: a tenant forgotten, or idle past a purge, gets a new handler
// at its next request; one that sent since keeps its own.
func TestTenantWriteHandlerForget(t *testing.T) {
	dbs := newTenantDBs(t)
	h := ingest.NewTenantWriteHandler(nil, dbs.storage, ingest.TenantOptions{
		Options: func(tenant string) ingest.Options { return ingest.Options{MaxLabelsPerSeries: 10} },
	})
	ts := time.Now().Add(-time.Hour).UnixMilli()
	for _, id := range []string{"a", "b"} {
		if w := serveTenant(h, v1Request(t, id, 2, ts)); w.Code != http.StatusNoContent {
			t.Fatalf("tenant %s: %d %s", id, w.Code, w.Body)
		}
	}
	ha := h.Handler("a")
	h.Forget("a")
	if h.Handler("a") != nil {
		t.Fatal("Handler(a) after Forget(a) is not nil")
	}
	serveTenant(h, v1Request(t, "a", 2, ts+1000))
	if got := h.Handler("a"); got == nil || got == ha {
		t.Fatal("tenant a's request after Forget did not make a new handler")
	}
	time.Sleep(2 * time.Millisecond)
	cut := time.Now()
	serveTenant(h, v1Request(t, "b", 2, ts+2000))
	h.Purge(cut)
	if h.Handler("a") != nil || h.Handler("b") == nil {
		t.Fatalf("after Purge, tenants %v; want b's only", h.Tenants())
	}
}
