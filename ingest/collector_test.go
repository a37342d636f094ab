package ingest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ingestkit/ingestkit/ingest"
)

// TestCollectors reads the metrics of a WriteHandler and of a
// TenantWriteHandler after requests, by name, with the tenant label.
func TestCollectors(t *testing.T) {
	ts := time.Now().Add(-time.Minute).UnixMilli()
	db := openRefusedDB(t, nil)
	h := ingest.NewWriteHandler(nil, db, ingest.Options{})
	serveTenant(h, v1Request(t, "", 3, ts))
	serveTenant(h, v1Request(t, "", 3, ts+1000))
	want := `
# HELP ingestkit_write_samples_total Float samples written to the TSDB.
# TYPE ingestkit_write_samples_total counter
ingestkit_write_samples_total 6
# HELP ingestkit_write_new_series_total Series whose labels were built because neither the ref cache nor the TSDB held them.
# TYPE ingestkit_write_new_series_total counter
ingestkit_write_new_series_total 3
# HELP ingestkit_write_cache_hits_total Series found in the series ref cache.
# TYPE ingestkit_write_cache_hits_total counter
ingestkit_write_cache_hits_total 3
`
	if err := testutil.CollectAndCompare(ingest.NewCollector(h, ingest.CollectorOptions{}), strings.NewReader(want),
		"ingestkit_write_samples_total", "ingestkit_write_new_series_total", "ingestkit_write_cache_hits_total"); err != nil {
		t.Error(err)
	}

	dbs := newTenantDBs(t)
	th := ingest.NewTenantWriteHandler(nil, dbs.storage, ingest.TenantOptions{})
	serveTenant(th, v1Request(t, "a", 2, ts))
	serveTenant(th, v1Request(t, "b", 1, ts))
	serveTenant(th, v1Request(t, "../x", 1, ts))
	want = `
# HELP my_samples_total Float samples written to the TSDB.
# TYPE my_samples_total counter
my_samples_total{tenant="a"} 2
my_samples_total{tenant="b"} 1
# HELP my_tenant_handlers Tenants with a write handler.
# TYPE my_tenant_handlers gauge
my_tenant_handlers 2
# HELP my_invalid_tenant_requests_total Requests refused with a 400 for their tenant header.
# TYPE my_invalid_tenant_requests_total counter
my_invalid_tenant_requests_total 1
`
	c := ingest.NewTenantCollector(th, ingest.CollectorOptions{Prefix: "my_"})
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "my_samples_total", "my_tenant_handlers", "my_invalid_tenant_requests_total"); err != nil {
		t.Error(err)
	}
	if err := prometheus.NewPedanticRegistry().Register(c); err != nil {
		t.Errorf("registering the tenant collector: %v", err)
	}
}

// TestActiveSeriesOptional checks that a handler tracks active series only
// when its Options ask for it (TrackActiveSeries, ActiveSeries or
// MaxSeries), as Prometheus's handler tracks none: without a tracker its
// Stats and Purge count none and its collector has no active_series; with
// one, every series written is counted and reported, per tenant too.
func TestActiveSeriesOptional(t *testing.T) {
	ts := time.Now().Add(-time.Minute).UnixMilli()
	for _, c := range []struct {
		name   string
		opts   ingest.Options
		active int
	}{
		{"default", ingest.Options{}, 0},
		{"TrackActiveSeries", ingest.Options{TrackActiveSeries: true}, 3},
		{"MaxSeries", ingest.Options{MaxSeries: 100}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := ingest.NewWriteHandler(nil, openRefusedDB(t, nil), c.opts)
			serveTenant(h, v1Request(t, "", 3, ts))
			if s := h.Stats(); s.ActiveSeries != c.active || s.Samples != 3 {
				t.Errorf("Stats() = %d active series, %d samples; want %d, 3", s.ActiveSeries, s.Samples, c.active)
			}
			want := ""
			if c.active > 0 {
				want = "# HELP ingestkit_write_active_series Series seen since the last purge of the active-series tracker.\n# TYPE ingestkit_write_active_series gauge\ningestkit_write_active_series 3\n"
			}
			if err := testutil.CollectAndCompare(ingest.NewCollector(h, ingest.CollectorOptions{}), strings.NewReader(want), "ingestkit_write_active_series"); err != nil {
				t.Error(err)
			}
			if _, active := h.Purge(time.Now().Add(time.Hour)); active != c.active {
				t.Errorf("Purge dropped %d active series, want %d", active, c.active)
			}

			dbs := newTenantDBs(t)
			th := ingest.NewTenantWriteHandler(nil, dbs.storage, ingest.TenantOptions{Options: func(string) ingest.Options { return c.opts }})
			serveTenant(th, v1Request(t, "a", 3, ts))
			serveTenant(th, v1Request(t, "b", 3, ts))
			want = ""
			if c.active > 0 {
				want = "# HELP ingestkit_write_active_series Series seen since the last purge of the active-series tracker.\n# TYPE ingestkit_write_active_series gauge\ningestkit_write_active_series{tenant=\"a\"} 3\ningestkit_write_active_series{tenant=\"b\"} 3\n"
			}
			if err := testutil.CollectAndCompare(ingest.NewTenantCollector(th, ingest.CollectorOptions{}), strings.NewReader(want), "ingestkit_write_active_series"); err != nil {
				t.Error(err)
			}
		})
	}
}
