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
