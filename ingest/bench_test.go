package ingest_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"

	"github.com/ingestkit/ingestkit/internal/difftest"
	"github.com/ingestkit/ingestkit/internal/rwbench"
	"github.com/ingestkit/ingestkit/internal/rwtest"
	"github.com/ingestkit/ingestkit/internal/workload"
)

// receiveCase is one BenchmarkReceive case: the requests one op sends, in
// order.
type receiveCase struct {
	name string
	reqs func(tb testing.TB) []*workload.Request
	// partial is true when Prometheus's own handler answers the case's
	// valid requests with a 400 partial write: the captured 2.0 requests
	// hold series of exemplars without samples, which Prometheus's sender
	// makes and both handlers reject.
	partial bool
	// reshard, if true, lists the series of every encoded op in an order
	// of its own (a 1.0 request's; see rwbench.Reshard).
	reshard bool
	// tracked, if true, adds impl=ingestkit-tracked: the WriteHandler
	// with Options.TrackActiveSeries.
	tracked bool
}

func receiveCases() []receiveCase {
	typical := func(n int) func(testing.TB) []*workload.Request {
		return func(testing.TB) []*workload.Request {
			return []*workload.Request{workload.Typical(fmt.Sprintf("typical-%d", n), remoteapi.WriteV1MessageType, workload.TypicalSeries(n, ""))}
		}
	}
	captured := func(v int) func(testing.TB) []*workload.Request {
		return func(tb testing.TB) []*workload.Request { return rwtest.Requests(tb, v) }
	}
	return []receiveCase{
		{name: "typical-500", reqs: typical(500), tracked: true},
		{name: "typical-5000", reqs: typical(5000)},
		{name: "typical-20000", reqs: typical(20000)},
		{name: "resharded-5000", reqs: typical(5000), reshard: true, tracked: true},
		{name: "resharded-50000", reqs: typical(50000), reshard: true},
		{name: "large-3x10MiB", reqs: func(testing.TB) []*workload.Request { return []*workload.Request{workload.Large(3, 10<<20)} }},
		{name: "captured-rw1", reqs: captured(1)},
		{name: "captured-rw2", reqs: captured(2), partial: true},
	}
}

// BenchmarkReceive sends remote-write requests to Prometheus's
// remote.NewWriteHandler (impl=prometheus) and to the WriteHandler
// (impl=ingestkit), each over its own tsdb.DB with exemplar storage, in
// process: handler.ServeHTTP with a request and response writer reused
// from op to op, the same request bytes for both (rwbench.Receive). One op
// is one request, or for captured-rw1 and captured-rw2 the four captured
// requests of that version in order. The series exist (steady state):
// before timing, one op's requests are written.
//
//   - status=ok: every op carries new samples, 100 ms after the previous
//     op's. The bodies are encoded ahead, up to 16 MiB of them at a time,
//     with the timer stopped.
//   - status=conflict: every op carries samples older than those written,
//     which both answer with 400 and storage.ErrOutOfOrderSample; nothing
//     is written, so the same bytes are sent again.
//
// Cases: typical-N is one 1.0 request (the message Prometheus sends by
// default) of N distinct series of some 250 bytes of labels, one sample
// each; large-3x10MiB is a 2.0 request of 3 series sharing a 10 MiB label
// value (1.0 repeats it in each series, 30 MiB of a body; with more series
// both versions are refused, 1.0 by the 32 MiB decoded size limit, 2.0 by
// the expanded size limit, Options.MaxExpandedSize, which defaults to it); the
// captured cases are testdata/remote-write, whose 2.0 requests both answer
// with a 400 partial write (see receiveCase.partial).
//
// resharded-5000 is typical-5000 as a sender that reshards or restarts
// sends it: every encoded op lists the series in an order of its own (a
// permutation drawn afresh for each, from a seeded source that both impls
// share), the warm-up request that creates them in yet another. With
// status=conflict the stale ops are encoded ahead like those of status=ok,
// each in its own order, all at the same old timestamp, so that no order
// repeats from op to op (up to the 16 MiB of bodies encoded at a time).
// resharded-50000 is the same with ten times the series, whose cache
// entries and head series no longer fit in the CPU's caches: the lookups
// of each request then read them from memory (collect's batches), and
// its decoded request is past maxPooledRequest, so that each op's worker
// gets a new Decoder afterwards.
//
// impl=ingestkit is the WriteHandler with the options the case needs and
// no others: like Prometheus's handler, it tracks no active series. For
// typical-500 and resharded-5000, impl=ingestkit-tracked is the same
// handler with Options.TrackActiveSeries, to show what tracking costs.
//
// The multi-tenant case, tenants-100x500, is examples/receiver's
// BenchmarkReceive, through the receiver's tenant router.
func BenchmarkReceive(b *testing.B) {
	for _, c := range receiveCases() {
		reqs := c.reqs(b)
		for _, status := range []string{"ok", "conflict"} {
			impls := []string{"prometheus", "ingestkit"}
			if c.tracked {
				impls = append(impls, "ingestkit-tracked")
			}
			for _, impl := range impls {
				b.Run(fmt.Sprintf("case=%s/status=%s/impl=%s", c.name, status, impl), func(b *testing.B) {
					var rng *rand.Rand
					if c.reshard {
						rng = rand.New(rand.NewPCG(19, 5000))
					}
					h := newImpl(b, impl, newBenchDB(b), difftest.Features{})
					brs := make([]*rwbench.Request, len(reqs))
					for j, r := range reqs {
						brs[j] = rwbench.NewRequest(r.Msg)
					}
					rwbench.Receive(b, h, brs, reqs, status == "conflict", c.partial, rng)
				})
			}
		}
	}
}
