//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/rwtest"
)

// TestServerModeTenants runs the receiver as a separate process with
// -tenant-header X-Scope-OrgID: a captured 1.0 request is POSTed as tenant
// team-a, one with a hostile header is refused with a 400 that creates
// nothing, and after a SIGTERM and a restart on the same -data-dir the
// tenant is open again with its series (series_count's "tenants") and
// -data-dir/team-a holds every sample.
func TestServerModeTenants(t *testing.T) {
	bin := buildReceiver(t)
	dir := t.TempDir()
	args := []string{"-listen", "127.0.0.1:0", "-data-dir", dir, "-tenant-header", "X-Scope-OrgID"}
	body, h := rwtest.Raw(t, rwtest.Files(t, 1)[0])
	post := func(p *receiverProcess, tenant string) int { return postAs(t, p, "X-Scope-OrgID", tenant, body, h) }

	p := startReceiver(t, bin, nil, args...)
	if code := post(p, "team-a"); code != http.StatusNoContent {
		t.Fatalf("POST as team-a = %d, want 204", code)
	}
	if code := post(p, "../team-b"); code != http.StatusBadRequest {
		t.Errorf("POST as ../team-b = %d, want 400", code)
	}
	var before tenantsCountResponse
	p.getJSON(t, "/api/v1/series_count", &before)
	p.stop(t)
	a := before.Tenants["team-a"]
	if a.HeadSeries == 0 || a.Samples == 0 || before.Tenants[ingest.DefaultTenant].HeadSeries != 0 {
		t.Fatalf("series_count = %+v, want team-a's series and an empty default tenant", before)
	}

	p = startReceiver(t, bin, nil, args...)
	after := p.waitTenants(t, 2)
	p.stop(t)
	if got := after.Tenants["team-a"]; got.HeadSeries != a.HeadSeries || got.HeadMinTimeMs != a.HeadMinTimeMs || got.HeadMaxTimeMs != a.HeadMaxTimeMs {
		t.Errorf("after a restart team-a has %d series from %d to %d ms, want %d from %d to %d ms",
			got.HeadSeries, got.HeadMinTimeMs, got.HeadMaxTimeMs, a.HeadSeries, a.HeadMinTimeMs, a.HeadMaxTimeMs)
	}
	names := dirNames(t, dir)
	if want := []string{ingest.DefaultTenant, "team-a"}; !slices.Equal(names, want) {
		t.Errorf("-data-dir holds %q, want %q", names, want)
	}
	if series, samples := countDir(t, filepath.Join(dir, "team-a")); series != int(a.HeadSeries) || samples != int(a.Samples+a.Histograms) {
		t.Errorf("-data-dir/team-a holds %d series and %d samples, want %d and %d", series, samples, a.HeadSeries, a.Samples+a.Histograms)
	}
}

// TestServerModeAllowedTenants runs the receiver as a separate process with
// -tenants-allowed-file naming team-a: team-a is written, team-b refused
// with 403; after the file names team-b instead and the process gets a
// SIGHUP, team-b is written and team-a refused. -data-dir holds the
// directories of the two tenants only: the default tenant, not allowed,
// is not opened at start.
func TestServerModeAllowedTenants(t *testing.T) {
	bin := buildReceiver(t)
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "tenants")
	writeAllowFile(t, file, "team-a")
	body, h := rwtest.Raw(t, rwtest.Files(t, 1)[0])
	post := func(p *receiverProcess, tenant string) int {
		return postAs(t, p, ingest.DefaultTenantHeader, tenant, body, h)
	}
	p := startReceiver(t, bin, nil, "-listen", "127.0.0.1:0", "-data-dir", dir, "-tenants-allowed-file", file)
	if code := post(p, "team-a"); code != http.StatusNoContent {
		t.Fatalf("POST as team-a = %d, want 204", code)
	}
	if code := post(p, "team-b"); code != http.StatusForbidden {
		t.Fatalf("POST as team-b = %d, want 403", code)
	}
	writeAllowFile(t, file, "team-b")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The reload is asynchronous: wait for it, up to the file check's own
	// period.
	code := 0
	for deadline := time.Now().Add(2 * allowlistCheck); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code = post(p, "team-b"); code == http.StatusNoContent {
			break
		}
	}
	if code != http.StatusNoContent {
		t.Fatalf("POST as team-b after SIGHUP = %d, want 204\n%s", code, p.stderr)
	}
	if code := post(p, "team-a"); code != http.StatusForbidden {
		t.Errorf("POST as team-a after SIGHUP = %d, want 403", code)
	}
	p.stop(t)
	names := dirNames(t, dir)
	if want := []string{"team-a", "team-b"}; !slices.Equal(names, want) {
		t.Errorf("-data-dir holds %q, want %q", names, want)
	}
}

// waitTenants returns the series counts once n tenants are open: the
// receiver opens those found in -data-dir in the background.
func (p *receiverProcess) waitTenants(t *testing.T, n int) tenantsCountResponse {
	t.Helper()
	var c tenantsCountResponse
	for deadline := time.Now().Add(serverStartTimeout); ; time.Sleep(20 * time.Millisecond) {
		c = tenantsCountResponse{}
		p.getJSON(t, "/api/v1/series_count", &c)
		if len(c.Tenants) >= n {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tenants open after %v, want %d: %+v\n%s", len(c.Tenants), serverStartTimeout, n, c, p.stderr)
		}
	}
}

// TestServerModeMoreTenantsThanLimit restarts the receiver with
// -max-tenants 2 over a data directory of four tenants, written by a
// receiver without the limit: it starts and serves, with the default
// tenant and one other open, and answers a tenant left closed 503 (the
// limit) rather than failing to start.
func TestServerModeMoreTenantsThanLimit(t *testing.T) {
	bin := buildReceiver(t)
	dir := t.TempDir()
	body, h := rwtest.Raw(t, rwtest.Files(t, 1)[0])
	post := func(p *receiverProcess, tenant string) int {
		return postAs(t, p, ingest.DefaultTenantHeader, tenant, body, h)
	}
	p := startReceiver(t, bin, nil, "-listen", "127.0.0.1:0", "-data-dir", dir, "-max-tenants", "0")
	tenants := []string{"t1", "t2", "t3", "t4"}
	for _, id := range tenants {
		if code := post(p, id); code != http.StatusNoContent {
			t.Fatalf("POST as %s = %d, want 204", id, code)
		}
	}
	p.stop(t)

	p = startReceiver(t, bin, nil, "-listen", "127.0.0.1:0", "-data-dir", dir, "-max-tenants", "2")
	c := p.waitTenants(t, 2)
	var closed string
	for _, id := range tenants {
		if _, open := c.Tenants[id]; !open {
			closed = id
		}
	}
	if _, ok := c.Tenants[ingest.DefaultTenant]; !ok || len(c.Tenants) != 2 || closed == "" {
		t.Fatalf("open tenants %v, want the default tenant and one other", c.Tenants)
	}
	if code := post(p, closed); code != http.StatusServiceUnavailable {
		t.Errorf("POST as %s, left closed at the limit, = %d, want 503", closed, code)
	}
	p.stop(t)
}

// postAs POSTs the captured request body, with its headers h, to the
// receiver p as tenant, in the tenant header header, and returns the
// status.
func postAs(t *testing.T, p *receiverProcess, header, tenant string, body []byte, h http.Header) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+p.addr+"/api/v1/write", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	req.Header.Set(header, tenant)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// getJSON decodes the JSON body of a GET of path into v.
func (p *receiverProcess) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := json.Unmarshal(p.get(t, path), v); err != nil {
		t.Fatal(err)
	}
}

// TestServerModeSeriesBudget runs the receiver as a separate process with
// -max-series-total 10: a captured 1.0 request of more series to tenant a
// is answered 400 with 10 of its series written, and the refused ones
// counted with reason="series_budget". Restarted over the same directory,
// the receiver counts the heads' series into the budget (accountLoop,
// every exemplarGrowthCheck), so that a new tenant's series are refused
// and nothing is written for it.
func TestServerModeSeriesBudget(t *testing.T) {
	bin := buildReceiver(t)
	dir := t.TempDir()
	args := []string{"-listen", "127.0.0.1:0", "-data-dir", dir, "-max-series-total", "10"}
	body, h := rwtest.Raw(t, rwtest.Files(t, 1)[0])

	p := startReceiver(t, bin, nil, args...)
	if code := postAs(t, p, ingest.DefaultTenantHeader, "a", body, h); code != http.StatusBadRequest {
		t.Fatalf("POST as a = %d, want 400", code)
	}
	var c tenantsCountResponse
	p.getJSON(t, "/api/v1/series_count", &c)
	if n := c.Tenants["a"].HeadSeries; n != 10 {
		t.Errorf("tenant a holds %d series, want 10", n)
	}
	if n := p.metric(t, `ingestkit_receiver_discarded_series_total{reason="series_budget",tenant="a"}`); n == 0 {
		t.Error("no series counted as refused by the budget")
	}
	p.stop(t)

	p = startReceiver(t, bin, nil, args...)
	p.waitTenants(t, 2)
	time.Sleep(3 * exemplarGrowthCheck) // accountLoop sets the budget from the heads
	if code := postAs(t, p, ingest.DefaultTenantHeader, "b", body, h); code != http.StatusBadRequest {
		t.Errorf("POST as b after a restart = %d, want 400", code)
	}
	c = tenantsCountResponse{}
	p.getJSON(t, "/api/v1/series_count", &c)
	p.stop(t)
	if n := c.Tenants["b"].HeadSeries; n != 0 {
		t.Errorf("after a restart, new tenant b holds %d series, want 0: the budget is spent", n)
	}
}

// TestServerModeTrustedProxy runs the receiver as a separate process with
// -tenant-proxy-header and -tenant-proxy-networks: a request from the
// proxy's network that states team-a lands in team-a, one without the
// proxy's header is answered 401, and with the networks set to another
// address every request is answered 403, and no tenant directory is made
// for any refused one.
func TestServerModeTrustedProxy(t *testing.T) {
	bin := buildReceiver(t)
	body, h := rwtest.Raw(t, rwtest.Files(t, 1)[0])
	dir := t.TempDir()
	p := startReceiver(t, bin, nil, "-listen", "127.0.0.1:0", "-data-dir", dir, "-tenant-proxy-header", "X-Auth-Tenant", "-tenant-proxy-networks", "127.0.0.0/8")
	if code := postAs(t, p, "X-Auth-Tenant", "team-a", body, h); code != http.StatusNoContent {
		t.Errorf("POST stating team-a = %d, want 204", code)
	}
	if code := postAs(t, p, ingest.DefaultTenantHeader, "team-b", body, h); code != http.StatusUnauthorized {
		t.Errorf("POST without the proxy's header = %d, want 401", code)
	}
	if n := p.metric(t, metricsPrefix+`proxy_refused_requests_total{reason="missing"}`); n != 1 {
		t.Errorf("refused{reason=missing} = %v, want 1", n)
	}
	p.stop(t)
	if names, want := dirNames(t, dir), []string{ingest.DefaultTenant, "team-a"}; !slices.Equal(names, want) {
		t.Errorf("-data-dir holds %q, want %q", names, want)
	}

	p = startReceiver(t, bin, nil, "-listen", "127.0.0.1:0", "-data-dir", t.TempDir(), "-tenant-proxy-networks", "192.0.2.1")
	if code := postAs(t, p, ingest.DefaultTenantHeader, "team-a", body, h); code != http.StatusForbidden {
		t.Errorf("POST from outside -tenant-proxy-networks = %d, want 403", code)
	}
	p.stop(t)
}
