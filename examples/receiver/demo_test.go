package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"

	"github.com/ingestkit/ingestkit/ingest"
)

// TestDemoOutput runs the -demo mode briefly and checks what it prints: results
// by protocol version for both receivers, and the line that explains the
// 400s, which are all 2.0 requests.
func TestDemoOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("drives both receivers with a few MiB of requests")
	}
	c := serveConfig("tsdb")
	c.demo, c.duration, c.syntheticSeries = true, 300*time.Millisecond, 2000
	if raceEnabled {
		// Some 7 requests a second: enough to reach the 2.0 ones, which
		// come after the four captured 1.0 requests.
		c.duration = 5 * time.Second
	}
	var out strings.Builder
	if err := runDemo(context.Background(), &out, c); err != nil {
		t.Fatalf("runDemo() = %v\n%s", err, out.String())
	}
	text := out.String()
	for _, re := range []string{
		`(?m)^ +receiver +version +requests +partial \(400\) +samples +exemplars$`,
		`(?m)^ +ingestkit +1\.0 +\d+ +0 +\d+ +\d+$`,
		`(?m)^ +ingestkit +2\.0 +\d+ +\d+ +\d+ +\d+$`,
		`(?m)^ +prometheus +1\.0 +\d+ +0 +\d+ +\d+$`,
		`(?m)^ +prometheus +2\.0 +\d+ +\d+ +\d+ +\d+$`,
		`(?m)^The 400s, (\d+) of \d+ requests \(\d+%\), are (\d+) 2\.0 requests .* \d+ of their series carry exemplars and no sample`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("the demo printed no line matching %s:\n%s", re, text)
		}
	}
	if m := regexp.MustCompile(`The 400s, (\d+) of \d+ requests \(\d+%\), are (\d+) 2\.0`).FindStringSubmatch(text); m != nil && m[1] != m[2] {
		t.Errorf("%s 400s, but %s of them 2.0 requests: want all", m[1], m[2])
	}
}

// demoConfig is the command line's defaults for -demo, briefly: a run of
// duration over a synthetic workload of series spread over tenants.
func demoConfig(store string, tenants, series int, duration time.Duration) config {
	c := serveConfig(store)
	c.demo, c.duration, c.syntheticSeries, c.demoTenants = true, duration, series, tenants
	c.tenantHeader, c.maxTenants, c.maxInflightBytes = ingest.DefaultTenantHeader, 1000, defaultMaxInflightBytes
	return c
}

// TestDemo runs the -demo mode briefly, with one tenant and with three
// (-tenants 3), with each exemplar store: runDemo fails unless both sides
// answered alike and every tenant's two TSDBs hold the same data. Its
// temporary directories must be gone afterwards. Under the race detector
// only the runs with tenants, whose requests share the tenant router,
// run: encoding the demo's bodies ahead is slow there.
func TestDemo(t *testing.T) {
	for _, store := range []string{"tsdb", "ring"} {
		for _, tenants := range []int{1, 3} {
			t.Run(fmt.Sprintf("exemplars=%s/tenants=%d", store, tenants), func(t *testing.T) {
				if raceEnabled && tenants == 1 {
					t.Skip("the single-tenant demo runs without the race detector")
				}
				checkEmpty := emptyTempDir(t)
				var out strings.Builder
				if err := runDemo(context.Background(), &out, demoConfig(store, tenants, 3000, 200*time.Millisecond)); err != nil {
					t.Fatalf("runDemo: %v\n%s", err, out.String())
				}
				var want []string // runDemo's own checks suffice with one tenant
				if tenants > 1 {
					want = []string{"both TSDBs hold the same", "default-tenant", "demo-tenant-1", "demo-tenant-2"}
				}
				for _, w := range want {
					if !strings.Contains(out.String(), w) {
						t.Errorf("runDemo's output has no %q:\n%s", w, out.String())
					}
				}
				checkEmpty()
			})
		}
	}
}

// TestSyntheticRequests checks how -tenants spreads the synthetic series:
// each tenant gets its share, in requests of at most demoBatch series
// under its own tenant header, interleaved across tenants; with one tenant,
// requests have no header.
func TestSyntheticRequests(t *testing.T) {
	for _, tc := range []struct {
		tenants, series int
		want            []string // tenant:series of each request, in order
	}{
		{1, 0, nil},
		{1, 1, []string{":1"}},
		{1, 4001, []string{":2000", ":2000", ":1"}},
		{3, 2, []string{"default-tenant:1", "demo-tenant-1:1"}},
		{3, 10000, []string{
			"default-tenant:2000", "demo-tenant-1:2000", "demo-tenant-2:2000",
			"default-tenant:1334", "demo-tenant-1:1333", "demo-tenant-2:1333",
		}},
	} {
		t.Run(fmt.Sprintf("tenants=%d/series=%d", tc.tenants, tc.series), func(t *testing.T) {
			c := demoConfig("tsdb", tc.tenants, tc.series, 0)
			var got []string
			for i, r := range syntheticRequests(c) {
				wantMsg := remoteapi.WriteV1MessageType
				if i%2 == 1 {
					wantMsg = remoteapi.WriteV2MessageType
				}
				if r.Msg != wantMsg {
					t.Errorf("request %d: %s, want %s", i, r.Msg, wantMsg)
				}
				if r.tenant.id != "" && r.tenant.header != ingest.DefaultTenantHeader {
					t.Errorf("request %d: tenant header %q, want %q", i, r.tenant.header, ingest.DefaultTenantHeader)
				}
				s, _, _ := r.Counts()
				got = append(got, fmt.Sprintf("%s:%d", r.tenant.id, s))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("syntheticRequests(-tenants %d, -synthetic-series %d) = %q, want %q", tc.tenants, tc.series, got, tc.want)
			}
		})
	}
}
