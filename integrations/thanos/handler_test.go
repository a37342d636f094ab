//go:build slicelabels

package thanos

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/prometheus/storage"
	"github.com/thanos-io/thanos/pkg/receive"
	"github.com/thanos-io/thanos/pkg/store/labelpb"
	"github.com/thanos-io/thanos/pkg/store/storepb/prompb"

	"github.com/ingestkit/ingestkit/ingest"
)

// multiTSDBStorages is ingest's TenantStorage over a MultiTSDB, as
// docs/thanos.md has it: each tenant's *tsdb.DB, to which the handler's
// cache binds, so that a pruned and re-created tenant gets an empty one.
func multiTSDBStorages(m *receive.MultiTSDB) ingest.TenantStorage {
	return func(_ context.Context, tenant string) (storage.Appendable, func(), error) {
		a, err := m.TenantAppendable(tenant)
		if err != nil {
			return nil, nil, err
		}
		if rs, ok := a.(*receive.ReadyStorage); ok {
			if db := rs.Get(); db != nil {
				return db, nil, nil
			}
		}
		return nil, nil, fmt.Errorf("%w: %w", ingest.ErrTenantUnavailable, receive.ErrNotReady)
	}
}

// TestHandlerMatchesThanos sends the same remote-write requests over HTTP
// to Thanos's Handler (with its Writer) and to ingest's TenantWriteHandler,
// each in front of a MultiTSDB of its own, as a single-node receive: new
// series, the same again, histograms and exemplars, in two tenants; every
// request is answered 2xx by both (Thanos's 200, ingest's 204) and the
// tenants' TSDBs end identical. A request with samples out of order and
// duplicate is answered 409 by Thanos and 400 by ingest, as Prometheus's
// handler answers it; there they part: Thanos writes the request's other
// samples, Prometheus's 1.0 handler none (docs/thanos.md). Then both are
// pruned and the valid requests sent again, into new TSDBs, which end
// identical. Series without a metric name or with labels out of order are
// left out: Thanos's Writer takes the first and refuses the second,
// Prometheus's handler the other way round.
func TestHandlerMatchesThanos(t *testing.T) {
	thanosStorage, ikStorage := newMultiTSDB(t), newMultiTSDB(t)
	thanosURL := startHandlerT(t, "thanos", &stepStorage{storage: thanosStorage})
	ik := ingest.NewTenantWriteHandler(slog.New(slog.DiscardHandler), multiTSDBStorages(ikStorage), ingest.TenantOptions{})
	srv := httptest.NewServer(ik)
	t.Cleanup(srv.Close)

	var valid, conflicting []writeRequest
	for i, r := range requests() {
		if r.tenant != "a" && r.tenant != "b" {
			continue
		}
		var series []prompb.TimeSeries
		for _, s := range r.series {
			if labelpb.ValidateLabels(s.Labels) == nil {
				series = append(series, s)
			}
		}
		if i == 2 { // the request of out-of-order and duplicate samples
			conflicting = append(conflicting, writeRequest{r.tenant, series})
		} else {
			valid = append(valid, writeRequest{r.tenant, series})
		}
	}
	send := func(round string, reqs []writeRequest, thanosCode, ikCode int) {
		t.Helper()
		for i, r := range reqs {
			body := encode(t, r.series)
			if got, want := postTenant(t, srv.URL, r.tenant, body), postTenant(t, thanosURL, r.tenant, body); got != ikCode || want != thanosCode {
				t.Errorf("%s request %d (tenant %s): ingest answered %d, Thanos %d; want %d and %d", round, i, r.tenant, got, want, ikCode, thanosCode)
			}
		}
	}
	compare := func(round string) {
		t.Helper()
		for _, name := range []string{"a", "b"} {
			if got, want := dump(t, tenantDB(t, ikStorage, name)), dump(t, tenantDB(t, thanosStorage, name)); got != want {
				t.Errorf("%s: tenant %s's TSDB through ingest's handler:\n%s\nwant, as through Thanos's:\n%s", round, name, got, want)
			}
		}
	}
	send("valid", valid, 200, 204)
	compare("valid")
	send("conflicting", conflicting, 409, 400)
	for _, m := range []*receive.MultiTSDB{thanosStorage, ikStorage} {
		if err := m.Prune(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(m.TSDBLocalClients()); n != 0 {
			t.Fatalf("%d tenants left after the prune, want none", n)
		}
	}
	send("valid, after the prune", valid, 200, 204)
	compare("valid, after the prune")
}
