package decode

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/ingestkit/ingestkit/internal/bytestr"
)

// thanosLabel is a label as Thanos receive holds it (labelpb.ZLabel), in
// the order of the request.
type thanosLabel struct{ Name, Value string }

// thanosHash is Thanos's labelpb.HashWithPrefix(tenant, ls): xxhash64 of
// "tenant 0xff name 0xff value 0xff ..." in the order given, written out
// byte by byte as an oracle independent of internal/labelhash.
func thanosHash(tenant string, ls []thanosLabel) uint64 {
	b := append([]byte(tenant), 0xff)
	for _, l := range ls {
		b = append(b, l.Name...)
		b = append(b, 0xff)
		b = append(b, l.Value...)
		b = append(b, 0xff)
	}
	return xxhash.Sum64(b)
}

// decThanosRequests returns series as a 1.0 and a 2.0 request, each series'
// labels in the order given.
func decThanosRequests(tb testing.TB, series [][]thanosLabel) (v1, v2 []byte) {
	tb.Helper()
	r1 := &prompb.WriteRequest{}
	st := writev2.NewSymbolTable()
	r2 := &writev2.Request{}
	for _, ls := range series {
		ts1 := prompb.TimeSeries{Samples: []prompb.Sample{{Value: 1, Timestamp: 1}}}
		ts2 := writev2.TimeSeries{Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}
		for _, l := range ls {
			ts1.Labels = append(ts1.Labels, prompb.Label{Name: l.Name, Value: l.Value})
			ts2.LabelsRefs = append(ts2.LabelsRefs, st.Symbolize(l.Name), st.Symbolize(l.Value))
		}
		r1.Timeseries = append(r1.Timeseries, ts1)
		r2.Timeseries = append(r2.Timeseries, ts2)
	}
	r2.Symbols = st.Symbols()
	return decMarshal(tb, r1), decMarshal(tb, r2)
}

// TestDecodeThanosHash checks Series.ThanosHash against Thanos's
// labelpb.HashWithPrefix (thanosHash, over the labels in request order) and
// Series.TenantHash against the hash of the sorted labels, for series whose
// labels arrive sorted, unsorted, with repeated names and past the hasher's
// 1 KiB buffer. Before ThanosHash, the decoder had only the sorted hash, so
// an unsorted series was routed elsewhere than Thanos routes it.
func TestDecodeThanosHash(t *testing.T) {
	long := strings.Repeat("v", 1500)
	series := [][]thanosLabel{
		{{"__name__", "up"}, {"job", "api"}, {"pod", "a"}},
		{{"job", "api"}, {"__name__", "up"}, {"pod", "a"}},
		{{"pod", "a"}, {"job", "api"}, {"__name__", "up"}},
		{{"__name__", "up"}, {"pod", "b"}, {"job", "api"}, {"zone", "1"}},
		{{"a", "2"}, {"a", "1"}},
		{{"a", "1"}, {"a", "2"}},
		{},
		{{"b", long}, {"a", long}, {"c", ""}},
		{{"__name__", "up"}, {"x", long}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var ls []thanosLabel
		for i := range rng.IntN(20) {
			ls = append(ls, thanosLabel{"l" + strconv.Itoa(rng.IntN(40)), strings.Repeat("x", rng.IntN(200)) + strconv.Itoa(i)})
		}
		slices.SortFunc(ls, func(a, b thanosLabel) int { return strings.Compare(a.Name, b.Name) })
		ls = slices.CompactFunc(ls, func(a, b thanosLabel) bool { return a.Name == b.Name })
		if rng.IntN(2) == 0 {
			rng.Shuffle(len(ls), func(i, j int) { ls[i], ls[j] = ls[j], ls[i] })
		}
		series = append(series, ls)
	}
	v1, v2 := decThanosRequests(t, series)
	for _, tenant := range []string{"", "team-a", strings.Repeat("t", 2000)} {
		for _, c := range []struct {
			name string
			msg  remoteapi.WriteMessageType
			buf  []byte
		}{{"v1", v1Msg, v1}, {"v2", v2Msg, v2}} {
			var d Decoder
			d.SetTenant(tenant)
			_ = d.Reset(c.buf, c.msg)
			for i := 0; d.Next(); i++ {
				s := d.Series()
				ls := series[i]
				sorted := slices.Clone(ls)
				slices.SortStableFunc(sorted, func(a, b thanosLabel) int {
					if c := strings.Compare(a.Name, b.Name); c != 0 {
						return c
					}
					return strings.Compare(a.Value, b.Value)
				})
				// The order of the calls matters to the Set: ask for the
				// request-order hash before and after the sort.
				if got, want := s.ThanosHash(), thanosHash(tenant, ls); got != want {
					t.Fatalf("%s: ThanosHash() of %v for tenant %.10q = %#x, want %#x", c.name, ls, tenant, got, want)
				}
				if got, want := s.tenantHash(), thanosHash(tenant, sorted); got != want {
					t.Fatalf("%s: TenantHash() of %v for tenant %.10q = %#x, want %#x", c.name, ls, tenant, got, want)
				}
				if got, want := s.ThanosHash(), thanosHash(tenant, ls); got != want {
					t.Fatalf("%s: ThanosHash() after TenantHash of %v = %#x, want %#x", c.name, ls, got, want)
				}
				if got, want := s.Hash(), s.Labels().Hash(); got != want {
					t.Fatalf("%s: Hash() of %v = %#x, want %#x", c.name, ls, got, want)
				}
			}
			if err := d.Err(); err != nil {
				t.Fatalf("%s: Err() = %v", c.name, err)
			}
		}
	}
	var d Decoder
	func() {
		defer func() {
			if recover() == nil {
				t.Fatalf("ThanosHash without SetTenant did not panic")
			}
		}()
		_ = d.Reset(v1, v1Msg)
		d.Next()
		_ = d.Series().ThanosHash()
	}()
	if bytestr.Copies {
		return
	}
	d.SetTenant("team-a")
	decode := func() {
		_ = d.Reset(v2, v2Msg)
		for d.Next() {
			_ = d.Series().ThanosHash() + d.Series().tenantHash() + d.Series().Hash()
		}
	}
	decode()
	if got := testing.AllocsPerRun(20, decode); got != 0 {
		t.Fatalf("AllocsPerRun(Next, ThanosHash, TenantHash, Hash) = %v, want 0", got)
	}
}
