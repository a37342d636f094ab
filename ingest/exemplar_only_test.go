package ingest_test

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/exemplars"
	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
)

// The series of the exemplar-only tests: samples and exemplars at T+d,
// where T is an hour ago.
func exOnlyT() int64 { return time.Now().Add(-time.Hour).UnixMilli() }

func exOnlyFloat(name string, t int64) difftest.Series {
	return difftest.Series{Labels: labels.FromStrings("__name__", name), Floats: []prompb.Sample{{Timestamp: t, Value: 1}}}
}

// exOnly is a 2.0 series carrying only exemplars, one at each timestamp,
// as Prometheus's sender sends an exemplar.
func exOnly(name string, ts ...int64) difftest.Series {
	s := difftest.Series{Labels: labels.FromStrings("__name__", name)}
	for _, t := range ts {
		s.Exemplars = append(s.Exemplars, exemplar.Exemplar{Labels: labels.FromStrings("trace_id", name+"-"+strconv.FormatInt(t, 10)), Value: 1, Ts: t, HasTs: true})
	}
	return s
}

// exOnlyStore is a write handler with AcceptExemplarOnlySeries over a
// TSDB, with its exemplars in the TSDB's storage or an exemplars.Ring,
// and what reads them back.
type exOnlyStore struct {
	db  *tsdb.DB
	exq storage.ExemplarQueryable
	h   http.Handler
}

func newExOnlyStore(t *testing.T, store string, accept bool) exOnlyStore {
	db := newBenchDB(t)
	s := exOnlyStore{db: db, exq: db}
	opts := ingest.Options{AcceptExemplarOnlySeries: accept}
	if store == "ring" {
		ring := exemplars.New(1000, exemplars.Options{})
		s.exq, opts.Exemplars = ring, ingest.RingExemplars{Ring: ring}
	}
	s.h = ingest.NewWriteHandlerV2(nil, db, opts)
	return s
}

// send posts series as one 2.0 request.
func (s exOnlyStore) send(t *testing.T, series ...difftest.Series) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, difftest.V2Step(t, series).Request())
	return rec
}

// exemplarTimes returns the timestamps of the exemplars stored for the
// series that match ms (every series if none), by their label key.
func (s exOnlyStore) exemplarTimes(t *testing.T, key string, ms ...*labels.Matcher) map[string][]int64 {
	t.Helper()
	if len(ms) == 0 {
		ms = []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")}
	}
	q, err := s.exq.ExemplarQuerier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := q.Select(math.MinInt64, math.MaxInt64, ms)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int64{}
	for _, r := range res {
		for _, e := range r.Exemplars {
			k := r.SeriesLabels.Get(key)
			out[k] = append(out[k], e.Ts)
		}
	}
	return out
}

// TestExemplarOnlySeries checks the 2.0 series that carry exemplars and no
// sample under Options.AcceptExemplarOnlySeries, with the semantics of
// prometheus/prometheus#19416: such a series is accepted and its exemplars
// appended to its series as Prometheus's handler appends a series'
// exemplars, in request order; the exemplars of a series the TSDB does not
// hold at that point are dropped, logged and not counted, without an
// error; a series with no sample, no histogram and no exemplar is still
// refused. Both exemplar stores.
func TestExemplarOnlySeries(t *testing.T) {
	for _, store := range []string{"tsdb", "ring"} {
		t.Run("exemplars="+store, func(t *testing.T) { testExemplarOnlySeries(t, store) })
	}
}

func testExemplarOnlySeries(t *testing.T, store string) {
	T := exOnlyT()
	type want struct {
		code               int
		samples, exemplars string // the Written headers
		bodyHas            []string
		stored             map[string][]int64 // exemplar timestamps by metric name, after the request
		series             []string           // metric names the TSDB holds, after the request
	}
	cases := []struct {
		name  string
		setup [][]difftest.Series // requests before, each answered 204
		req   []difftest.Series
		want  want
	}{{
		name:  "known series",
		setup: [][]difftest.Series{{exOnlyFloat("a", T)}},
		req:   []difftest.Series{exOnly("a", T+1, T+2)},
		want:  want{code: http.StatusNoContent, samples: "0", exemplars: "2", stored: map[string][]int64{"a": {T + 1, T + 2}}, series: []string{"a"}},
	}, {
		name: "never seen",
		req:  []difftest.Series{exOnly("n", T)},
		want: want{code: http.StatusNoContent, samples: "0", exemplars: "0", stored: map[string][]int64{}},
	}, {
		name: "series later in the request",
		req:  []difftest.Series{exOnly("l", T), exOnlyFloat("l", T)},
		want: want{code: http.StatusNoContent, samples: "1", exemplars: "0", stored: map[string][]int64{}, series: []string{"l"}},
	}, {
		name: "series earlier in the request",
		req:  []difftest.Series{exOnlyFloat("e", T), exOnly("e", T)},
		want: want{code: http.StatusNoContent, samples: "1", exemplars: "1", stored: map[string][]int64{"e": {T}}, series: []string{"e"}},
	}, {
		// A duplicate is skipped silently and counted, as the TSDB's
		// storage has Prometheus's handler count it.
		name:  "duplicates",
		setup: [][]difftest.Series{{exOnlyFloat("a", T), exOnly("a", T)}},
		req:   []difftest.Series{exOnly("a", T), exOnly("a", T)},
		want:  want{code: http.StatusNoContent, samples: "0", exemplars: "2", stored: map[string][]int64{"a": {T}}, series: []string{"a"}},
	}, {
		name:  "out of order",
		setup: [][]difftest.Series{{exOnlyFloat("a", T), exOnly("a", T+10)}},
		req:   []difftest.Series{exOnly("a", T+5, T+20)},
		want: want{code: http.StatusBadRequest, samples: "0", exemplars: "1", bodyHas: []string{"out of order exemplar"},
			stored: map[string][]int64{"a": {T + 10, T + 20}}, series: []string{"a"}},
	}, {
		name:  "mixed",
		setup: [][]difftest.Series{{exOnlyFloat("a", T), exOnly("a", T+10)}},
		req: []difftest.Series{
			exOnlyFloat("a", T+1), exOnly("a", T+11),
			exOnly("n", T),                      // never seen
			exOnly("l", T), exOnlyFloat("l", T), // its series later
			exOnlyFloat("e", T), exOnly("e", T+1), // its series earlier
			{Labels: labels.FromStrings("__name__", "z")}, // nothing at all
			exOnly("a", T+5),  // out of order
			exOnly("a", T+11), // duplicate
		},
		want: want{code: http.StatusBadRequest, samples: "3", exemplars: "3",
			bodyHas: []string{"TimeSeries must contain at least one sample or histogram for series {__name__=\"z\"}", "out of order exemplar"},
			stored:  map[string][]int64{"a": {T + 10, T + 11}, "e": {T + 1}}, series: []string{"a", "e", "l"}},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newExOnlyStore(t, store, true)
			for i, req := range c.setup {
				if rec := s.send(t, req...); rec.Code != http.StatusNoContent {
					t.Fatalf("setup request %d: %d %s", i, rec.Code, rec.Body)
				}
			}
			rec := s.send(t, c.req...)
			if rec.Code != c.want.code {
				t.Errorf("status %d, want %d (%s)", rec.Code, c.want.code, rec.Body)
			}
			if got := rec.Header().Get(difftest.HeaderSamplesWritten); got != c.want.samples {
				t.Errorf("%s: %q, want %q", difftest.HeaderSamplesWritten, got, c.want.samples)
			}
			if got := rec.Header().Get(difftest.HeaderExemplarsWritten); got != c.want.exemplars {
				t.Errorf("%s: %q, want %q", difftest.HeaderExemplarsWritten, got, c.want.exemplars)
			}
			for _, sub := range c.want.bodyHas {
				if !strings.Contains(rec.Body.String(), sub) {
					t.Errorf("body %q does not say %q", rec.Body, sub)
				}
			}
			got := s.exemplarTimes(t, "__name__")
			for _, v := range got {
				slices.Sort(v)
			}
			if len(got) != len(c.want.stored) {
				t.Errorf("exemplars stored %v, want %v", got, c.want.stored)
			}
			for name, w := range c.want.stored {
				if !slices.Equal(got[name], w) {
					t.Errorf("exemplars of %s at %v, want %v", name, got[name], w)
				}
			}
			if names := seriesNames(t, s.db); !slices.Equal(names, c.want.series) {
				t.Errorf("TSDB holds %v, want %v", names, c.want.series)
			}
		})
	}
}

// seriesNames returns the metric names of db's series, sorted.
func seriesNames(t *testing.T, db *tsdb.DB) []string {
	t.Helper()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	names, _, err := q.LabelValues(context.Background(), "__name__", nil)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestExemplarOnlySeriesOff checks that without Options.AcceptExemplarOnlySeries
// a request with exemplar-only series is answered as Prometheus's handler
// answers it, which refuses them, and leaves the same TSDB.
func TestExemplarOnlySeriesOff(t *testing.T) {
	T := exOnlyT()
	setup := []difftest.Series{exOnlyFloat("a", T), exOnly("a", T+10)}
	req := []difftest.Series{exOnlyFloat("a", T+1), exOnly("a", T+11), exOnly("n", T), exOnly("l", T), exOnlyFloat("l", T), {Labels: labels.FromStrings("__name__", "z")}}
	var recs [2]*httptest.ResponseRecorder
	var dumps [2]string
	for i, impl := range []string{"prometheus", "ingestkit"} {
		db := newBenchDB(t)
		h := newImpl(t, impl, db, difftest.Features{})
		for _, series := range [][]difftest.Series{setup, req} {
			recs[i] = httptest.NewRecorder()
			h.ServeHTTP(recs[i], difftest.V2Step(t, series).Request())
		}
		dumps[i] = difftest.DumpDB(t, db)
	}
	p, k := recs[0], recs[1]
	if k.Code != p.Code || k.Code != http.StatusBadRequest || !difftest.SameErrors(k.Body.String(), p.Body.String()) {
		t.Errorf("ingestkit %d %q, Prometheus %d %q", k.Code, k.Body, p.Code, p.Body)
	}
	for _, hd := range difftest.WrittenHeaders {
		if k.Header().Get(hd) != p.Header().Get(hd) {
			t.Errorf("%s: ingestkit %q, Prometheus %q", hd, k.Header().Get(hd), p.Header().Get(hd))
		}
	}
	if dumps[0] != dumps[1] {
		t.Errorf("TSDBs differ:\n%s", difftest.LineDiff(dumps[1], dumps[0]))
	}
}

// TestEndToEndExemplarOnlySeries sends 2.0 requests with Prometheus's own
// remote-write client, shaped as a Prometheus server's sender shapes them
// (prometheus/prometheus#17857): each series' samples in one TimeSeries,
// each exemplar in a TimeSeries of its own after them. With
// AcceptExemplarOnlySeries every exemplar sent is stored and counted, in
// both exemplar stores; without it the client gets Prometheus's 400 and
// none is stored.
func TestEndToEndExemplarOnlySeries(t *testing.T) {
	for _, store := range []string{"tsdb", "ring"} {
		for _, accept := range []bool{true, false} {
			t.Run("exemplars="+store+"/accept="+strconv.FormatBool(accept), func(t *testing.T) {
				s := newExOnlyStore(t, store, accept)
				srv := httptest.NewServer(s.h)
				defer srv.Close()
				u, err := url.Parse(srv.URL + "/api/v1/write")
				if err != nil {
					t.Fatal(err)
				}
				cl, err := remote.NewWriteClient("e2e", &remote.ClientConfig{URL: &config_util.URL{URL: u}, Timeout: model.Duration(10 * time.Second), WriteProtoMsg: remoteapi.WriteV2MessageType})
				if err != nil {
					t.Fatal(err)
				}
				var req, exOnlies []difftest.Series
				want := map[string][]int64{}
				nEx := 0
				for _, ser := range difftest.E2ESeries(2, exOnlyT()) {
					for _, e := range ser.Exemplars {
						exOnlies = append(exOnlies, difftest.Series{Labels: ser.Labels, Exemplars: []exemplar.Exemplar{e}})
						key := ser.Labels.Get("pod")
						want[key] = append(want[key], e.Ts)
						nEx++
					}
					ser.Exemplars = nil
					req = append(req, ser)
				}
				req = append(req, exOnlies...)
				rs, err := cl.Store(context.Background(), difftest.Compress(difftest.EncodeV2(t, req)), 0)
				if !accept {
					if err == nil || !strings.Contains(err.Error(), "TimeSeries must contain at least one sample or histogram") {
						t.Fatalf("Store: %v, want Prometheus's 400 for exemplar-only series", err)
					}
					if got := s.exemplarTimes(t, "__name__"); len(got) != 0 {
						t.Errorf("stored exemplars %v, want none", got)
					}
					return
				}
				if err != nil {
					t.Fatalf("Store: %v", err)
				}
				if rs.Exemplars != nEx || nEx == 0 {
					t.Errorf("exemplars written %d, want %d", rs.Exemplars, nEx)
				}
				got := s.exemplarTimes(t, "pod", labels.MustNewMatcher(labels.MatchEqual, "proto", "v2"))
				if len(got) != len(want) {
					t.Errorf("exemplars of %d series stored, want %d", len(got), len(want))
				}
				for pod, w := range want {
					if !slices.Equal(got[pod], w) {
						t.Errorf("%s: exemplars at %v, want %v", pod, got[pod], w)
					}
				}
			})
		}
	}
}
