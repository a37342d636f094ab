package ingest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ingestkit/ingestkit/internal/bytestr"
	"github.com/ingestkit/ingestkit/internal/rwtest"
)

const (
	v1Msg = remoteapi.WriteV1MessageType
	v2Msg = remoteapi.WriteV2MessageType
)

// The decoder's series are what the lead's appender takes.
var (
	_ SeriesLabels   = (*Series)(nil)
	_ scratchLabeler = (*Series)(nil)
)

// decSeries is one series, decoded by the Decoder or by Prometheus, with
// everything materialised so that it can be compared after the request
// buffer has changed.
type decSeries struct {
	lset      labels.Labels
	hash      uint64
	samples   []Sample
	hists     []HistogramSample
	exemplars []exemplar.Exemplar
	meta      metadata.Metadata
	hasMeta   bool
	// bad: a 2.0 series whose label or metadata references do not
	// resolve, which Prometheus skips (Series.Err); badEx: its exemplars
	// whose references do not resolve, which Prometheus skips
	// (Series.ExemplarErrs).
	bad   bool
	badEx int
}

// decWantV1 converts req as Prometheus's 1.0 handler does.
func decWantV1(req *prompb.WriteRequest) []decSeries {
	b := labels.NewScratchBuilder(0)
	var out []decSeries
	for _, ts := range req.Timeseries {
		ls := ts.ToLabels(&b, nil)
		s := decSeries{lset: ls, hash: ls.Hash()}
		for _, smp := range ts.Samples {
			s.samples = append(s.samples, Sample{Timestamp: smp.Timestamp, Value: smp.Value})
		}
		for _, hp := range ts.Histograms {
			hs := HistogramSample{Timestamp: hp.Timestamp}
			if hp.IsFloatHistogram() {
				hs.FH = hp.ToFloatHistogram()
			} else {
				hs.H = hp.ToIntHistogram()
			}
			s.hists = append(s.hists, hs)
		}
		for _, ep := range ts.Exemplars {
			s.exemplars = append(s.exemplars, ep.ToExemplar(&b, nil))
		}
		out = append(out, s)
	}
	return out
}

// decWantV2 converts req as Prometheus's 2.0 handler does: a series whose
// labels or metadata it cannot convert is skipped (marked bad), and so is
// an exemplar it cannot convert (counted in badEx).
func decWantV2(req *writev2.Request) (want []decSeries) {
	b := labels.NewScratchBuilder(0)
	for _, ts := range req.Timeseries {
		ls, err := ts.ToLabels(&b, req.Symbols)
		if err != nil {
			want = append(want, decSeries{bad: true})
			continue
		}
		m, err := ts.ToMetadata(req.Symbols)
		if err != nil {
			want = append(want, decSeries{bad: true})
			continue
		}
		s := decSeries{lset: ls, hash: ls.Hash(), meta: m, hasMeta: true}
		for _, smp := range ts.Samples {
			s.samples = append(s.samples, Sample{StartTimestamp: smp.StartTimestamp, Timestamp: smp.Timestamp, Value: smp.Value})
		}
		for _, hp := range ts.Histograms {
			hs := HistogramSample{StartTimestamp: hp.StartTimestamp, Timestamp: hp.Timestamp}
			if hp.IsFloatHistogram() {
				hs.FH = hp.ToFloatHistogram()
			} else {
				hs.H = hp.ToIntHistogram()
			}
			s.hists = append(s.hists, hs)
		}
		for _, ep := range ts.Exemplars {
			e, err := ep.ToExemplar(&b, req.Symbols)
			if err != nil {
				s.badEx++
				continue
			}
			s.exemplars = append(s.exemplars, e)
		}
		want = append(want, s)
	}
	return want
}

// decDecodeAll decodes buf with d and materialises every series, checking
// on the way that the accessors agree with each other. The metadata strings
// are copied: they are the only results that alias buf.
func decDecodeAll(tb testing.TB, d *Decoder, buf []byte, msg remoteapi.WriteMessageType) ([]decSeries, error) {
	tb.Helper()
	_ = d.Reset(buf, msg) // its error is d.Err
	var out []decSeries
	for d.Next() {
		s := d.Series()
		if err := s.Err(); err != nil {
			if !errors.Is(err, ErrSymbolRef) {
				tb.Fatalf("Series.Err() = %v, want ErrSymbolRef", err)
			}
			if m, ok := s.Metadata(); ok {
				tb.Fatalf("Series.Metadata() of a series with an error = %+v, true", m)
			}
			decCheckMatchesNothing(tb, s)
			out = append(out, decSeries{bad: true})
			continue
		}
		for _, err := range s.ExemplarErrs() {
			if !errors.Is(err, ErrSymbolRef) {
				tb.Fatalf("Series.ExemplarErrs() holds %v, want ErrSymbolRef", err)
			}
		}
		ls := s.Labels()
		if !s.Equal(ls) {
			tb.Fatalf("Series.Equal(Series.Labels() = %s) = false, want true", ls)
		}
		if sl := s.ScratchLabels(); !labels.Equal(sl, ls) {
			tb.Fatalf("Series.ScratchLabels() = %s, want %s", sl, ls)
		}
		var ranged []labels.Label
		s.RangeLabels(func(name, value string) {
			ranged = append(ranged, labels.Label{Name: strings.Clone(name), Value: strings.Clone(value)})
		})
		if got := labels.New(ranged...); !decSameLabels(got, ls) {
			tb.Fatalf("Series.RangeLabels gave %s, want %s", got, ls)
		}
		ds := decSeries{
			lset:    ls,
			hash:    s.Hash(),
			samples: slices.Clone(s.Samples()),
			hists:   slices.Clone(s.Histograms()),
		}
		ex := s.Exemplars()
		ds.exemplars = slices.Clone(ex)
		ds.badEx = len(s.ExemplarErrs())
		if again := s.Exemplars(); len(again) != len(ex) || len(ex) > 0 && &again[0] != &ex[0] {
			tb.Fatalf("Series.Exemplars() called twice gave different slices")
		}
		m, ok := s.Metadata()
		ds.meta = metadata.Metadata{Type: m.Type, Help: strings.Clone(m.Help), Unit: strings.Clone(m.Unit)}
		ds.hasMeta = ok
		if om, ook := s.OwnedMetadata(nil); om != m || ook != ok {
			tb.Fatalf("Series.OwnedMetadata() = %+v, %v, want Metadata()'s %+v, %v", om, ook, m, ok)
		}
		if ok != (msg == v2Msg) {
			tb.Fatalf("Series.Metadata() ok = %v for %s", ok, msg)
		}
		out = append(out, ds)
	}
	return out, d.Err()
}

// decCheckMatchesNothing fails tb unless s, a series with an error,
// answers as a series of no labels: not equal to the pairs decoded before
// its bad reference, nor to any label set.
func decCheckMatchesNothing(tb testing.TB, s *Series) {
	tb.Helper()
	if partial := s.set.Labels(); s.Equal(partial) {
		tb.Fatalf("Series.Equal(%s), the pairs before the bad reference, of a series with an error = true", partial)
	}
	if s.Equal(labels.EmptyLabels()) {
		tb.Fatalf("Series.Equal({}) of a series with an error = true")
	}
	if h := s.Hash(); h != 0 {
		tb.Fatalf("Series.Hash() of a series with an error = %#x, want 0", h)
	}
	if s.withTenant {
		if h := s.TenantHash(); h != 0 {
			tb.Fatalf("Series.TenantHash() of a series with an error = %#x, want 0", h)
		}
		if h := s.ThanosHash(); h != 0 {
			tb.Fatalf("Series.ThanosHash() of a series with an error = %#x, want 0", h)
		}
	}
	if ls := s.Labels(); !ls.IsEmpty() {
		tb.Fatalf("Series.Labels() of a series with an error = %s, want {}", ls)
	}
	if ls := s.ScratchLabels(); !ls.IsEmpty() {
		tb.Fatalf("Series.ScratchLabels() of a series with an error = %s, want {}", ls)
	}
	s.RangeLabels(func(name, value string) {
		tb.Fatalf("Series.RangeLabels of a series with an error called f(%q, %q)", name, value)
	})
}

// decHasDupNames reports whether ls has a repeated label name, which
// Prometheus rejects and sorts in an unspecified order.
func decHasDupNames(ls labels.Labels) bool {
	_, dup := ls.HasDuplicateLabelNames()
	return dup
}

// decSameLabels compares label sets, as multisets when a name repeats.
func decSameLabels(a, b labels.Labels) bool {
	if !decHasDupNames(a) && !decHasDupNames(b) {
		return labels.Equal(a, b)
	}
	sorted := func(ls labels.Labels) []labels.Label {
		var ll []labels.Label
		ls.Range(func(l labels.Label) { ll = append(ll, l) })
		slices.SortFunc(ll, func(x, y labels.Label) int {
			return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.Value, y.Value))
		})
		return ll
	}
	return slices.Equal(sorted(a), sorted(b))
}

// decHistString prints a histogram sample exactly, NaN included.
func decHistString(h HistogramSample) string {
	s := fmt.Sprintf("st=%d t=%d ", h.StartTimestamp, h.Timestamp)
	if h.H != nil {
		s += fmt.Sprintf("H=%#v ", *h.H)
	}
	if h.FH != nil {
		s += fmt.Sprintf("FH=%#v", *h.FH)
	}
	return s
}

// decCompare fails tb unless got and want are the same series.
func decCompare(tb testing.TB, got, want []decSeries) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("decoded %d series, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.bad != w.bad || g.badEx != w.badEx {
			tb.Fatalf("series %d: unusable %v with %d bad exemplars, want %v with %d", i, g.bad, g.badEx, w.bad, w.badEx)
		}
		if w.bad {
			continue
		}
		if !decSameLabels(g.lset, w.lset) {
			tb.Fatalf("series %d: Labels() = %s, want %s", i, g.lset, w.lset)
		}
		if !decHasDupNames(w.lset) && g.hash != w.hash {
			tb.Fatalf("series %d %s: Hash() = %#x, want %#x", i, w.lset, g.hash, w.hash)
		}
		if len(g.samples) != len(w.samples) {
			tb.Fatalf("series %d: %d samples, want %d", i, len(g.samples), len(w.samples))
		}
		for j := range w.samples {
			gs, ws := g.samples[j], w.samples[j]
			if gs.StartTimestamp != ws.StartTimestamp || gs.Timestamp != ws.Timestamp || math.Float64bits(gs.Value) != math.Float64bits(ws.Value) {
				tb.Fatalf("series %d: sample %d = %+v, want %+v", i, j, gs, ws)
			}
		}
		if len(g.hists) != len(w.hists) {
			tb.Fatalf("series %d: %d histograms, want %d", i, len(g.hists), len(w.hists))
		}
		for j := range w.hists {
			if gs, ws := decHistString(g.hists[j]), decHistString(w.hists[j]); gs != ws {
				tb.Fatalf("series %d: histogram %d = %s, want %s", i, j, gs, ws)
			}
		}
		if len(g.exemplars) != len(w.exemplars) {
			tb.Fatalf("series %d: %d exemplars, want %d", i, len(g.exemplars), len(w.exemplars))
		}
		for j := range w.exemplars {
			ge, we := g.exemplars[j], w.exemplars[j]
			if !decSameLabels(ge.Labels, we.Labels) || math.Float64bits(ge.Value) != math.Float64bits(we.Value) || ge.Ts != we.Ts || ge.HasTs != we.HasTs {
				tb.Fatalf("series %d: exemplar %d = %+v, want %+v", i, j, ge, we)
			}
		}
		if g.hasMeta != w.hasMeta || g.meta != w.meta {
			tb.Fatalf("series %d: Metadata() = %+v, %v, want %+v, %v", i, g.meta, g.hasMeta, w.meta, w.hasMeta)
		}
	}
}

// decCheckMode says how strictly decCheck compares.
type decCheckMode int

const (
	// decExact: the Decoder must accept exactly what the generated code
	// accepts.
	decExact decCheckMode = iota
	// decFuzz: the Decoder may also reject, with ErrMalformed, inputs that
	// the generated code accepts only through the leniencies documented on
	// Decoder.
	decFuzz
)

// decStricter reports whether err is one of the documented cases in which
// the Decoder is stricter than the generated code.
func decStricter(err error) bool {
	if !errors.Is(err, ErrMalformed) {
		return false
	}
	msg := err.Error()
	for _, s := range []string{
		"variable length integer overflow",                  // tenth varint byte > 1
		"invalid field number",                              // field number > 2^31-1, or 0 in a group
		"mismatching end group marker",                      // group end != group start
		"parse error",                                       // groups nested too deep
		"packed labels_refs", "packed exemplar labels_refs", // varint past the field's end
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// decCheck decodes in with a Decoder and with Prometheus and fails tb
// unless they agree: if Prometheus's Unmarshal fails, the Decoder must fail;
// if it succeeds, the Decoder must yield the same series, with an error
// (ErrSymbolRef) on those that Prometheus cannot convert and skips, and
// leave out the exemplars Prometheus skips. It never modifies in.
func decCheck(tb testing.TB, d *Decoder, in []byte, msg remoteapi.WriteMessageType, mode decCheckMode) {
	tb.Helper()
	// Decode a copy, and scribble over it afterwards: nothing kept may
	// alias it.
	buf := slices.Clone(in)
	got, err := decDecodeAll(tb, d, buf, msg)
	for i := range buf {
		buf[i] = ^buf[i]
	}
	if err != nil && !errors.Is(err, ErrMalformed) {
		tb.Fatalf("Decoder.Err() = %v, want ErrMalformed", err)
	}

	var want []decSeries
	var gerr error
	if msg == v1Msg {
		var req prompb.WriteRequest
		if gerr = req.Unmarshal(in); gerr == nil {
			want = decWantV1(&req)
		}
	} else {
		var req writev2.Request
		if gerr = req.Unmarshal(in); gerr == nil {
			want = decWantV2(&req)
		}
	}
	switch {
	case gerr != nil:
		if err == nil {
			tb.Fatalf("Prometheus's Unmarshal failed (%v); the Decoder decoded %d series without error", gerr, len(got))
		}
		return
	case mode == decFuzz && decStricter(err):
		return
	case err != nil:
		tb.Fatalf("Prometheus decodes %d series; Decoder.Err() = %v after %d", len(want), err, len(got))
	}
	decCompare(tb, got, want)
}

// decRand returns a seeded source, so that a failure can be reproduced.
func decRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x1d)) }

var decNames = []string{
	"__name__", "job", "instance", "namespace", "pod", "container", "method",
	"code", "le", "a", "zz", "\xff", "na\xffme", "", "service.name", "ü",
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
					hp = writev2.FromIntHistogram(decTimestamp(r), decTimestamp(r), decHistogram(r))
				} else {
					hp = writev2.FromFloatHistogram(decTimestamp(r), decTimestamp(r), decFloatHistogram(r))
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

func TestDecodeDifferential(t *testing.T) {
	var d Decoder // reused across all requests, as a receiver does
	for seed := range uint64(60) {
		r := decRand(seed)
		n := []int{0, 1, 2, 50, 200}[seed%5]
		t.Run(fmt.Sprintf("rw=1/seed=%d", seed), func(t *testing.T) {
			decCheck(t, &d, decMarshal(t, decGenV1(r, n)), v1Msg, decExact)
		})
		t.Run(fmt.Sprintf("rw=2/seed=%d", seed), func(t *testing.T) {
			buf := decMarshal(t, decGenV2(r, n))
			decCheck(t, &d, buf, v2Msg, decExact)
			decCheck(t, &d, decInterleave(t, r, buf), v2Msg, decExact)
			decCheck(t, &d, decRepackRefs(t, r, buf), v2Msg, decExact)
		})
	}
}

// decCapturedCounts is the table of testdata/remote-write/README.md.
var decCapturedCounts = map[string][4]int{ // series, samples, histograms, exemplars
	"rw1-0005": {2000, 1233, 17, 750},
	"rw1-0008": {2000, 1346, 19, 635},
	"rw1-0019": {2000, 1250, 0, 750},
	"rw1-0045": {1321, 642, 19, 660},
	"rw2-0006": {2000, 1233, 17, 750},
	"rw2-0007": {2000, 1346, 19, 635},
	"rw2-0020": {2000, 1250, 0, 750},
	"rw2-0040": {1839, 1070, 19, 750},
}

func TestDecodeCaptured(t *testing.T) {
	var d Decoder
	for _, version := range []int{1, 2} {
		msg := map[int]remoteapi.WriteMessageType{1: v1Msg, 2: v2Msg}[version]
		for _, path := range rwtest.Files(t, version) {
			name := strings.TrimSuffix(filepath.Base(path), ".snappy")
			t.Run(name, func(t *testing.T) {
				body := rwtest.Body(t, path)
				decCheck(t, &d, body, msg, decExact)

				got, err := decDecodeAll(t, &d, body, msg)
				if err != nil {
					t.Fatalf("Decoder.Err() = %v", err)
				}
				var counts [4]int
				counts[0] = len(got)
				meta := 0
				for _, s := range got {
					counts[1] += len(s.samples)
					counts[2] += len(s.hists)
					counts[3] += len(s.exemplars)
					if s.meta.Type != model.MetricTypeUnknown || s.meta.Help != "" {
						meta++
					}
				}
				want, ok := decCapturedCounts[name]
				if !ok {
					t.Fatalf("%s is not in the README's table", name)
				}
				if counts != want {
					t.Fatalf("decoded (series, samples, histograms, exemplars) = %v, want %v", counts, want)
				}
				if version == 2 && meta == 0 {
					t.Fatalf("no series has metadata; the captured 2.0 requests have some")
				}
			})
		}
	}
}

// decSmallV1 and decSmallV2 are requests with a bit of everything, small
// enough to be cut at every byte offset.
func decSmallV1(tb testing.TB) []byte {
	tb.Helper()
	r := decRand(7)
	for {
		req := decGenV1(r, 8)
		if decHasEverythingV1(req) {
			return decMarshal(tb, req)
		}
	}
}

func decSmallV2(tb testing.TB) []byte {
	tb.Helper()
	r := decRand(7)
	for {
		req := decGenV2(r, 8)
		if decHasEverythingV2(req) {
			return decMarshal(tb, req)
		}
	}
}

func decHasEverythingV1(req *prompb.WriteRequest) bool {
	var s, h, e, u int
	for _, ts := range req.Timeseries {
		s, h, e = s+len(ts.Samples), h+len(ts.Histograms), e+len(ts.Exemplars)
		u += len(ts.XXX_unrecognized)
	}
	return s > 0 && h > 0 && e > 0 && u > 0 && len(req.Metadata) > 0
}

func decHasEverythingV2(req *writev2.Request) bool {
	var s, h, e, u int
	for _, ts := range req.Timeseries {
		s, h, e = s+len(ts.Samples), h+len(ts.Histograms), e+len(ts.Exemplars)
		u += len(ts.XXX_unrecognized)
	}
	return s > 0 && h > 0 && e > 0 && u > 0
}

func TestDecodeTruncated(t *testing.T) {
	var d Decoder
	cases := []struct {
		name string
		msg  remoteapi.WriteMessageType
		buf  []byte
		step int
	}{
		{"rw=1/generated", v1Msg, decSmallV1(t), 1},
		{"rw=2/generated", v2Msg, decSmallV2(t), 1},
		{"rw=1/captured", v1Msg, rwtest.Body(t, rwtest.Files(t, 1)[0]), 0},
		{"rw=2/captured", v2Msg, rwtest.Body(t, rwtest.Files(t, 2)[0]), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			step := c.step
			if step == 0 {
				step = len(c.buf)/150 + 1 // about 150 cuts of a large request
			}
			if testing.Short() {
				step *= 10
			}
			for i := 0; i <= len(c.buf); i += step {
				decCheck(t, &d, c.buf[:i], c.msg, decExact)
			}
			// The last bytes, where every message ends.
			for i := max(0, len(c.buf)-40); i <= len(c.buf); i++ {
				decCheck(t, &d, c.buf[:i], c.msg, decExact)
			}
		})
	}
}

// decTag appends a tag.
func decTag(b []byte, num protowire.Number, typ protowire.Type) []byte {
	return protowire.AppendTag(b, num, typ)
}

// decMsg appends a length-delimited field.
func decMsg(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(decTag(b, num, protowire.BytesType), v)
}

// decVarint appends a varint field.
func decVarint(b []byte, num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(decTag(b, num, protowire.VarintType), v)
}

// decV1Series returns a 1.0 request of one series with the given fields.
func decV1Series(fields ...[]byte) []byte {
	return decMsg(nil, v1FieldTimeseries, slices.Concat(fields...))
}

// decV1Label returns a 1.0 labels field.
func decV1Label(name, value string) []byte {
	return decMsg(nil, v1SeriesLabels, decMsg(decMsg(nil, v1LabelName, []byte(name)), v1LabelValue, []byte(value)))
}

// decV2Request returns a 2.0 request with symbols and one series with the
// given fields.
func decV2Request(symbols []string, fields ...[]byte) []byte {
	var b []byte
	for _, s := range symbols {
		b = decMsg(b, v2FieldSymbols, []byte(s))
	}
	return decMsg(b, v2FieldTimeseries, slices.Concat(fields...))
}

// decPacked returns a packed labels_refs field.
func decPacked(num protowire.Number, refs ...uint64) []byte {
	var v []byte
	for _, r := range refs {
		v = protowire.AppendVarint(v, r)
	}
	return decMsg(nil, num, v)
}

var decSyms = []string{"", "__name__", "up", "job", "api"}

func TestDecodeMalformed(t *testing.T) {
	okLabel := decV1Label("__name__", "up")
	okSample := decMsg(nil, v1SeriesSamples, protowire.AppendFixed64(decTag(nil, v1SampleValue, protowire.Fixed64Type), 1))
	okRefs := decPacked(v2SeriesLabelsRefs, 1, 2, 3, 4)
	cases := []struct {
		name string
		msg  remoteapi.WriteMessageType
		buf  []byte
		want error
	}{
		{"rw=1/series of wire type varint", v1Msg, decVarint(nil, v1FieldTimeseries, 1), ErrMalformed},
		{"rw=1/field number 0", v1Msg, decVarint(nil, 0, 1), ErrMalformed},
		{"rw=1/end group at top", v1Msg, decTag(nil, 9, protowire.EndGroupType), ErrMalformed},
		{"rw=1/wire type 6", v1Msg, []byte{9<<3 | 6}, ErrMalformed},
		{"rw=1/unterminated group", v1Msg, decVarint(decTag(nil, 9, protowire.StartGroupType), 1, 1), ErrMalformed},
		{"rw=1/label of wire type fixed64", v1Msg, decV1Series(protowire.AppendFixed64(decTag(nil, v1SeriesLabels, protowire.Fixed64Type), 1)), ErrMalformed},
		{"rw=1/label name of wire type varint", v1Msg, decV1Series(decMsg(nil, v1SeriesLabels, decVarint(nil, v1LabelName, 1))), ErrMalformed},
		{"rw=1/label value of wire type varint", v1Msg, decV1Series(decMsg(nil, v1SeriesLabels, decVarint(nil, v1LabelValue, 1))), ErrMalformed},
		{"rw=1/sample of wire type varint", v1Msg, decV1Series(okLabel, decVarint(nil, v1SeriesSamples, 1)), ErrMalformed},
		{"rw=1/sample value of wire type varint", v1Msg, decV1Series(okLabel, decMsg(nil, v1SeriesSamples, decVarint(nil, v1SampleValue, 1))), ErrMalformed},
		{"rw=1/sample timestamp of wire type fixed64", v1Msg, decV1Series(okLabel, decMsg(nil, v1SeriesSamples, protowire.AppendFixed64(decTag(nil, v1SampleTimestamp, protowire.Fixed64Type), 1))), ErrMalformed},
		{"rw=1/sample value truncated", v1Msg, decV1Series(okLabel, decMsg(nil, v1SeriesSamples, decTag(nil, v1SampleValue, protowire.Fixed64Type))), ErrMalformed},
		{"rw=1/exemplar of wire type varint", v1Msg, decV1Series(okLabel, decVarint(nil, v1SeriesExemplars, 1)), ErrMalformed},
		{"rw=1/exemplar label malformed", v1Msg, decV1Series(okLabel, decMsg(nil, v1SeriesExemplars, decVarint(nil, v1ExemplarLabels, 1))), ErrMalformed},
		{"rw=1/exemplar value of wire type varint", v1Msg, decV1Series(okLabel, decMsg(nil, v1SeriesExemplars, decVarint(nil, v1ExemplarValue, 1))), ErrMalformed},
		{"rw=1/exemplar timestamp of wire type bytes", v1Msg, decV1Series(okLabel, decMsg(nil, v1SeriesExemplars, decMsg(nil, v1ExemplarTimestamp, nil))), ErrMalformed},
		{"rw=1/histogram of wire type varint", v1Msg, decV1Series(okLabel, decVarint(nil, v1SeriesHistograms, 1)), ErrMalformed},
		{"rw=1/histogram schema of wire type bytes", v1Msg, decV1Series(okLabel, decMsg(nil, v1SeriesHistograms, decMsg(nil, 4, nil))), ErrMalformed},
		{"rw=1/metadata of wire type varint", v1Msg, decVarint(nil, v1FieldMetadata, 1), ErrMalformed},
		{"rw=1/metadata help of wire type varint", v1Msg, decMsg(nil, v1FieldMetadata, decVarint(nil, v1MetadataHelp, 1)), ErrMalformed},
		{"rw=1/metadata type of wire type bytes", v1Msg, decMsg(nil, v1FieldMetadata, decMsg(nil, v1MetadataType, nil)), ErrMalformed},
		{"rw=1/huge length", v1Msg, protowire.AppendVarint(decTag(nil, v1FieldTimeseries, protowire.BytesType), 1<<62), ErrMalformed},
		{"rw=1/max length", v1Msg, protowire.AppendVarint(decTag(nil, v1FieldTimeseries, protowire.BytesType), math.MaxUint64), ErrMalformed},
		{"rw=1/huge label length", v1Msg, decV1Series(protowire.AppendVarint(decTag(nil, v1SeriesLabels, protowire.BytesType), 1<<40)), ErrMalformed},
		{"rw=1/second series truncated", v1Msg, slices.Concat(decV1Series(okLabel, okSample), decV1Series(okLabel, okSample)[:10]), ErrMalformed},
		{"rw=1/varint of 11 bytes", v1Msg, decV1Series(okLabel, decMsg(nil, v1SeriesSamples, append(decTag(nil, v1SampleTimestamp, protowire.VarintType), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01))), ErrMalformed},

		{"rw=2/symbols of wire type varint", v2Msg, decVarint(nil, v2FieldSymbols, 1), ErrMalformed},
		{"rw=2/series of wire type fixed32", v2Msg, protowire.AppendFixed32(decTag(nil, v2FieldTimeseries, protowire.Fixed32Type), 1), ErrMalformed},
		{"rw=2/truncated symbol", v2Msg, decMsg(nil, v2FieldSymbols, []byte("abc"))[:3], ErrMalformed},
		{"rw=2/huge symbol length", v2Msg, protowire.AppendVarint(decTag(nil, v2FieldSymbols, protowire.BytesType), 1<<62), ErrMalformed},
		{"rw=2/labels_refs of wire type fixed64", v2Msg, decV2Request(decSyms, protowire.AppendFixed64(decTag(nil, v2SeriesLabelsRefs, protowire.Fixed64Type), 1)), ErrMalformed},
		{"rw=2/packed labels_refs truncated", v2Msg, decV2Request(decSyms, decMsg(nil, v2SeriesLabelsRefs, []byte{1, 0x82})), ErrMalformed},
		{"rw=2/sample of wire type varint", v2Msg, decV2Request(decSyms, okRefs, decVarint(nil, v2SeriesSamples, 1)), ErrMalformed},
		{"rw=2/sample start_timestamp of wire type fixed64", v2Msg, decV2Request(decSyms, okRefs, decMsg(nil, v2SeriesSamples, protowire.AppendFixed64(decTag(nil, v2SampleStartTimestamp, protowire.Fixed64Type), 1))), ErrMalformed},
		{"rw=2/histogram malformed", v2Msg, decV2Request(decSyms, okRefs, decMsg(nil, v2SeriesHistograms, decVarint(nil, 8, 1))), ErrMalformed},
		{"rw=2/exemplar value of wire type varint", v2Msg, decV2Request(decSyms, okRefs, decMsg(nil, v2SeriesExemplars, decVarint(nil, v2ExemplarValue, 1))), ErrMalformed},
		{"rw=2/exemplar labels_refs of wire type fixed32", v2Msg, decV2Request(decSyms, okRefs, decMsg(nil, v2SeriesExemplars, protowire.AppendFixed32(decTag(nil, v2ExemplarLabelsRefs, protowire.Fixed32Type), 1))), ErrMalformed},
		{"rw=2/metadata of wire type varint", v2Msg, decV2Request(decSyms, okRefs, decVarint(nil, v2SeriesMetadata, 1)), ErrMalformed},
		{"rw=2/metadata help_ref of wire type bytes", v2Msg, decV2Request(decSyms, okRefs, decMsg(nil, v2SeriesMetadata, decMsg(nil, v2MetadataHelpRef, nil))), ErrMalformed},

		{"rw=2/label ref out of range", v2Msg, decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 5)), ErrSymbolRef},
		{"rw=2/label ref far out of range", v2Msg, decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1<<31, 1)), ErrSymbolRef},
		{"rw=2/odd labels_refs", v2Msg, decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 2, 3)), ErrSymbolRef},
		{"rw=2/odd unpacked labels_refs", v2Msg, decV2Request(decSyms, decVarint(nil, v2SeriesLabelsRefs, 1)), ErrSymbolRef},
		{"rw=2/exemplar ref out of range", v2Msg, decV2Request(decSyms, okRefs, decMsg(nil, v2SeriesExemplars, decPacked(v2ExemplarLabelsRefs, 3, 9))), ErrSymbolRef},
		{"rw=2/odd exemplar labels_refs", v2Msg, decV2Request(decSyms, okRefs, decMsg(nil, v2SeriesExemplars, decPacked(v2ExemplarLabelsRefs, 3))), ErrSymbolRef},
		{"rw=2/help_ref out of range", v2Msg, decV2Request(decSyms, okRefs, decMsg(nil, v2SeriesMetadata, decVarint(nil, v2MetadataHelpRef, 5))), ErrSymbolRef},
		{"rw=2/unit_ref out of range", v2Msg, decV2Request(decSyms, okRefs, decMsg(nil, v2SeriesMetadata, decVarint(nil, v2MetadataUnitRef, 99))), ErrSymbolRef},
		{"rw=2/no symbols", v2Msg, decV2Request(nil), ErrSymbolRef},
	}
	var d Decoder
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := decDecodeAll(t, &d, c.buf, c.msg)
			if c.want == ErrSymbolRef {
				// Not malformed: the series (or its exemplar) is
				// yielded with the error, and skipped.
				if err != nil {
					t.Fatalf("Decoder.Err() = %v, want nil", err)
				}
				if len(got) != 1 || !got[0].bad && got[0].badEx != 1 {
					t.Fatalf("decoded %+v, want one series with Err or one exemplar error", got)
				}
			} else if !errors.Is(err, c.want) {
				t.Fatalf("Decoder.Err() = %v, want %v", err, c.want)
			}
			// Prometheus rejects it too: in Unmarshal for a malformed
			// request, in the conversion for a bad reference.
			decCheck(t, &d, c.buf, c.msg, decExact)
			if c.want == ErrSymbolRef {
				var req writev2.Request
				if err := req.Unmarshal(c.buf); err != nil {
					t.Fatalf("writev2.Request.Unmarshal: %v, want a request that unmarshals", err)
				}
			}
		})
	}
}

func TestDecodeErrorMessage(t *testing.T) {
	cases := []struct {
		name string
		msg  remoteapi.WriteMessageType
		buf  []byte
		want string
		is   []error
	}{
		{
			name: "truncated sample",
			msg:  v1Msg,
			buf:  decV1Series(decV1Label("a", "b"), decMsg(nil, v1SeriesSamples, decTag(nil, v1SampleValue, protowire.Fixed64Type))),
			want: "decoding prometheus.WriteRequest: ingest: malformed remote-write request: timeseries 0: sample at byte 12: unexpected EOF",
			is:   []error{ErrMalformed, io.ErrUnexpectedEOF},
		},
		{
			name: "wrong wire type",
			msg:  v1Msg,
			buf:  decV1Series(decVarint(nil, v1SeriesLabels, 1)),
			want: "decoding prometheus.WriteRequest: ingest: malformed remote-write request: timeseries 0: labels: wrong wire type 0 at byte 2",
			is:   []error{ErrMalformed},
		},
		{
			name: "message type",
			msg:  "prometheus.ReadRequest",
			want: `decoding "prometheus.ReadRequest": ingest: unsupported remote-write message type`,
			is:   []error{ErrMessageType},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d Decoder
			rerr := d.Reset(c.buf, c.msg)
			for d.Next() {
			}
			err := d.Err()
			if err == nil || err.Error() != c.want {
				t.Fatalf("Decoder.Err() = %v, want %s", err, c.want)
			}
			if c.msg == v2Msg || errors.Is(err, ErrMessageType) {
				if rerr != nil && rerr != err {
					t.Fatalf("Reset() = %v, Err() = %v", rerr, err)
				}
			}
			for _, target := range c.is {
				if !errors.Is(err, target) {
					t.Fatalf("errors.Is(%v, %v) = false", err, target)
				}
			}
		})
	}
}

// TestDecodeStricterThanGogo pins the cases documented on Decoder in which
// the generated code accepts a request that is not valid protobuf and the
// Decoder rejects it.
func TestDecodeStricterThanGogo(t *testing.T) {
	label := decV1Label("__name__", "up")
	overflow := append(decTag(nil, v1SampleTimestamp, protowire.VarintType), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f)
	hugeNum := protowire.AppendVarint(nil, (1<<32+uint64(v1SeriesLabels))<<3|uint64(protowire.BytesType)) // field 2^32+1: gogo reads field 1
	group := func(start, end protowire.Number, inner []byte) []byte {
		return decTag(append(decTag(nil, start, protowire.StartGroupType), inner...), end, protowire.EndGroupType)
	}
	cases := []struct {
		name string
		msg  remoteapi.WriteMessageType
		buf  []byte
	}{
		{"varint overflow", v1Msg, decV1Series(label, decMsg(nil, v1SeriesSamples, overflow))},
		{"field number beyond 2^31-1", v1Msg, decMsg(nil, v1FieldTimeseries, append(hugeNum, decMsg(nil, 0, nil)[1:]...))},
		{"group end mismatch", v1Msg, decV1Series(label, group(30, 31, nil))},
		{"field 0 in a group", v1Msg, decV1Series(label, group(30, 30, decVarint(nil, 0, 1)))},
		{"packed varint past the field", v2Msg, decV2Request(decSyms, decMsg(nil, v2SeriesLabelsRefs, []byte{1, 0x82}), []byte{0x01})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.msg == v1Msg {
				err = new(prompb.WriteRequest).Unmarshal(c.buf)
			} else {
				err = new(writev2.Request).Unmarshal(c.buf)
			}
			if err != nil {
				t.Fatalf("the generated Unmarshal failed (%v): the case no longer shows a leniency", err)
			}
			var d Decoder
			_, err = decDecodeAll(t, &d, c.buf, c.msg)
			if !errors.Is(err, ErrMalformed) || !decStricter(err) {
				t.Fatalf("Decoder.Err() = %v, want one of the documented ErrMalformed cases", err)
			}
		})
	}
}

func TestDecodeEdgeCases(t *testing.T) {
	meta := func(typ, help, unit uint64) []byte {
		return decMsg(nil, v2SeriesMetadata, decVarint(decVarint(decVarint(nil, v2MetadataType, typ), v2MetadataHelpRef, help), v2MetadataUnitRef, unit))
	}
	cases := []struct {
		name string
		msg  remoteapi.WriteMessageType
		buf  []byte
		n    int // series
	}{
		{"rw=1/empty request", v1Msg, nil, 0},
		{"rw=2/empty request", v2Msg, nil, 0},
		{"rw=1/only unknown fields", v1Msg, decVarint(decMsg(nil, 99, []byte("x")), 2, 1), 0},
		{"rw=1/series without labels", v1Msg, decV1Series(), 1},
		{"rw=1/label without name", v1Msg, decV1Series(decMsg(nil, v1SeriesLabels, decMsg(nil, v1LabelValue, []byte("v")))), 1},
		{"rw=1/repeated label field: last wins", v1Msg, decV1Series(decMsg(nil, v1SeriesLabels, decMsg(decMsg(decMsg(nil, v1LabelName, []byte("a")), v1LabelValue, []byte("1")), v1LabelName, []byte("b")))), 1},
		{"rw=1/unsorted labels", v1Msg, decV1Series(decV1Label("job", "x"), decV1Label("__name__", "up"), decV1Label("a", "")), 1},
		{"rw=1/repeated label name", v1Msg, decV1Series(decV1Label("a", "2"), decV1Label("a", "1")), 1},
		{"rw=1/two series", v1Msg, slices.Concat(decV1Series(decV1Label("a", "1")), decV1Series(decV1Label("a", "2"))), 2},
		{"rw=2/symbols after the series", v2Msg, slices.Concat(decMsg(nil, v2FieldTimeseries, decPacked(v2SeriesLabelsRefs, 1, 2)), decMsg(nil, v2FieldSymbols, nil), decMsg(nil, v2FieldSymbols, []byte("__name__")), decMsg(nil, v2FieldSymbols, []byte("up"))), 1},
		{"rw=2/unpacked labels_refs", v2Msg, decV2Request(decSyms, decVarint(decVarint(nil, v2SeriesLabelsRefs, 1), v2SeriesLabelsRefs, 2)), 1},
		{"rw=2/label ref beyond 32 bits keeps the low bits", v2Msg, decV2Request(decSyms, decVarint(decVarint(nil, v2SeriesLabelsRefs, 1<<32+1), v2SeriesLabelsRefs, 2)), 1},
		{"rw=2/repeated metadata merges", v2Msg, decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 2), meta(1, 2, 0), decMsg(nil, v2SeriesMetadata, decVarint(nil, v2MetadataUnitRef, 4))), 1},
		{"rw=2/metadata type beyond 32 bits", v2Msg, decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 2), meta(1<<32+2, 0, 0)), 1},
		{"rw=2/negative metadata type", v2Msg, decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 2), meta(math.MaxUint64, 0, 0)), 1},
		{"rw=2/series without labels", v2Msg, decV2Request([]string{""}), 1},
		{"rw=2/empty packed labels_refs", v2Msg, decV2Request(decSyms, decMsg(nil, v2SeriesLabelsRefs, nil)), 1},
		{"rw=1/label value of 1 KiB", v1Msg, decV1Series(decV1Label("__name__", strings.Repeat("x", 1024))), 1},
		{"rw=1/label value of 10 MiB", v1Msg, decV1Series(decV1Label("__name__", "up"), decV1Label("big", strings.Repeat("\xff", 10<<20))), 1},
		{"rw=2/symbol of 10 MiB", v2Msg, decV2Request(append(slices.Clone(decSyms), strings.Repeat("y", 10<<20)), decPacked(v2SeriesLabelsRefs, 1, 5)), 1},
	}
	var d Decoder
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := decDecodeAll(t, &d, c.buf, c.msg)
			if err != nil {
				t.Fatalf("Decoder.Err() = %v, want nil", err)
			}
			if len(got) != c.n {
				t.Fatalf("decoded %d series, want %d", len(got), c.n)
			}
			decCheck(t, &d, c.buf, c.msg, decExact)
		})
	}
}

func TestDecodeMessageType(t *testing.T) {
	var d Decoder
	buf := decMarshal(t, decGenV1(decRand(1), 3))
	for _, msg := range []remoteapi.WriteMessageType{"", "prometheus.WriteRequest ", "io.prometheus.write.v2.request"} {
		if err := d.Reset(buf, msg); !errors.Is(err, ErrMessageType) {
			t.Fatalf("Reset(buf, %q) = %v, want ErrMessageType", msg, err)
		}
		if d.Next() {
			t.Fatalf("Next() after a failed Reset = true")
		}
		if err := d.Err(); !errors.Is(err, ErrMessageType) {
			t.Fatalf("Err() after Reset(buf, %q) = %v, want ErrMessageType", msg, err)
		}
	}
	// The Decoder recovers on the next Reset.
	decCheck(t, &d, buf, v1Msg, decExact)
}

func TestDecodeZeroValue(t *testing.T) {
	var d Decoder
	if d.Next() {
		t.Fatalf("Next() on a zero Decoder = true")
	}
	if err := d.Err(); err != nil {
		t.Fatalf("Err() on a zero Decoder = %v", err)
	}
}

// decMapInterner interns into a map and counts its calls.
type decMapInterner struct {
	m     map[string]string
	calls int
}

func (in *decMapInterner) Intern(b []byte) string {
	in.calls++
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	in.m[s] = s
	return s
}

// TestDecodeInternerAndSymbolTable checks that labels are the same with an
// interner and a symbol table (used in the slicelabels and dedupelabels
// builds) as without.
func TestDecodeInternerAndSymbolTable(t *testing.T) {
	in := &decMapInterner{m: map[string]string{}}
	var d Decoder
	d.SetInterner(in)
	d.SetSymbolTable(labels.NewSymbolTable())
	r := decRand(3)
	decCheck(t, &d, decMarshal(t, decGenV1(r, 100)), v1Msg, decExact)
	decCheck(t, &d, decMarshal(t, decGenV2(r, 100)), v2Msg, decExact)
	d.SetInterner(nil)
	decCheck(t, &d, decMarshal(t, decGenV1(r, 10)), v1Msg, decExact)
}

// decFloatRequest returns a request of n float series with typical labels,
// some sorted the wrong way, and a sample each.
func decFloatRequest(tb testing.TB, msg remoteapi.WriteMessageType, n int, unsorted bool) ([]byte, []labels.Labels) {
	tb.Helper()
	var lsets []labels.Labels
	for i := range n {
		ls := labels.FromStrings(
			"__name__", fmt.Sprintf("http_requests_%d_total", i%50),
			"cluster", "eu-west-1",
			"code", []string{"200", "404", "500"}[i%3],
			"container", "api",
			"instance", fmt.Sprintf("10.0.%d.%d:8080", i/256%256, i%256),
			"job", "kubernetes-pods",
			"method", []string{"GET", "POST"}[i%2],
			"namespace", "production",
			"pod", fmt.Sprintf("api-7d9f8b6c5-%05d", i),
			"le", "0.25",
		)
		lsets = append(lsets, ls)
	}
	order := func(ls labels.Labels, i int) []labels.Label {
		var out []labels.Label
		ls.Range(func(l labels.Label) { out = append(out, l) })
		if unsorted && i%7 == 0 {
			slices.Reverse(out)
		}
		return out
	}
	if msg == v1Msg {
		req := &prompb.WriteRequest{}
		for i, ls := range lsets {
			ts := prompb.TimeSeries{Samples: []prompb.Sample{{Value: float64(i), Timestamp: 1_700_000_000_000}}}
			for _, l := range order(ls, i) {
				ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value})
			}
			req.Timeseries = append(req.Timeseries, ts)
		}
		return decMarshal(tb, req), lsets
	}
	st := writev2.NewSymbolTable()
	req := &writev2.Request{}
	for i, ls := range lsets {
		ts := writev2.TimeSeries{Samples: []writev2.Sample{{Value: float64(i), Timestamp: 1_700_000_000_000}}}
		for _, l := range order(ls, i) {
			ts.LabelsRefs = append(ts.LabelsRefs, st.Symbolize(l.Name), st.Symbolize(l.Value))
		}
		ts.Metadata = writev2.Metadata{Type: writev2.Metadata_METRIC_TYPE_COUNTER, HelpRef: st.Symbolize("Requests.")}
		req.Timeseries = append(req.Timeseries, ts)
	}
	req.Symbols = st.Symbols()
	return decMarshal(tb, req), lsets
}

func TestDecodeAllocs(t *testing.T) {
	if bytestr.Copies {
		t.Skip("the purego build copies every label")
	}
	for _, msg := range []remoteapi.WriteMessageType{v1Msg, v2Msg} {
		for _, unsorted := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/unsorted=%v", msg, unsorted), func(t *testing.T) {
				buf, lsets := decFloatRequest(t, msg, 500, unsorted)
				var d Decoder
				decode := func() {
					if err := d.Reset(buf, msg); err != nil {
						t.Fatalf("Reset: %v", err)
					}
					i := 0
					for d.Next() {
						s := d.Series()
						_ = s.Hash()
						if !s.Equal(lsets[i]) {
							t.Fatalf("series %d: Equal(%s) = false", i, lsets[i])
						}
						if len(s.Samples()) != 1 {
							t.Fatalf("series %d: %d samples", i, len(s.Samples()))
						}
						_, _ = s.Metadata()
						i++
					}
					if d.Err() != nil || i != len(lsets) {
						t.Fatalf("decoded %d series, err %v", i, d.Err())
					}
				}
				decode() // warm up
				if got := testing.AllocsPerRun(20, decode); got != 0 {
					t.Fatalf("AllocsPerRun(Reset, Next, Hash, Equal, Samples over %d series) = %v, want 0", len(lsets), got)
				}
			})
		}
	}
}

// TestDecodeHistogramAllocs pins the allocations of a histogram: the
// histogram, its two span slices and two bucket slices, and the generated
// message's count and zero-count fields. Prometheus's own decoding makes
// the same, plus those of the series around it.
func TestDecodeHistogramAllocs(t *testing.T) {
	if bytestr.Copies {
		t.Skip("the purego build copies every label")
	}
	h := &histogram.Histogram{
		Schema: 1, Count: 10, ZeroCount: 1, Sum: 12.5,
		PositiveSpans: []histogram.Span{{Offset: 0, Length: 2}}, PositiveBuckets: []int64{2, 1},
		NegativeSpans: []histogram.Span{{Offset: 1, Length: 2}}, NegativeBuckets: []int64{1, 1},
	}
	req := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{
		Labels:     []prompb.Label{{Name: "__name__", Value: "latency_seconds"}},
		Histograms: []prompb.Histogram{prompb.FromIntHistogram(1000, h)},
	}}}
	buf := decMarshal(t, req)
	var d Decoder
	decode := func() {
		_ = d.Reset(buf, v1Msg)
		for d.Next() {
			_ = d.Series().Hash()
			if hs := d.Series().Histograms(); len(hs) != 1 || hs[0].H == nil {
				t.Fatalf("Histograms() = %v", hs)
			}
		}
	}
	decode()
	if got := testing.AllocsPerRun(100, decode); got != 7 {
		t.Fatalf("AllocsPerRun(one integer histogram) = %v, want 7", got)
	}
}

// TestDecodeHistogramsNotShared checks that the histograms of successive
// series, which the Decoder decodes into a reused message, share no memory.
func TestDecodeHistogramsNotShared(t *testing.T) {
	r := decRand(11)
	req := &prompb.WriteRequest{}
	for range 20 {
		req.Timeseries = append(req.Timeseries, prompb.TimeSeries{
			Labels:     []prompb.Label{{Name: "__name__", Value: "h"}},
			Histograms: []prompb.Histogram{prompb.FromIntHistogram(1, decHistogram(r)), prompb.FromFloatHistogram(2, decFloatHistogram(r))},
		})
	}
	buf := decMarshal(t, req)
	var unmarshaled prompb.WriteRequest // gogo drops a -0 sum, so compare with what is on the wire
	if err := unmarshaled.Unmarshal(buf); err != nil {
		t.Fatal(err)
	}
	want := decWantV1(&unmarshaled)
	var d Decoder
	var kept []HistogramSample
	_ = d.Reset(buf, v1Msg)
	for d.Next() {
		kept = append(kept, d.Series().Histograms()...)
	}
	if err := d.Err(); err != nil {
		t.Fatalf("Err() = %v", err)
	}
	_ = d.Reset(decMarshal(t, decGenV1(r, 30)), v1Msg) // reuses the scratch message
	for d.Next() {
		_ = d.Series().Histograms()
	}
	i := 0
	for _, s := range want {
		for _, h := range s.hists {
			if got, want := decHistString(kept[i]), decHistString(h); got != want {
				t.Fatalf("histogram %d changed after later decoding: %s, want %s", i, got, want)
			}
			i++
		}
	}
}

// TestDecodeLabelsDoNotAlias checks that labels built by Series.Labels stay
// unchanged when the request buffer is reused.
func TestDecodeLabelsDoNotAlias(t *testing.T) {
	buf := decMarshal(t, decGenV1(decRand(5), 30))
	orig := bytes.Clone(buf)
	var d Decoder
	_ = d.Reset(buf, v1Msg)
	var kept []labels.Labels
	for d.Next() {
		kept = append(kept, d.Series().Labels())
	}
	for i := range buf {
		buf[i] = 0
	}
	var req prompb.WriteRequest
	if err := req.Unmarshal(orig); err != nil {
		t.Fatal(err)
	}
	for i, s := range decWantV1(&req) {
		if !labels.Equal(kept[i], s.lset) {
			t.Fatalf("series %d: Labels() = %s after the buffer changed, want %s", i, kept[i], s.lset)
		}
	}
}

// decLabelsBuild names the labels build this test binary uses, from the
// shape of labels.Labels.
func decLabelsBuild() string {
	t := reflect.TypeFor[labels.Labels]()
	switch {
	case t.Kind() == reflect.Slice:
		return "slicelabels"
	case t.NumField() == 1:
		return "stringlabels"
	default:
		return "dedupelabels"
	}
}

// TestDecodeLabelsAllocs pins the allocations documented for Labels and
// Exemplars: one per label set in stringlabels; in slicelabels with a
// warm interner, one (the slice).
func TestDecodeLabelsAllocs(t *testing.T) {
	if bytestr.Copies {
		t.Skip("the purego build copies every label")
	}
	build := decLabelsBuild()
	if build == "dedupelabels" {
		t.Skip("dedupelabels allocates as its symbol table grows")
	}
	ts := prompb.TimeSeries{
		Labels:  []prompb.Label{{Name: "__name__", Value: "http_requests_total"}, {Name: "job", Value: "api"}},
		Samples: []prompb.Sample{{Value: 1, Timestamp: 1000}},
	}
	for i := range 3 {
		ts.Exemplars = append(ts.Exemplars, prompb.Exemplar{
			Labels: []prompb.Label{{Name: "trace_id", Value: fmt.Sprintf("%032x", i)}},
			Value:  1, Timestamp: 1000,
		})
	}
	buf := decMarshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{ts}})
	var d Decoder
	d.SetInterner(&decMapInterner{m: map[string]string{}})
	decode := func(f func(s *Series)) func() {
		return func() {
			_ = d.Reset(buf, v1Msg)
			for d.Next() {
				f(d.Series())
			}
		}
	}
	// AllocsPerRun warms up with one run, which also warms the interner.
	labelsAllocs := testing.AllocsPerRun(10, decode(func(s *Series) { _ = s.Labels() }))
	exemplarAllocs := testing.AllocsPerRun(10, decode(func(s *Series) { _, _ = s.Exemplars(), s.Exemplars() }))
	if labelsAllocs != 1 || exemplarAllocs != 3 {
		t.Fatalf("%s: Labels() made %v allocations, Exemplars() %v; want 1 and 3", build, labelsAllocs, exemplarAllocs)
	}
}

func TestDecodeTags(t *testing.T) {
	for _, c := range []struct {
		got  byte
		num  protowire.Number
		typ  protowire.Type
		name string
	}{
		{tagLabelName, v1LabelName, protowire.BytesType, "tagLabelName"},
		{tagLabelValue, v1LabelValue, protowire.BytesType, "tagLabelValue"},
		{tagV1Timeseries, v1FieldTimeseries, protowire.BytesType, "tagV1Timeseries"},
		{tagV2Timeseries, v2FieldTimeseries, protowire.BytesType, "tagV2Timeseries"},
		{tagV2Symbols, v2FieldSymbols, protowire.BytesType, "tagV2Symbols"},
		{tagV1Labels, v1SeriesLabels, protowire.BytesType, "tagV1Labels"},
		{tagV1Samples, v1SeriesSamples, protowire.BytesType, "tagV1Samples"},
		{tagV2LabelsRefs, v2SeriesLabelsRefs, protowire.BytesType, "tagV2LabelsRefs"},
		{tagV2Samples, v2SeriesSamples, protowire.BytesType, "tagV2Samples"},
		{tagV2Metadata, v2SeriesMetadata, protowire.BytesType, "tagV2Metadata"},
		{tagSampleValue, v2SampleValue, protowire.Fixed64Type, "tagSampleValue"},
		{tagSampleTime, v2SampleTimestamp, protowire.VarintType, "tagSampleTime"},
		{tagSampleStart, v2SampleStartTimestamp, protowire.VarintType, "tagSampleStart"},
		{tagMetadataType, v2MetadataType, protowire.VarintType, "tagMetadataType"},
		{tagMetadataHelp, v2MetadataHelpRef, protowire.VarintType, "tagMetadataHelp"},
		{tagMetadataUnit, v2MetadataUnitRef, protowire.VarintType, "tagMetadataUnit"},
	} {
		if want := protowire.EncodeTag(c.num, c.typ); uint64(c.got) != want {
			t.Fatalf("%s = %#x, want protowire.EncodeTag(%d, %d) = %#x", c.name, c.got, c.num, c.typ, want)
		}
	}
}

// decTenantHash is the Thanos receive routing hash of ls for tenant:
// xxhash over "tenant 0xff name 0xff value 0xff ...".
func decTenantHash(tenant string, ls labels.Labels) uint64 {
	b := append([]byte(tenant), 0xff)
	ls.Range(func(l labels.Label) {
		b = append(append(append(append(b, l.Name...), 0xff), l.Value...), 0xff)
	})
	return xxhash.Sum64(b)
}

func TestDecodeTenantHash(t *testing.T) {
	r := decRand(21)
	var d Decoder
	func() {
		defer func() {
			if recover() == nil {
				t.Fatalf("TenantHash without SetTenant did not panic")
			}
		}()
		_ = d.Reset(decV1Series(decV1Label("a", "b")), v1Msg)
		d.Next()
		_ = d.Series().TenantHash()
	}()
	for _, tenant := range []string{"", "tenant-a", strings.Repeat("t", 2000)} {
		d.SetTenant(tenant)
		for _, c := range []struct {
			msg remoteapi.WriteMessageType
			buf []byte
		}{
			{v1Msg, decMarshal(t, decGenV1(r, 100))},
			{v2Msg, decMarshal(t, decGenV2(r, 100))},
		} {
			_ = d.Reset(c.buf, c.msg)
			for d.Next() {
				s := d.Series()
				ls := s.Labels()
				if decHasDupNames(ls) {
					continue
				}
				if got, want := s.TenantHash(), decTenantHash(tenant, ls); got != want {
					t.Fatalf("TenantHash() of %s for tenant %q = %#x, want %#x", ls, tenant, got, want)
				}
				if got, want := s.Hash(), ls.Hash(); got != want {
					t.Fatalf("Hash() of %s with a tenant = %#x, want %#x", ls, got, want)
				}
			}
			if err := d.Err(); err != nil {
				t.Fatalf("Err() = %v", err)
			}
		}
	}
	if bytestr.Copies {
		return
	}
	buf, _ := decFloatRequest(t, v2Msg, 200, true)
	decode := func() {
		_ = d.Reset(buf, v2Msg)
		for d.Next() {
			_ = d.Series().TenantHash() + d.Series().Hash()
		}
	}
	decode()
	if got := testing.AllocsPerRun(20, decode); got != 0 {
		t.Fatalf("AllocsPerRun(Next, TenantHash, Hash) = %v, want 0", got)
	}
}

// TestDecodeSymbolRefSkipsSeries: a 2.0 series or exemplar whose references
// do not resolve is reported on its own, with the series' index and offset,
// and the series after it are still decoded, as Prometheus's handler
// writes them.
func TestDecodeSymbolRefSkipsSeries(t *testing.T) {
	syms := []string{"", "__name__", "up", "trace_id", "abc"}
	good := decPacked(v2SeriesLabelsRefs, 1, 2)
	badEx := decMsg(nil, v2SeriesExemplars, decPacked(v2ExemplarLabelsRefs, 3, 9))
	okEx := decMsg(nil, v2SeriesExemplars, decPacked(v2ExemplarLabelsRefs, 3, 4))
	buf := slices.Concat(
		decV2Request(syms, decPacked(v2SeriesLabelsRefs, 1, 7)),
		decMsg(nil, v2FieldTimeseries, slices.Concat(good, badEx, okEx)),
	)
	var d Decoder
	if err := d.Reset(buf, v2Msg); err != nil {
		t.Fatal(err)
	}
	if !d.Next() {
		t.Fatalf("Next() = false, Err() = %v", d.Err())
	}
	const want = "decoding io.prometheus.write.v2.Request: ingest: symbol reference outside the symbols table: timeseries 0: labels_refs: reference 7, table size 5 at byte 36"
	if err := d.Series().Err(); err == nil || err.Error() != want || !errors.Is(err, ErrSymbolRef) {
		t.Fatalf("first series: Err() = %v, want %s", err, want)
	}
	if !d.Next() {
		t.Fatalf("second series: Next() = false, Err() = %v", d.Err())
	}
	s := d.Series()
	if err := s.Err(); err != nil {
		t.Fatalf("second series: Err() = %v", err)
	}
	if got := s.Labels(); !labels.Equal(got, labels.FromStrings("__name__", "up")) {
		t.Fatalf("second series: Labels() = %s", got)
	}
	if errs := s.ExemplarErrs(); len(errs) != 1 || !errors.Is(errs[0], ErrSymbolRef) || !strings.Contains(errs[0].Error(), "timeseries 1: exemplar labels_refs: reference 9") {
		t.Fatalf("second series: ExemplarErrs() = %v", errs)
	}
	if ex := s.Exemplars(); len(ex) != 1 || ex[0].Labels.Get("trace_id") != "abc" {
		t.Fatalf("second series: Exemplars() = %v, want the one that resolves", ex)
	}
	if d.Next() || d.Err() != nil {
		t.Fatalf("after the last series: Next() true or Err() = %v", d.Err())
	}
}

// TestSeriesOwnedMetadata checks that OwnedMetadata's strings outlive the
// request buffer, with and without an interner, and that with a warm
// interner it makes no allocation.
func TestSeriesOwnedMetadata(t *testing.T) {
	st := writev2.NewSymbolTable()
	ts := writev2.TimeSeries{
		LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "http_request_duration_seconds"), nil),
		Samples:    []writev2.Sample{{Value: 1, Timestamp: 1000}},
		Metadata: writev2.Metadata{
			Type:    writev2.Metadata_METRIC_TYPE_HISTOGRAM,
			HelpRef: st.Symbolize("Duration of HTTP requests."),
			UnitRef: st.Symbolize("seconds"),
		},
	}
	noMeta := writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(labels.FromStrings("__name__", "up"), nil), Samples: ts.Samples}
	want := []metadata.Metadata{
		{Type: model.MetricTypeHistogram, Help: "Duration of HTTP requests.", Unit: "seconds"},
		{Type: model.MetricTypeUnknown},
	}
	req := &writev2.Request{Symbols: st.Symbols(), Timeseries: []writev2.TimeSeries{ts, noMeta}}
	for _, tc := range []struct {
		name string
		in   interface{ Intern(b []byte) string }
	}{
		{"interner=none", nil},
		{"interner=map", &decMapInterner{m: map[string]string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := decMarshal(t, req)
			var d Decoder
			if err := d.Reset(buf, v2Msg); err != nil {
				t.Fatal(err)
			}
			var got []metadata.Metadata
			for d.Next() {
				m, ok := d.Series().OwnedMetadata(tc.in)
				if !ok {
					t.Fatalf("OwnedMetadata() ok = false, want true")
				}
				got = append(got, m)
			}
			if err := d.Err(); err != nil {
				t.Fatal(err)
			}
			for i := range buf {
				buf[i] = 'x'
			}
			if !slices.Equal(got, want) {
				t.Fatalf("OwnedMetadata() after the buffer was overwritten = %+v, want %+v", got, want)
			}
		})
	}
	t.Run("v1", func(t *testing.T) {
		var d Decoder
		buf := decMarshal(t, &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{{Labels: []prompb.Label{{Name: "__name__", Value: "up"}}}}})
		if err := d.Reset(buf, v1Msg); err != nil {
			t.Fatal(err)
		}
		for d.Next() {
			if m, ok := d.Series().OwnedMetadata(nil); ok {
				t.Fatalf("OwnedMetadata() of a 1.0 series = %+v, true, want false", m)
			}
		}
	})
	t.Run("allocs", func(t *testing.T) {
		buf := decMarshal(t, req)
		var d Decoder
		in := &decMapInterner{m: map[string]string{}}
		// AllocsPerRun warms up with one run, which also warms the interner.
		allocs := testing.AllocsPerRun(10, func() {
			_ = d.Reset(buf, v2Msg)
			for d.Next() {
				_, _ = d.Series().OwnedMetadata(in)
			}
		})
		if allocs != 0 {
			t.Fatalf("OwnedMetadata() made %v allocations with a warm interner, want 0", allocs)
		}
	})
}
