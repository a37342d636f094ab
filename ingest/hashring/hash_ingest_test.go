package hashring_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/ingest/hashring"
)

// TestHashDecoder checks that package ingest's decoder, in its decoding
// pass, gives every series the hash that Hash gives its labels
// (Series.ThanosHash), for remote-write 1.0 and 2.0
// requests: the two packages share the hashing code, not an import, and
// this test is what keeps them the same.
func TestHashDecoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	var series []labels.Labels
	for i := range 300 {
		kv := []string{"__name__", "metric_" + strconv.Itoa(i%7)}
		// Distinct names: a set with a name twice is not a valid series,
		// and sorting it could differ from labels.FromStrings.
		for _, n := range rng.Perm(30)[:rng.IntN(12)] {
			kv = append(kv, "l"+strconv.Itoa(n), strings.Repeat("v", rng.IntN(200))+strconv.Itoa(i))
		}
		series = append(series, labels.FromStrings(kv...))
	}
	r1 := &prompb.WriteRequest{}
	st := writev2.NewSymbolTable()
	r2 := &writev2.Request{}
	for _, ls := range series {
		ts1 := prompb.TimeSeries{Samples: []prompb.Sample{{Value: 1, Timestamp: 1}}}
		ts2 := writev2.TimeSeries{Samples: []writev2.Sample{{Value: 1, Timestamp: 1}}}
		ls.Range(func(l labels.Label) {
			ts1.Labels = append(ts1.Labels, prompb.Label{Name: l.Name, Value: l.Value})
			ts2.LabelsRefs = append(ts2.LabelsRefs, st.Symbolize(l.Name), st.Symbolize(l.Value))
		})
		r1.Timeseries = append(r1.Timeseries, ts1)
		r2.Timeseries = append(r2.Timeseries, ts2)
	}
	r2.Symbols = st.Symbols()
	b1, err := r1.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	b2, err := r2.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		msg  remoteapi.WriteMessageType
		buf  []byte
	}{
		{"v1", remoteapi.WriteV1MessageType, b1},
		{"v2", remoteapi.WriteV2MessageType, b2},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, tenant := range []string{"", "team-a", strings.Repeat("t", 1500)} {
				var d decode.Decoder
				d.SetTenant(tenant)
				if err := d.Reset(c.buf, c.msg); err != nil {
					t.Fatal(err)
				}
				i := 0
				for ; d.Next(); i++ {
					s := d.Series()
					want := hashring.Hash(tenant, series[i])
					if got := s.ThanosHash(); got != want {
						t.Fatalf("Series.ThanosHash() of %s for tenant %.10q = %#x, want Hash = %#x", series[i], tenant, got, want)
					}
				}
				if err := d.Err(); err != nil {
					t.Fatal(err)
				}
				if i != len(series) {
					t.Fatalf("decoded %d series, want %d", i, len(series))
				}
			}
		})
	}
}
