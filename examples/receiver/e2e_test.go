package main

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/ingestkit/ingestkit/exemplars"
)

// e2eSeries returns, for protocol version v, floats series with exemplars,
// integer and float native histogram series, each with samples at ts,
// ts+1000, ...
func e2eSeries(v int, ts int64) []testSeries {
	var out []testSeries
	proto := "v" + strconv.Itoa(v)
	for i := range 50 {
		s := testSeries{ls: labels.FromStrings("__name__", "e2e_requests_total", "proto", proto, "pod", fmt.Sprintf("pod-%d", i))}
		for j := range 3 {
			t := ts + int64(j)*1000
			s.floats = append(s.floats, prompb.Sample{Timestamp: t, Value: float64(i*10 + j)})
		}
		if i%5 == 0 {
			s.exemplars = []exemplar.Exemplar{
				{Labels: labels.FromStrings("trace_id", fmt.Sprintf("%032x", i)), Value: float64(i), Ts: ts + 500, HasTs: true},
				{Labels: labels.FromStrings("trace_id", fmt.Sprintf("%032x", i+1000)), Value: float64(i) + 0.5, Ts: ts + 1500, HasTs: true},
			}
		}
		out = append(out, s)
	}
	for i := range 5 {
		s := testSeries{ls: labels.FromStrings("__name__", "e2e_latency_seconds", "proto", proto, "kind", "int", "i", strconv.Itoa(i))}
		for j := range 3 {
			s.hists = append(s.hists, tsdbutil.GenerateTestHistogram(int64(i+j)))
			s.histTs = append(s.histTs, ts+int64(j)*1000)
		}
		out = append(out, s)
		f := testSeries{ls: labels.FromStrings("__name__", "e2e_latency_seconds", "proto", proto, "kind", "float", "i", strconv.Itoa(i))}
		for j := range 3 {
			f.fhists = append(f.fhists, tsdbutil.GenerateTestFloatHistogram(int64(i+j)))
			f.histTs = append(f.histTs, ts+int64(j)*1000)
		}
		out = append(out, f)
	}
	return out
}

// TestEndToEnd sends remote write 1.0 and 2.0 requests with floats, native
// histograms and exemplars to the receiver on loopback with Prometheus's own
// remote-write client, then reads every sample back from the TSDB with
// db.Querier and every exemplar with the exemplar querier, and checks the
// 2.0 response headers against what was sent; once with the exemplars in
// the TSDB's exemplar storage, once in an exemplars.Ring.
func TestEndToEnd(t *testing.T) {
	for _, store := range []string{"tsdb", "ring"} {
		t.Run("exemplars="+store, func(t *testing.T) { testEndToEnd(t, store) })
	}
}

func testEndToEnd(t *testing.T, store string) {
	db := newBenchDB(t)
	var exq storage.ExemplarQueryable = db
	var opts Options
	if store == "ring" {
		ring := exemplars.New(1000, exemplars.Options{})
		exq, opts.Exemplars = ring, RingExemplars{ring}
	}
	r, err := NewReceiver(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newMux(r, db, prometheus.NewRegistry()))
	defer srv.Close()
	u, err := url.Parse(srv.URL + "/api/v1/write")
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().Add(-time.Hour).UnixMilli()
	var sent []testSeries
	for _, v := range []int{1, 2} {
		msg := remoteapi.WriteV1MessageType
		if v == 2 {
			msg = remoteapi.WriteV2MessageType
		}
		cl, err := remote.NewWriteClient("e2e", &remote.ClientConfig{URL: &config_util.URL{URL: u}, Timeout: model.Duration(10 * time.Second), WriteProtoMsg: msg})
		if err != nil {
			t.Fatal(err)
		}
		series := e2eSeries(v, ts)
		sent = append(sent, series...)
		var body []byte
		if v == 1 {
			body = encodeV1(t, series)
		} else {
			body = encodeV2(t, series)
		}
		rs, err := cl.Store(context.Background(), compress(body), 0)
		if err != nil {
			t.Fatalf("v%d: Store: %v", v, err)
		}
		var want remote.WriteResponseStats
		for _, s := range series {
			want.Samples += len(s.floats)
			want.Histograms += len(s.hists) + len(s.fhists)
			want.Exemplars += len(s.exemplars)
		}
		if v == 2 {
			want.Confirmed = true
		} else {
			want = remote.WriteResponseStats{} // 1.0 responses carry no counts
		}
		if rs != want {
			t.Errorf("v%d: response stats = %+v, want %+v", v, rs, want)
		}
	}

	// Every sample, from the TSDB.
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var it chunkenc.Iterator
	for _, s := range sent {
		ms := make([]*labels.Matcher, 0, s.ls.Len())
		s.ls.Range(func(l labels.Label) { ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value)) })
		ss := q.Select(context.Background(), false, nil, ms...)
		if !ss.Next() {
			t.Fatalf("%s: not in the TSDB", s.ls)
		}
		it = ss.At().Iterator(it)
		n, nh := 0, 0
		for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
			switch typ {
			case chunkenc.ValFloat:
				gt, gv := it.At()
				if n >= len(s.floats) || gt != s.floats[n].Timestamp || gv != s.floats[n].Value {
					t.Fatalf("%s: sample %d = (%d, %g), want %+v", s.ls, n, gt, gv, s.floats)
				}
				n++
			case chunkenc.ValHistogram:
				gt, h := it.AtHistogram(nil)
				want := s.hists[nh]
				h.CounterResetHint = want.CounterResetHint
				if gt != s.histTs[nh] || !h.Equals(want) {
					t.Fatalf("%s: histogram %d = %d %s, want %d %s", s.ls, nh, gt, h, s.histTs[nh], want)
				}
				nh++
			case chunkenc.ValFloatHistogram:
				gt, h := it.AtFloatHistogram(nil)
				want := s.fhists[nh]
				h.CounterResetHint = want.CounterResetHint
				if gt != s.histTs[nh] || !h.Equals(want) {
					t.Fatalf("%s: float histogram %d = %d %s, want %d %s", s.ls, nh, gt, h, s.histTs[nh], want)
				}
				nh++
			}
		}
		if n != len(s.floats) || nh != len(s.hists)+len(s.fhists) {
			t.Errorf("%s: %d floats and %d histograms, want %d and %d", s.ls, n, nh, len(s.floats), len(s.hists)+len(s.fhists))
		}
		if ss.Next() {
			t.Errorf("%s: selected more than one series", s.ls)
		}
	}

	// Every exemplar, from the exemplar storage.
	eq, err := exq.ExemplarQuerier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sent {
		if len(s.exemplars) == 0 {
			continue
		}
		res, err := eq.Select(math.MinInt64, math.MaxInt64, []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchEqual, "pod", s.ls.Get("pod")),
			labels.MustNewMatcher(labels.MatchEqual, "proto", s.ls.Get("proto")),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || len(res[0].Exemplars) != len(s.exemplars) {
			t.Fatalf("%s: exemplars %+v, want %+v", s.ls, res, s.exemplars)
		}
		for i, e := range res[0].Exemplars {
			w := s.exemplars[i]
			if !labels.Equal(e.Labels, w.Labels) || e.Value != w.Value || e.Ts != w.Ts {
				t.Errorf("%s: exemplar %d = %+v, want %+v", s.ls, i, e, w)
			}
		}
	}

	st := r.Stats()
	if st.Samples != 2*150 || st.Histograms != 2*30 || st.Exemplars != 2*20 || st.ActiveSeries != 120 || st.NewSeries != 120 {
		t.Errorf("Stats() = %+v, want 300 samples, 60 histograms, 40 exemplars, 120 active and new series", st)
	}
}
