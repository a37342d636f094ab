package ingest

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"

	"github.com/ingestkit/ingestkit/internal/difftest"
)

// TestRetainedBuffersBounded checks that a worker keeps the buffers of a
// request (its series' handles, records and append order, samples,
// histograms, exemplars and their errors) from one request to the next,
// up to maxRetained elements each, emptied, and no more: a request that
// grew one past maxRetained leaves it, and the buffer paired with it in
// reset, to the garbage collector. Each shape of request grows some of
// the buffers to n elements.
func TestRetainedBuffersBounded(t *testing.T) {
	T := time.Now().Add(-time.Hour).UnixMilli()
	floats := func(n int) []difftest.Series {
		s := make([]difftest.Series, n)
		for i := range s {
			s[i] = difftest.FloatSeries(T, 1, "__name__", "m", "i", fmt.Sprintf("%06d", i))
		}
		return s
	}
	type buffers map[string]int // capacities by name
	caps := func(wk *worker) buffers {
		return buffers{
			"handles": cap(wk.handles), "recs": cap(wk.recs), "samples": cap(wk.samples), "sampleErrs": cap(wk.sampleErrs),
			"hists": cap(wk.hists), "histErrs": cap(wk.histErrs), "exs": cap(wk.exs), "preErrs": cap(wk.preErrs),
			"order": cap(wk.order), "metas": cap(wk.metas),
		}
	}
	for _, shape := range []struct {
		name  string
		msg   remoteapi.WriteMessageType
		opts  Options
		grows []string // the buffers that a request of n elements grows to n
		// series returns a request of n elements (series, samples...).
		series func(n int) []difftest.Series
	}{
		{"series", remoteapi.WriteV1MessageType, Options{}, []string{"handles", "recs", "samples", "sampleErrs"}, floats},
		// 2.0 series with AppendMetadata are appended in request order
		// (appendOrder).
		{"metadata", remoteapi.WriteV2MessageType, Options{AppendMetadata: true}, []string{"handles", "recs", "samples", "sampleErrs", "order", "metas"}, floats},
		{"samples", remoteapi.WriteV1MessageType, Options{}, []string{"samples", "sampleErrs"}, func(n int) []difftest.Series {
			s := difftest.Series{Labels: labels.FromStrings("__name__", "samples")}
			for i := range n {
				s.Floats = append(s.Floats, prompb.Sample{Timestamp: T + int64(i), Value: 1})
			}
			return []difftest.Series{s}
		}},
		{"histograms", remoteapi.WriteV1MessageType, Options{}, []string{"hists", "histErrs"}, func(n int) []difftest.Series {
			s := difftest.Series{Labels: labels.FromStrings("__name__", "histograms")}
			for i := range n {
				s.Hists = append(s.Hists, tsdbutil.GenerateTestHistogram(1))
				s.HistTs = append(s.HistTs, T+int64(i))
			}
			return []difftest.Series{s}
		}},
		{"exemplars", remoteapi.WriteV1MessageType, Options{}, []string{"exs"}, func(n int) []difftest.Series {
			s := difftest.FloatSeries(T, 1, "__name__", "exemplars")
			for i := range n {
				s.Exemplars = append(s.Exemplars, exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "t"), Value: 1, Ts: T + int64(i), HasTs: true})
			}
			return []difftest.Series{s}
		}},
		// 2.0 lists the series of invalid labels before their appends'
		// errors (preErrs).
		{"errors", remoteapi.WriteV2MessageType, Options{}, []string{"handles", "recs", "samples", "preErrs"}, func(n int) []difftest.Series {
			s := make([]difftest.Series, n)
			for i := range s {
				s[i] = difftest.FloatSeries(T, 1, "job", fmt.Sprintf("no-name-%06d", i))
			}
			return s
		}},
	} {
		for _, n := range []int{100, maxRetained / 2, maxRetained + 10} {
			t.Run(fmt.Sprintf("%s/%d", shape.name, n), func(t *testing.T) {
				h := NewWriteHandlerV2(nil, difftest.NewDB(t, 100_000, shape.opts.AppendMetadata), shape.opts)
				wk := h.newWorker()
				series := shape.series(n)
				body := difftest.EncodeV1(t, series)
				if shape.msg == remoteapi.WriteV2MessageType {
					body = difftest.EncodeV2(t, series)
				}
				_, code, err := wk.write(context.Background(), body, shape.msg)
				if want := http.StatusBadRequest; shape.name == "errors" && code != want {
					t.Fatalf("write = %d %v, want %d", code, err, want)
				} else if shape.name != "errors" && err != nil {
					t.Fatalf("write = %d %v", code, err)
				}
				got := caps(wk)
				for name, c := range got {
					if c > maxRetained {
						t.Errorf("after a request of %d %s, %s has capacity %d, over maxRetained %d", n, shape.name, name, c, maxRetained)
					}
				}
				for _, name := range shape.grows {
					if retain := n <= maxRetained; retain != (got[name] >= n) || !retain && got[name] != 0 {
						t.Errorf("after a request of %d %s, %s has capacity %d, want retained %v (buffers %v)", n, shape.name, name, got[name], retain, got)
					}
				}
				if len(wk.handles)+len(wk.recs)+len(wk.samples)+len(wk.hists)+len(wk.exs)+len(wk.preErrs)+len(wk.sampleErrs)+len(wk.histErrs)+len(wk.order)+len(wk.metas) != 0 {
					t.Errorf("buffers not emptied after the request")
				}
				// What they held is cleared: the handles hold the TSDB's
				// labels, the errors their strings.
				for _, hd := range wk.handles[:cap(wk.handles)] {
					if !reflect.ValueOf(hd).IsZero() { // a Handle is not comparable in the slicelabels build
						t.Fatalf("a retained handle still holds %v", hd.Labels())
					}
				}
				for _, e := range wk.preErrs[:cap(wk.preErrs)] {
					if e != nil {
						t.Fatalf("a retained error still holds %v", e)
					}
				}
				for _, m := range wk.metas[:cap(wk.metas)] {
					if m != (metadata.Metadata{}) {
						t.Fatalf("a retained metadata still holds %v", m)
					}
				}
				for _, hs := range wk.hists[:cap(wk.hists)] {
					if hs.H != nil || hs.FH != nil {
						t.Fatalf("a retained histogram sample still holds its histogram")
					}
				}
			})
		}
	}
}
