package main

import (
	"fmt"
	"testing"

	"github.com/ingestkit/ingestkit/internal/rwbench"
)

// BenchmarkReceive is the multi-tenant case of package ingest's
// BenchmarkReceive, which holds the others, with the same sub-benchmark
// names: tenants-100x500, where one op is 100 requests of 500 typical
// series, one to each of 100 tenants in turn (the THANOS-TENANT header),
// through a router to one TSDB per tenant: the receiver's own
// (tenants.go) for impl=ingestkit, and for impl=prometheus an equivalent
// router over one remote.NewWriteHandler per tenant (benchTenantRouter).
// The tenants' TSDBs are opened before timing. status=ok and
// status=conflict are as there (rwbench.Receive); after timing, every
// tenant must hold its series up to the last op's samples.
// TestBenchTenantsIdentical checks that both routers leave the same data
// in every tenant.
func BenchmarkReceive(b *testing.B) {
	name := fmt.Sprintf("tenants-%dx%d", benchTenants, benchTenantSeries)
	reqs := tenantRequests()
	for _, status := range []string{"ok", "conflict"} {
		for _, impl := range []string{"prometheus", "ingestkit"} {
			b.Run(fmt.Sprintf("case=%s/status=%s/impl=%s", name, status, impl), func(b *testing.B) {
				target := newBenchTarget(b, impl, benchTenants)
				ts := rwbench.Receive(b, target.h, newBenchRequests(reqs, benchTenants), reqs, status == "conflict", false, nil)
				// Outside the timer.
				target.checkTenants(b, reqs, ts)
			})
		}
	}
}
