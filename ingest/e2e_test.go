package ingest_test

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/ingestkit/ingestkit/exemplars"
	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
)

// TestEndToEnd sends remote write 1.0 and 2.0 requests with floats, native
// histograms and exemplars to the WriteHandler on loopback with Prometheus's own
// remote-write client, then reads every sample back from the TSDB with
// db.Querier and every exemplar with the exemplar querier, and checks the
// 2.0 response headers against what was sent; once with the exemplars in
// the TSDB's exemplar storage, once in an exemplars.Ring.
func TestEndToEnd(t *testing.T) {
	t.Run("exemplars=tsdb", func(t *testing.T) { testEndToEnd(t, "tsdb") })
	t.Run("exemplars=ring", func(t *testing.T) { testEndToEnd(t, "ring") })
}

func testEndToEnd(t *testing.T, store string) {
	db := newBenchDB(t)
	var exq storage.ExemplarQueryable = db
	opts := ingest.Options{TrackActiveSeries: true}
	if store == "ring" {
		ring := exemplars.New(1000, exemplars.Options{})
		exq, opts.Exemplars = ring, ingest.RingExemplars{Ring: ring}
	}
	r := ingest.NewWriteHandlerV2(nil, db, opts)
	srv := httptest.NewServer(r)
	defer srv.Close()
	u, err := url.Parse(srv.URL + "/api/v1/write")
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().Add(-time.Hour).UnixMilli()
	var sent []difftest.Series
	for _, v := range []int{1, 2} {
		msg := remoteapi.WriteV1MessageType
		if v == 2 {
			msg = remoteapi.WriteV2MessageType
		}
		cl, err := remote.NewWriteClient("e2e", &remote.ClientConfig{URL: &config_util.URL{URL: u}, Timeout: model.Duration(10 * time.Second), WriteProtoMsg: msg})
		if err != nil {
			t.Fatal(err)
		}
		series := difftest.E2ESeries(v, ts)
		sent = append(sent, series...)
		var body []byte
		if v == 1 {
			body = difftest.EncodeV1(t, series)
		} else {
			body = difftest.EncodeV2(t, series)
		}
		rs, err := cl.Store(context.Background(), difftest.Compress(body), 0)
		if err != nil {
			t.Fatalf("v%d: Store: %v", v, err)
		}
		var want remote.WriteResponseStats
		for _, s := range series {
			want.Samples += len(s.Floats)
			want.Histograms += len(s.Hists) + len(s.FHists)
			want.Exemplars += len(s.Exemplars)
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
		ms := make([]*labels.Matcher, 0, s.Labels.Len())
		s.Labels.Range(func(l labels.Label) { ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, l.Name, l.Value)) })
		ss := q.Select(context.Background(), false, nil, ms...)
		if !ss.Next() {
			t.Fatalf("%s: not in the TSDB", s.Labels)
		}
		it = ss.At().Iterator(it)
		n, nh := 0, 0
		for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
			switch typ {
			case chunkenc.ValFloat:
				gt, gv := it.At()
				if n >= len(s.Floats) || gt != s.Floats[n].Timestamp || gv != s.Floats[n].Value {
					t.Fatalf("%s: sample %d = (%d, %g), want %+v", s.Labels, n, gt, gv, s.Floats)
				}
				n++
			case chunkenc.ValHistogram:
				gt, h := it.AtHistogram(nil)
				h.CounterResetHint = s.Hists[nh].CounterResetHint // the head's own
				checkHistogram(t, s, nh, "histogram", gt, h, s.Hists[nh], h.Equals(s.Hists[nh]))
				nh++
			case chunkenc.ValFloatHistogram:
				gt, h := it.AtFloatHistogram(nil)
				h.CounterResetHint = s.FHists[nh].CounterResetHint
				checkHistogram(t, s, nh, "float histogram", gt, h, s.FHists[nh], h.Equals(s.FHists[nh]))
				nh++
			}
		}
		if n != len(s.Floats) || nh != len(s.Hists)+len(s.FHists) {
			t.Errorf("%s: %d floats and %d histograms, want %d and %d", s.Labels, n, nh, len(s.Floats), len(s.Hists)+len(s.FHists))
		}
		if ss.Next() {
			t.Errorf("%s: selected more than one series", s.Labels)
		}
	}

	// Every exemplar, from the exemplar storage.
	eq, err := exq.ExemplarQuerier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sent {
		if len(s.Exemplars) == 0 {
			continue
		}
		res, err := eq.Select(math.MinInt64, math.MaxInt64, []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchEqual, "pod", s.Labels.Get("pod")),
			labels.MustNewMatcher(labels.MatchEqual, "proto", s.Labels.Get("proto")),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || len(res[0].Exemplars) != len(s.Exemplars) {
			t.Fatalf("%s: exemplars %+v, want %+v", s.Labels, res, s.Exemplars)
		}
		for i, e := range res[0].Exemplars {
			w := s.Exemplars[i]
			if !labels.Equal(e.Labels, w.Labels) || e.Value != w.Value || e.Ts != w.Ts {
				t.Errorf("%s: exemplar %d = %+v, want %+v", s.Labels, i, e, w)
			}
		}
	}

	st := r.Stats()
	if st.Samples != 2*150 || st.Histograms != 2*30 || st.Exemplars != 2*20 || st.ActiveSeries != 120 || st.NewSeries != 120 {
		t.Errorf("Stats() = %+v, want 300 samples, 60 histograms, 40 exemplars, 120 active and new series", st)
	}
}

// checkHistogram fails the test unless the histogram sample nh of s read
// back at gt, got, is the one sent, want (equal says whether they are).
func checkHistogram(t *testing.T, s difftest.Series, nh int, kind string, gt int64, got, want fmt.Stringer, equal bool) {
	t.Helper()
	if gt != s.HistTs[nh] || !equal {
		t.Fatalf("%s: %s %d = %d %s, want %d %s", s.Labels, kind, nh, gt, got, s.HistTs[nh], want)
	}
}
