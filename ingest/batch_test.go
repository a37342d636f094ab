package ingest

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/internal/difftest"
)

// TestCollectBatches checks that collect's batches (decode's NextBatch,
// resolved together by refcache's LookupBatch) give every response and
// TSDB that its path of one series at a time gives, which the
// differential tests compare with Prometheus's handler: over requests of
// several batches whose series come in another order each time, new and
// known series among them, with series over the label limits, without a
// name, with references that do not resolve (2.0), out of order and with
// exemplars, in batches cut anywhere among those.
func TestCollectBatches(t *testing.T) {
	const n = 3*decode.MaxBatch + 5
	T := time.Now().Add(-time.Hour).UnixMilli()
	name := func(i int) string { return fmt.Sprintf("s%03d", i) }
	created := make([]difftest.Series, n)
	for i := range created {
		created[i] = difftest.FloatSeries(T+1000, float64(i), "__name__", name(i), "job", "x")
	}
	// reordered is the series in the order k*step%n (step prime to n),
	// each made by mk.
	reordered := func(step int, mk func(k, i int) difftest.Series) []difftest.Series {
		out := make([]difftest.Series, n)
		for k := range out {
			out[k] = mk(k, k*step%n)
		}
		return out
	}
	mixed := reordered(7, func(k, i int) difftest.Series {
		switch {
		case k%9 == 4:
			return difftest.FloatSeries(T+2000, 1, "__name__", name(i), "a", "1", "b", "2", "job", "x") // over MaxLabelsPerSeries
		case k%11 == 5:
			return difftest.FloatSeries(T+2000, 1, "__name__", name(i), "job", strings.Repeat("x", 40)) // over MaxLabelValueLength
		case k%13 == 6:
			return difftest.FloatSeries(T+2000, 1, "job", name(i)) // no name
		case k%17 == 7:
			return difftest.FloatSeries(T+2000, 1, "__name__", "new"+name(i), "job", "x")
		case k%3 == 0:
			return difftest.FloatSeries(T, 1, "__name__", name(i), "job", "x") // out of order
		case k%23 == 8:
			s := difftest.FloatSeries(T+2000, 1, "__name__", name(i), "job", "x")
			s.Exemplars = []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", name(k)), Value: 1, Ts: T + 2000, HasTs: true}}
			return s
		}
		return difftest.FloatSeries(T+2000, float64(k), "__name__", name(i), "job", "x")
	})
	allGood := reordered(11, func(k, i int) difftest.Series {
		return difftest.FloatSeries(T+3000, float64(k), "__name__", name(i), "job", "x")
	})
	// A 2.0 request whose series' references do not resolve here and there.
	raw := make([][]string, n)
	refs := map[int][]uint32{}
	for k := range raw {
		raw[k] = []string{"__name__", name(k * 13 % n), "job", "x"}
		if k%10 == 3 {
			refs[k] = []uint32{0, 1 << 20}
		}
	}
	steps := map[string][]difftest.Step{
		"v1": {difftest.V1Step(t, created), difftest.V1Step(t, mixed), difftest.V1Step(t, allGood)},
		"v2": {difftest.V2Step(t, created), difftest.V2Step(t, mixed), difftest.RawV2(t, T+2500, refs, raw...), difftest.V2Step(t, allGood)},
	}
	// The statuses, which show that the requests meet what they are made
	// for: mixed fails (1.0 at its first sample out of order, 2.0 listing
	// its errors), and so does the 2.0 request with references that do
	// not resolve.
	codes := map[string][]int{"v1": {204, 400, 204}, "v2": {204, 400, 400, 204}}
	for _, v := range []string{"v1", "v2"} {
		t.Run(v, func(t *testing.T) {
			opts := Options{MaxLabelsPerSeries: 3, MaxLabelValueLength: 16}
			dbB, db1 := difftest.NewDB(t, 1000, false), difftest.NewDB(t, 1000, false)
			hB, h1 := NewWriteHandlerV2(nil, dbB, opts), NewWriteHandlerV2(nil, db1, opts)
			for i, s := range steps[v] {
				wB, w1 := httptest.NewRecorder(), httptest.NewRecorder()
				hB.ServeHTTP(wB, s.Request())
				collectBatch = 1
				h1.ServeHTTP(w1, s.Request())
				collectBatch = decode.MaxBatch
				if wB.Code != w1.Code || wB.Body.String() != w1.Body.String() {
					t.Fatalf("step %d: batches answer %d %q, one series at a time %d %q", i, wB.Code, wB.Body, w1.Code, w1.Body)
				}
				for _, h := range difftest.WrittenHeaders {
					if gB, g1 := wB.Header().Get(h), w1.Header().Get(h); gB != g1 {
						t.Fatalf("step %d: %s = %q in batches, %q one at a time", i, h, gB, g1)
					}
				}
				if gB, g1 := difftest.DumpDB(t, dbB), difftest.DumpDB(t, db1); gB != g1 {
					t.Fatalf("step %d: TSDBs differ:\n%s", i, difftest.LineDiff(gB, g1))
				}
				if want := codes[v][i]; wB.Code != want {
					t.Fatalf("step %d: status %d, want %d: %s", i, wB.Code, want, wB.Body)
				}
			}
			sB, s1 := hB.Stats(), h1.Stats()
			if sB.Series != s1.Series || sB.NewSeries != s1.NewSeries || sB.InvalidSamples != s1.InvalidSamples {
				t.Fatalf("Stats() in batches %+v, one at a time %+v", sB, s1)
			}
		})
	}
}
