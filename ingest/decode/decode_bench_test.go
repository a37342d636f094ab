package decode

import (
	"fmt"
	"testing"

	"github.com/gogo/protobuf/proto"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/ingestkit/ingestkit/internal/promcompat"
	"github.com/ingestkit/ingestkit/internal/rwtest"
)

// decBenchSink keeps the compiler from dropping the benchmarks' work.
var decBenchSink uint64

// BenchmarkDecode compares the Decoder with what Prometheus's remote-write
// handler does with a request body before appending: proto.Unmarshal into a
// fresh message, then per series ToLabels and, to look the series up,
// Hash.
//
// series=5000 is a request of float series with ten typical labels and one
// sample each, where impl=ingestkit hashes each series from the buffer and
// reads its samples. case=captured is a real request (see rwtest) with
// native histograms and exemplars (and 2.0 metadata), where both impls also
// convert every histogram, exemplar and metadata. series=5000/mem=cold is
// series=5000 on cold memory: each iteration decodes the next of many copies
// of the request (rwtest.Cold), so the body comes from main memory, as a
// request that has just arrived does, where series=5000 decodes one body
// that stays in the caches.
func BenchmarkDecode(b *testing.B) {
	for _, rw := range []int{1, 2} {
		msg := map[int]remoteapi.WriteMessageType{1: v1Msg, 2: v2Msg}[rw]
		synthetic, _ := decFloatRequest(b, msg, 5000, false)
		captured := rwtest.Body(b, rwtest.Files(b, rw)[0]) // rw1-0005, rw2-0006
		for _, c := range []struct {
			name string
			bufs [][]byte // taken in turn; all the same request
			full bool
		}{
			{"series=5000", [][]byte{synthetic}, false},
			{"series=5000/mem=cold", rwtest.Cold(b, synthetic), false},
			{"case=captured", [][]byte{captured}, true},
		} {
			b.Run(fmt.Sprintf("rw=%d/%s/impl=prometheus", rw, c.name), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(c.bufs[0])))
				i := 0
				for b.Loop() {
					buf := c.bufs[i%len(c.bufs)]
					i++
					if msg == v1Msg {
						decBenchPrometheusV1(b, buf, c.full)
					} else {
						decBenchPrometheusV2(b, buf, c.full)
					}
				}
			})
			b.Run(fmt.Sprintf("rw=%d/%s/impl=ingestkit", rw, c.name), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(c.bufs[0])))
				var d Decoder
				decBenchIngestkit(b, &d, c.bufs[0], msg, c.full) // grow the reused buffers, outside the timing
				i := 0
				for b.Loop() {
					decBenchIngestkit(b, &d, c.bufs[i%len(c.bufs)], msg, c.full)
					i++
				}
			})
		}
	}
}

// decBenchPrometheusV1 is Prometheus's 1.0 handler up to the append.
func decBenchPrometheusV1(b *testing.B, buf []byte, full bool) {
	var req prompb.WriteRequest
	if err := proto.Unmarshal(buf, &req); err != nil {
		b.Fatal(err)
	}
	sb := labels.NewScratchBuilder(0)
	for _, ts := range req.Timeseries {
		ls := ts.ToLabels(&sb, nil)
		decBenchSink += ls.Hash() + uint64(len(ts.Samples))
		if !full {
			continue
		}
		for _, hp := range ts.Histograms {
			if hp.IsFloatHistogram() {
				decBenchSink += uint64(hp.ToFloatHistogram().Schema)
			} else {
				decBenchSink += uint64(hp.ToIntHistogram().Schema)
			}
		}
		for _, ep := range ts.Exemplars {
			decBenchSink += uint64(ep.ToExemplar(&sb, nil).Ts)
		}
	}
}

// decBenchPrometheusV2 is Prometheus's 2.0 handler up to the append.
func decBenchPrometheusV2(b *testing.B, buf []byte, full bool) {
	var req writev2.Request
	if err := proto.Unmarshal(buf, &req); err != nil {
		b.Fatal(err)
	}
	sb := labels.NewScratchBuilder(0)
	for _, ts := range req.Timeseries {
		ls, err := ts.ToLabels(&sb, req.Symbols)
		if err != nil {
			b.Fatal(err)
		}
		decBenchSink += ls.Hash() + uint64(len(ts.Samples))
		if !full {
			continue
		}
		m, err := promcompat.ToMetadata(ts, req.Symbols)
		if err != nil {
			b.Fatal(err)
		}
		decBenchSink += uint64(len(m.Help))
		for _, hp := range ts.Histograms {
			if hp.IsFloatHistogram() {
				decBenchSink += uint64(hp.ToFloatHistogram().Schema)
			} else {
				decBenchSink += uint64(hp.ToIntHistogram().Schema)
			}
		}
		for _, ep := range ts.Exemplars {
			e, err := ep.ToExemplar(&sb, req.Symbols)
			if err != nil {
				b.Fatal(err)
			}
			decBenchSink += uint64(e.Ts)
		}
	}
}

// decBenchIngestkit decodes buf with d as a receiver built on it does.
func decBenchIngestkit(b *testing.B, d *Decoder, buf []byte, msg remoteapi.WriteMessageType, full bool) {
	if err := d.Reset(buf, msg); err != nil {
		b.Fatal(err)
	}
	for d.Next() {
		s := d.Series()
		decBenchSink += s.Hash() + uint64(len(s.Samples()))
		if !full {
			continue
		}
		m, _ := s.Metadata()
		decBenchSink += uint64(len(m.Help))
		for _, h := range s.Histograms() {
			if h.FH != nil {
				decBenchSink += uint64(h.FH.Schema)
			} else {
				decBenchSink += uint64(h.H.Schema)
			}
		}
		for _, e := range s.Exemplars() {
			decBenchSink += uint64(e.Ts)
		}
	}
	if err := d.Err(); err != nil {
		b.Fatal(err)
	}
}
