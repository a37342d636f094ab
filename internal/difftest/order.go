package difftest

import (
	"fmt"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"github.com/prometheus/prometheus/tsdb/tsdbutil"
)

// orderSeries is the number of series of the differential cases of
// orderCases.
const orderSeries = 40

// orderCases are the differential cases of the write handler's appends
// in refcache's AppendOrder (ingest's appendAll): requests whose series come in an order other
// than the one the TSDB created them in, so that the order of the appends
// is not that of the request, with errors whose order in the request is
// not their order by ref. T is the timestamp the series start at.
func orderCases(tb testing.TB, T int64) []Case {
	S := func(i int, t int64) Series {
		return FloatSeries(t, float64(i), "__name__", fmt.Sprintf("s%02d", i), "job", "x")
	}
	// created: every series at T+1000, in order, so that their refs go up
	// with i.
	created := make([]Series, orderSeries)
	for i := range created {
		created[i] = S(i, T+1000)
	}
	// resharded: a permutation of the series (7 is prime to 40), one in
	// three with a sample older than the one written (out of order), one
	// in five duplicate of it (same timestamp, another value).
	resharded := make([]Series, orderSeries)
	for k := range resharded {
		i := k * 7 % orderSeries
		switch {
		case i%3 == 0:
			resharded[k] = S(i, T)
		case i%5 == 0:
			resharded[k] = FloatSeries(T+1000, -1, "__name__", fmt.Sprintf("s%02d", i), "job", "x")
		default:
			resharded[k] = S(i, T+2000)
		}
	}
	// duplicates: some series twice or three times in one request, new
	// ones and known ones, in and out of order.
	duplicates := []Series{
		S(30, T+2000), S(3, T+2000), S(50, T+1000), S(30, T+3000), S(51, T+1000), S(3, T+1500),
		S(50, T+2000), S(30, T+2500), S(51, T+1000), S(1, T+2000), S(50, T+500),
	}
	// firstNotByRef: the request's first error (series 20, out of order)
	// comes after an accepted sample and before an error of a series of a
	// lower ref (series 2, a duplicate timestamp), whose text differs.
	firstNotByRef := []Series{
		S(35, T+2000), S(20, T), FloatSeries(T+1000, -1, "__name__", "s02", "job", "x"), S(10, T+2000),
	}
	// mixed: plain series around a histogram series, an invalid histogram,
	// a series with exemplars and series with invalid labels, some out of
	// order, out of ref order.
	badHist := tsdbutil.GenerateTestHistogram(1)
	badHist.Count = 1
	hist := func(name string, h *histogram.Histogram, t int64) Series {
		return Series{Labels: labels.FromStrings("__name__", name, "job", "x"), Hists: []*histogram.Histogram{h}, HistTs: []int64{t}}
	}
	withEx := func(s Series) Series {
		s.Exemplars = []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", "t1"), Value: 1, Ts: T + 2000, HasTs: true}}
		return s
	}
	mixed := func(v2 bool) []Series {
		ms := []Series{
			S(25, T+2000), S(12, T), hist("h_ok", tsdbutil.GenerateTestHistogram(2), T+2000), S(5, T+2000), S(4, T),
			withEx(S(33, T+2000)), S(8, T+2000), S(6, T), {Labels: labels.FromStrings("job", "no-name"), Floats: S(0, T).Floats},
			S(2, T+2000), S(39, T), S(60, T+2000),
		}
		if v2 {
			// 1.0 ends at the first error; 2.0 lists them, so an invalid
			// histogram among the rejections.
			ms = append(ms[:4:4], append([]Series{hist("h_bad", badHist, T+2000)}, ms[4:]...)...)
		}
		return ms
	}
	histSetup := append(append([]Series(nil), created...), hist("h_ok", tsdbutil.GenerateTestHistogram(1), T+1000))
	// inOrderTail: the v1 case's only error is the last series, so that the
	// rest is appended, then rolled back.
	inOrderTail := append(append([]Series(nil), resharded[1:]...), S(0, T))
	for k := range inOrderTail[:len(inOrderTail)-1] {
		i := (k + 1) * 7 % orderSeries
		inOrderTail[k] = S(i, T+2000)
	}
	// allGood: resharded with every sample new, which 1.0 writes.
	allGood := make([]Series, orderSeries)
	for k := range allGood {
		allGood[k] = S(k*7%orderSeries, T+2000)
	}
	// withHelp: allGood with 2.0 metadata whose help changes from that of
	// created (EncodeV2's), so that with metadata-wal-records every series
	// writes a metadata record, which the head writes in the order of the
	// appends.
	withHelp := make([]Series, orderSeries)
	for k, s := range allGood {
		s.Meta = &Meta{Type: writev2.Metadata_METRIC_TYPE_GAUGE, Help: "changed help"}
		withHelp[k] = s
	}
	// manyErrors: a 2.0 request with more errors than the response lists
	// (MaxReportedErrors), of every kind in turn: a series without
	// samples, a sample out of order, invalid labels, a sample written.
	// Past the listed errors the handler only counts them (worker.collect).
	var manyErrors []Series
	for k := range 3 * MaxReportedErrors {
		i := k % orderSeries
		switch k % 4 {
		case 0:
			manyErrors = append(manyErrors, Series{Labels: labels.FromStrings("__name__", fmt.Sprintf("empty%02d", k), "job", "x")})
		case 1:
			manyErrors = append(manyErrors, S(i, T))
		case 2:
			manyErrors = append(manyErrors, FloatSeries(T+2000, 1, "__name__", fmt.Sprintf("bad%02d", k), "v", "\xff"))
		default:
			manyErrors = append(manyErrors, S(i, T+2000))
		}
	}
	return []Case{
		{Name: "v2 errors past those listed", Steps: []Step{V2Step(tb, created), V2Step(tb, manyErrors), V2Step(tb, manyErrors[:4*5])}},
		{Name: "v2 resharded with metadata", Steps: []Step{V2Step(tb, created), V2Step(tb, withHelp)}, Metadata: true},
		{Name: "v1 resharded", Steps: []Step{V1Step(tb, created), V1Step(tb, allGood)}},
		{Name: "v1 resharded out of order", Steps: []Step{V1Step(tb, created), V1Step(tb, resharded), V1Step(tb, allGood)}},
		{Name: "v1 resharded, last series out of order", Steps: []Step{V1Step(tb, created), V1Step(tb, inOrderTail), V1Step(tb, allGood)}},
		{Name: "v2 resharded out of order partial", Steps: []Step{V2Step(tb, created), V2Step(tb, resharded), V2Step(tb, allGood)}},
		{Name: "v1 duplicate series", Steps: []Step{V1Step(tb, created), V1Step(tb, duplicates), V1Step(tb, duplicates[:3])}},
		{Name: "v2 duplicate series partial", Steps: []Step{V2Step(tb, created), V2Step(tb, duplicates)}},
		{Name: "v1 new duplicate series", Steps: []Step{V1Step(tb, []Series{S(50, T), S(51, T), S(50, T+1000), S(50, T+2000), S(51, T+1000)})}},
		{Name: "v1 first error not first by ref", Steps: []Step{V1Step(tb, created), V1Step(tb, firstNotByRef)}},
		{Name: "v2 first error not first by ref", Steps: []Step{V2Step(tb, created), V2Step(tb, firstNotByRef)}},
		{Name: "v1 plain and histogram and exemplar series", Steps: []Step{V1Step(tb, histSetup), V1Step(tb, mixed(false))}},
		{Name: "v1 plain and histogram and exemplar series, error after them", Steps: []Step{V1Step(tb, histSetup), V1Step(tb, []Series{
			S(25, T+2000), hist("h_ok", tsdbutil.GenerateTestHistogram(2), T+2000), S(5, T+2000), withEx(S(33, T+2000)), S(8, T+2000), S(39, T), S(2, T),
		})}},
		{Name: "v2 plain and histogram and exemplar series", Steps: []Step{V2Step(tb, histSetup), V2Step(tb, mixed(true))}},
	}
}
