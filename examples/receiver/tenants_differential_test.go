package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
)

// TestDifferentialTenants is TestDifferential through the tenant router,
// with two tenants at once: tenant "a" (named by no header: the default
// tenant) gets the steps of one case and tenant "b" those of the next,
// interleaved step by step, and each tenant is compared with a
// Prometheus remote.NewWriteHandler over a TSDB of its own that got the
// same steps: status codes, the 2.0 written headers, error messages and
// everything each tenant's TSDB holds afterwards.
func TestDifferentialTenants(t *testing.T) {
	for _, store := range []string{"tsdb", "ring"} {
		t.Run("exemplars="+store, func(t *testing.T) { testDifferentialTenants(t, store) })
	}
}

func testDifferentialTenants(t *testing.T, store string) {
	cases := difftest.Cases(t)
	for i, ca := range cases {
		cb := cases[(i+1)%len(cases)]
		t.Run(ca.Name+"+"+cb.Name, func(t *testing.T) {
			opts := tenantOptions{Default: "a", MaxExemplars: 100_000}
			if store == "ring" {
				opts.MaxExemplars, opts.RingExemplars = -1, 100_000
			}
			tt := newTestTenants(t, opts)
			byTenant := []struct {
				id, header string
				c          difftest.Case
				dbP        *tsdb.DB
				p          http.Handler
			}{{id: "a", c: ca}, {id: "b", header: "b", c: cb}}
			for k := range byTenant {
				byTenant[k].dbP = newBenchDB(t)
				byTenant[k].p = newImpl(t, "prometheus", byTenant[k].dbP)
			}
			for j := range max(len(ca.Steps), len(cb.Steps)) {
				for _, tn := range byTenant {
					if j >= len(tn.c.Steps) {
						continue
					}
					s := tn.c.Steps[j]
					rP := httptest.NewRecorder()
					tn.p.ServeHTTP(rP, s.Request())
					rK := sendTenant(tt, ingest.DefaultTenantHeader, tn.header, s)
					if difftest.UnlimitedOracle(t, s, rK) {
						continue
					}
					if rK.Code != rP.Code {
						t.Fatalf("tenant %s step %d: status %d, Prometheus %d\ningestkit:  %.500s\nprometheus: %.500s", tn.id, j, rK.Code, rP.Code, rK.Body, rP.Body)
					}
					for _, h := range append(difftest.WrittenHeaders, "Content-Type") {
						if gk, gp := rK.Header().Values(h), rP.Header().Values(h); strings.Join(gk, ",") != strings.Join(gp, ",") {
							t.Errorf("tenant %s step %d: %s = %q, Prometheus %q", tn.id, j, h, gk, gp)
						}
					}
					differs := slices.Contains(tn.c.BodyDiffers, j)
					if !differs && !difftest.SameErrors(rK.Body.String(), rP.Body.String()) {
						t.Errorf("tenant %s step %d: body\n%.1000s\nPrometheus:\n%.1000s", tn.id, j, rK.Body, rP.Body)
					}
					if differs && (rK.Body.Len() == 0) != (rP.Body.Len() == 0) {
						t.Errorf("tenant %s step %d: body %q, Prometheus %q", tn.id, j, rK.Body, rP.Body)
					}
				}
			}
			for _, tn := range byTenant {
				dbK := tt.tenantDB(tn.id)
				if dbK == nil {
					t.Fatalf("tenant %s is not open", tn.id)
				}
				var exK storage.ExemplarQueryable = dbK
				if store == "ring" {
					exK = tt.m[tn.id].exRing
				}
				gotK, gotP := difftest.DumpStorage(t, dbK, exK), difftest.DumpDB(t, tn.dbP)
				if gotK != gotP {
					t.Errorf("tenant %s: TSDB after the requests:\n%.3000s\nPrometheus's:\n%.3000s", tn.id, gotK, gotP)
				}
			}
		})
	}
}
