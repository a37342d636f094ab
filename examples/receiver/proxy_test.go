package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ingestkit/ingestkit/ingest"
)

// TestTrustedProxy sends requests through the checks of
// -tenant-proxy-header X-Auth-Tenant and -tenant-proxy-networks to real
// tenants: each refused request is answered with its status and reason
// before any tenant is opened, and each accepted one lands in the tenant
// the proxy states.
func TestTrustedProxy(t *testing.T) {
	tt := newTestTenants(t, tenantOptions{})
	p, err := newTrustedProxy("x-auth-tenant", "10.0.0.0/8, 192.0.2.7", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	h := p.wrap(tt)
	ts := time.Now().Add(-time.Minute).UnixMilli()
	for _, c := range []struct {
		name, remote string
		headers      map[string][]string
		code         int
		reason       string
		tenant       string // where the series lands
	}{
		{"outside the networks", "192.0.2.8:4000", map[string][]string{"X-Auth-Tenant": {"team-a"}}, http.StatusForbidden, "network", ""},
		{"no proxy header", "10.1.2.3:4000", nil, http.StatusUnauthorized, "missing", ""},
		{"empty proxy header", "10.1.2.3:4000", map[string][]string{"X-Auth-Tenant": {""}}, http.StatusUnauthorized, "missing", ""},
		{"two proxy headers", "10.1.2.3:4000", map[string][]string{"X-Auth-Tenant": {"team-a", "team-b"}}, http.StatusUnauthorized, "missing", ""},
		{"invalid tenant", "10.1.2.3:4000", map[string][]string{"X-Auth-Tenant": {"../etc"}}, http.StatusUnauthorized, "invalid", ""},
		{"another tenant named", "10.1.2.3:4000", map[string][]string{"X-Auth-Tenant": {"team-a"}, ingest.DefaultTenantHeader: {"team-b"}}, http.StatusForbidden, "mismatch", ""},
		{"the tenant named twice", "10.1.2.3:4000", map[string][]string{"X-Auth-Tenant": {"team-a"}, ingest.DefaultTenantHeader: {"team-a", "team-a"}}, http.StatusForbidden, "mismatch", ""},
		{"the same tenant named", "10.1.2.3:4000", map[string][]string{"X-Auth-Tenant": {"team-a"}, ingest.DefaultTenantHeader: {"team-a"}}, http.StatusNoContent, "", "team-a"},
		{"no tenant named", "192.0.2.7:4000", map[string][]string{"X-Auth-Tenant": {"team-b"}}, http.StatusNoContent, "", "team-b"},
		{"an IPv4-mapped address", "[::ffff:10.0.0.1]:4000", map[string][]string{"X-Auth-Tenant": {"team-c"}}, http.StatusNoContent, "", "team-c"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := tt.openTenants()
			req := seriesOf(t, ts, 1, strings.ReplaceAll(c.name, " ", "_")).Request()
			req.RemoteAddr = c.remote
			for k, vs := range c.headers {
				for _, v := range vs {
					req.Header.Add(k, v)
				}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.code, rec.Body)
			}
			if c.reason != "" {
				if got := testutil.ToFloat64(p.refused.WithLabelValues(c.reason)); got < 1 {
					t.Errorf("refused{reason=%q} = %v, want it counted", c.reason, got)
				}
				if after := tt.openTenants(); len(after) != len(before) {
					t.Errorf("a refused request opened a tenant: %v, then %v", before, after)
				}
				return
			}
			got := readSeries(t, tt.tenantDB(c.tenant))
			if _, ok := got[seriesKey(strings.ReplaceAll(c.name, " ", "_"))]; !ok {
				t.Errorf("tenant %s holds %v, want the request's series", c.tenant, got)
			}
		})
	}
	if got := testutil.ToFloat64(p.refused.WithLabelValues("mismatch")); got != 2 {
		t.Errorf("refused{reason=mismatch} = %v, want 2", got)
	}
}

// TestTrustedProxyFlags checks the flags' errors and that none set checks
// nothing.
func TestTrustedProxyFlags(t *testing.T) {
	if p, err := newTrustedProxy("", "", "", nil); p != nil || err != nil {
		t.Errorf("no flags: %v, %v; want no checks", p, err)
	}
	for _, c := range [][3]string{
		{"", "10.0.0.0/33", ""},
		{"", "proxy.example", ""},
		{"thanos-tenant", "", ""},
		{"X-Scope-OrgID", "", "X-Scope-OrgID"},
	} {
		if _, err := newTrustedProxy(c[0], c[1], c[2], nil); err == nil {
			t.Errorf("newTrustedProxy(%q, %q, %q) = nil error, want one", c[0], c[1], c[2])
		}
	}
	// Only the networks: any header, the tenant header as it is.
	p, err := newTrustedProxy("", "127.0.0.1", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	tt := newTestTenants(t, tenantOptions{})
	req := seriesOf(t, time.Now().UnixMilli(), 1, "x").Request()
	req.RemoteAddr = "127.0.0.1:1"
	req.Header.Set(ingest.DefaultTenantHeader, "team-z")
	rec := httptest.NewRecorder()
	p.wrap(tt).ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent || tt.tenantDB("team-z") == nil {
		t.Errorf("status %d, tenants %v; want 204 into team-z", rec.Code, tt.openTenants())
	}
}
