package decode

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ingestkit/ingestkit/internal/promcompat"
)

// decRand returns a seeded source, so that a failure can be reproduced.
func decRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x1d)) }

// decNames are the names decLabels draws from: common ones, invalid ones,
// and names that share their first eight bytes or more, which the V1
// decoder's order check (labelset.KeyOrder) cannot tell apart.
var decNames = []string{
	"__name__", "job", "instance", "namespace", "pod", "container", "method",
	"code", "le", "a", "zz", "\xff", "na\xffme", "", "service.name", "ü",
	"kubernetes_namespace", "kubernetes_pod_name", "label_app_kubernetes_io_name",
	"label_app_kubernetes_io_instance", "abcdefgh", "abcdefgh0", "abcdefgi",
}

// decString returns a random string of n bytes, sometimes binary.
func decString(r *rand.Rand, n int) string {
	b := make([]byte, n)
	binary := r.IntN(4) == 0
	for i := range b {
		if binary {
			b[i] = byte(r.Uint32())
		} else {
			b[i] = byte('a' + r.IntN(26))
		}
	}
	return string(b)
}

// decLabelValue returns a random label value: often short, sometimes empty,
// all 0xff, or at the lengths where varints and buffers change size.
func decLabelValue(r *rand.Rand) string {
	switch r.IntN(12) {
	case 0:
		return ""
	case 1:
		return strings.Repeat("\xff", 1+r.IntN(3))
	case 2:
		return decString(r, []int{127, 128, 129, 254, 255, 256, 1024, 1500}[r.IntN(8)])
	default:
		return decString(r, 1+r.IntN(20))
	}
}

// decLabels returns random labels with distinct names, in random order one
// time in four.
func decLabels(r *rand.Rand, maxN int) []labels.Label {
	n := r.IntN(maxN + 1)
	seen := map[string]bool{}
	var out []labels.Label
	for range n {
		name := decNames[r.IntN(len(decNames))]
		if r.IntN(4) == 0 {
			name = decString(r, 1+r.IntN(8))
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, labels.Label{Name: name, Value: decLabelValue(r)})
	}
	slices.SortFunc(out, func(a, b labels.Label) int { return strings.Compare(a.Name, b.Name) })
	if r.IntN(4) == 0 {
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out
}

// decFloat returns a random sample value, special values included.
func decFloat(r *rand.Rand) float64 {
	switch r.IntN(10) {
	case 0:
		return math.Float64frombits(value.StaleNaN)
	case 1:
		return math.Inf(1 - 2*r.IntN(2))
	case 2:
		return math.Copysign(0, -1)
	default:
		return r.NormFloat64() * 1e3
	}
}

// decTimestamp returns a random timestamp, sometimes 0 or negative.
func decTimestamp(r *rand.Rand) int64 {
	switch r.IntN(8) {
	case 0:
		return 0
	case 1:
		return -r.Int64N(1 << 40)
	default:
		return 1_700_000_000_000 + r.Int64N(1<<30)
	}
}

// decHistogram returns a random integer histogram: exponential, or with
// custom buckets (schema -53).
func decHistogram(r *rand.Rand) *histogram.Histogram {
	h := &histogram.Histogram{
		CounterResetHint: histogram.CounterResetHint(r.IntN(4)),
		Schema:           int32(r.IntN(13) - 4),
		ZeroThreshold:    math.Abs(r.NormFloat64()) * 1e-3,
		ZeroCount:        r.Uint64N(100),
		Count:            r.Uint64N(1000),
		Sum:              r.NormFloat64() * 100,
	}
	spans := func() ([]histogram.Span, []int64) {
		var sp []histogram.Span
		var deltas []int64
		for range r.IntN(4) {
			s := histogram.Span{Offset: int32(r.IntN(7) - 3), Length: uint32(r.IntN(4))}
			sp = append(sp, s)
			for range s.Length {
				deltas = append(deltas, r.Int64N(21)-10)
			}
		}
		return sp, deltas
	}
	h.PositiveSpans, h.PositiveBuckets = spans()
	if r.IntN(4) == 0 {
		h.Schema = histogram.CustomBucketsSchema
		h.ZeroThreshold, h.ZeroCount = 0, 0
		n := 0
		for _, s := range h.PositiveSpans {
			n += int(s.Offset) + int(s.Length)
		}
		cv := 0.5
		for range max(n, 1) {
			h.CustomValues = append(h.CustomValues, cv)
			cv += r.Float64() + 0.01
		}
	} else {
		h.NegativeSpans, h.NegativeBuckets = spans()
	}
	return h
}

// decFloatHistogram returns a random float histogram.
func decFloatHistogram(r *rand.Rand) *histogram.FloatHistogram {
	fh := decHistogram(r).ToFloat(nil)
	fh.Count += r.Float64()
	fh.Sum = decFloat(r)
	return fh
}

// decUnknown returns fields unknown to every message of both protocols
// (their highest field number is 17), of every wire type.
func decUnknown(r *rand.Rand) []byte {
	var b []byte
	for range 1 + r.IntN(2) {
		num := protowire.Number(20 + r.IntN(2000))
		if r.IntN(8) == 0 {
			num = protowire.MaxValidNumber
		}
		switch r.IntN(5) {
		case 0:
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, r.Uint64())
		case 1:
			b = protowire.AppendTag(b, num, protowire.Fixed32Type)
			b = protowire.AppendFixed32(b, r.Uint32())
		case 2:
			b = protowire.AppendTag(b, num, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, r.Uint64())
		case 3:
			b = protowire.AppendTag(b, num, protowire.BytesType)
			b = protowire.AppendBytes(b, []byte(decString(r, r.IntN(40))))
		case 4:
			b = protowire.AppendTag(b, num, protowire.StartGroupType)
			b = protowire.AppendTag(b, 1, protowire.VarintType)
			b = protowire.AppendVarint(b, r.Uint64())
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			b = protowire.AppendBytes(b, []byte("in a group"))
			b = protowire.AppendTag(b, num, protowire.EndGroupType)
		}
	}
	return b
}

// decMaybeUnknown returns unknown fields one time in six.
func decMaybeUnknown(r *rand.Rand) []byte {
	if r.IntN(6) == 0 {
		return decUnknown(r)
	}
	return nil
}

// decGenV1 returns a random 1.0 request of n series.
func decGenV1(r *rand.Rand, n int) *prompb.WriteRequest {
	req := &prompb.WriteRequest{}
	for range n {
		var ts prompb.TimeSeries
		for _, l := range decLabels(r, 12) {
			ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value, XXX_unrecognized: decMaybeUnknown(r)})
		}
		for range r.IntN(4) {
			ts.Samples = append(ts.Samples, prompb.Sample{Value: decFloat(r), Timestamp: decTimestamp(r), XXX_unrecognized: decMaybeUnknown(r)})
		}
		if r.IntN(3) == 0 {
			for range 1 + r.IntN(2) {
				var hp prompb.Histogram
				if r.IntN(2) == 0 {
					hp = prompb.FromIntHistogram(decTimestamp(r), decHistogram(r))
				} else {
					hp = prompb.FromFloatHistogram(decTimestamp(r), decFloatHistogram(r))
				}
				hp.XXX_unrecognized = decMaybeUnknown(r)
				ts.Histograms = append(ts.Histograms, hp)
			}
		}
		for range r.IntN(3) {
			e := prompb.Exemplar{Value: decFloat(r), Timestamp: decTimestamp(r), XXX_unrecognized: decMaybeUnknown(r)}
			for _, l := range decLabels(r, 3) {
				e.Labels = append(e.Labels, prompb.Label{Name: l.Name, Value: l.Value})
			}
			ts.Exemplars = append(ts.Exemplars, e)
		}
		ts.XXX_unrecognized = decMaybeUnknown(r)
		req.Timeseries = append(req.Timeseries, ts)
	}
	for range r.IntN(3) {
		req.Metadata = append(req.Metadata, prompb.MetricMetadata{
			Type:             prompb.MetricMetadata_MetricType(r.IntN(8)),
			MetricFamilyName: decString(r, 10),
			Help:             decString(r, 30),
			Unit:             "seconds",
		})
	}
	req.XXX_unrecognized = decMaybeUnknown(r)
	if r.IntN(4) == 0 {
		// Field 2 is reserved in WriteRequest (Cortex's source field).
		req.XXX_unrecognized = protowire.AppendTag(req.XXX_unrecognized, 2, protowire.VarintType)
		req.XXX_unrecognized = protowire.AppendVarint(req.XXX_unrecognized, 1)
	}
	return req
}

// decGenV2 returns a random 2.0 request of n series.
func decGenV2(r *rand.Rand, n int) *writev2.Request {
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	refs := func(ls []labels.Label) []uint32 {
		var out []uint32
		for _, l := range ls {
			out = append(out, st.Symbolize(l.Name), st.Symbolize(l.Value))
		}
		return out
	}
	for range n {
		ts := writev2.TimeSeries{LabelsRefs: refs(decLabels(r, 12))}
		for range r.IntN(4) {
			ts.Samples = append(ts.Samples, writev2.Sample{Value: decFloat(r), Timestamp: decTimestamp(r), StartTimestamp: decTimestamp(r), XXX_unrecognized: decMaybeUnknown(r)})
		}
		if r.IntN(3) == 0 {
			for range 1 + r.IntN(2) {
				var hp writev2.Histogram
				if r.IntN(2) == 0 {
					hp = promcompat.FromIntHistogram(decTimestamp(r), decTimestamp(r), decHistogram(r))
				} else {
					hp = promcompat.FromFloatHistogram(decTimestamp(r), decTimestamp(r), decFloatHistogram(r))
				}
				hp.XXX_unrecognized = decMaybeUnknown(r)
				ts.Histograms = append(ts.Histograms, hp)
			}
		}
		for range r.IntN(3) {
			ts.Exemplars = append(ts.Exemplars, writev2.Exemplar{
				LabelsRefs:       refs(decLabels(r, 3)),
				Value:            decFloat(r),
				Timestamp:        decTimestamp(r),
				XXX_unrecognized: decMaybeUnknown(r),
			})
		}
		if r.IntN(4) != 0 {
			ts.Metadata = writev2.Metadata{
				Type:             writev2.Metadata_MetricType(r.IntN(9)), // 8 is out of range
				HelpRef:          st.Symbolize(decString(r, r.IntN(40))),
				UnitRef:          st.Symbolize([]string{"", "seconds", "bytes"}[r.IntN(3)]),
				XXX_unrecognized: decMaybeUnknown(r),
			}
		}
		ts.XXX_unrecognized = decMaybeUnknown(r)
		if r.IntN(8) == 0 {
			// Field 6 is reserved in TimeSeries (the former created_timestamp).
			ts.XXX_unrecognized = protowire.AppendTag(ts.XXX_unrecognized, 6, protowire.VarintType)
			ts.XXX_unrecognized = protowire.AppendVarint(ts.XXX_unrecognized, 12345)
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	req.XXX_unrecognized = decMaybeUnknown(r)
	return req
}

// decFields splits a message into its top-level fields.
func decFields(tb testing.TB, b []byte) [][]byte {
	tb.Helper()
	var out [][]byte
	for len(b) > 0 {
		_, _, n := protowire.ConsumeField(b)
		if n < 0 {
			tb.Fatalf("splitting fields: %v", protowire.ParseError(n))
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// decInterleave moves a 2.0 request's symbols among its other top-level
// fields, keeping the order of the symbols and that of the rest, which
// keeps its meaning.
func decInterleave(tb testing.TB, r *rand.Rand, b []byte) []byte {
	tb.Helper()
	var syms, rest [][]byte
	for _, f := range decFields(tb, b) {
		if num, _, _ := protowire.ConsumeTag(f); num == v2FieldSymbols {
			syms = append(syms, f)
		} else {
			rest = append(rest, f)
		}
	}
	var out []byte
	for len(syms) > 0 || len(rest) > 0 {
		if len(rest) == 0 || len(syms) > 0 && r.IntN(2) == 0 {
			out, syms = append(out, syms[0]...), syms[1:]
		} else {
			out, rest = append(out, rest[0]...), rest[1:]
		}
	}
	return out
}

// decRepackRefs re-encodes the labels_refs of a 2.0 request's series and
// exemplars as a random mix of unpacked varints and packed runs, all of
// which the generated code reads as one list.
func decRepackRefs(tb testing.TB, r *rand.Rand, b []byte) []byte {
	tb.Helper()
	var repack func(msg []byte, inner protowire.Number) []byte
	repack = func(msg []byte, inner protowire.Number) []byte {
		var out []byte
		for _, f := range decFields(tb, msg) {
			num, typ, n := protowire.ConsumeTag(f)
			switch {
			case num == 1 && typ == protowire.BytesType:
				packed, _ := protowire.ConsumeBytes(f[n:])
				var refs []uint64
				for len(packed) > 0 {
					v, m := protowire.ConsumeVarint(packed)
					refs = append(refs, v)
					packed = packed[m:]
				}
				for len(refs) > 0 {
					if r.IntN(2) == 0 {
						out = protowire.AppendTag(out, 1, protowire.VarintType)
						out = protowire.AppendVarint(out, refs[0])
						refs = refs[1:]
						continue
					}
					k := 1 + r.IntN(len(refs))
					var run []byte
					for _, v := range refs[:k] {
						run = protowire.AppendVarint(run, v)
					}
					out = protowire.AppendTag(out, 1, protowire.BytesType)
					out = protowire.AppendBytes(out, run)
					refs = refs[k:]
				}
			case inner != 0 && num == inner && typ == protowire.BytesType:
				v, _ := protowire.ConsumeBytes(f[n:])
				out = protowire.AppendTag(out, num, protowire.BytesType)
				out = protowire.AppendBytes(out, repack(v, 0))
			default:
				out = append(out, f...)
			}
		}
		return out
	}
	var out []byte
	for _, f := range decFields(tb, b) {
		num, typ, n := protowire.ConsumeTag(f)
		if num == v2FieldTimeseries && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(f[n:])
			out = protowire.AppendTag(out, num, typ)
			out = protowire.AppendBytes(out, repack(v, v2SeriesExemplars))
			continue
		}
		out = append(out, f...)
	}
	return out
}

func decMarshal(tb testing.TB, m interface{ Marshal() ([]byte, error) }) []byte {
	tb.Helper()
	b, err := m.Marshal()
	if err != nil {
		tb.Fatalf("Marshal: %v", err)
	}
	return b
}
