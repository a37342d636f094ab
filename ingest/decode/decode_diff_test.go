package decode

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/ingestkit/ingestkit/internal/promcompat"
	"github.com/ingestkit/ingestkit/internal/rwtest"
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
		m, err := promcompat.ToMetadata(ts, req.Symbols)
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
	return decDecodeBatches(tb, d, buf, msg, 0)
}

// decEach calls f for each series of the request d was reset to: as
// Next yields them if batch is 0, else as NextBatch(batch) yields them,
// each batch whole before f sees its first series, so that what one
// series of a batch shares with another shows.
func decEach(d *Decoder, batch int, f func(s *Series)) {
	if batch == 0 {
		for d.Next() {
			f(d.Series())
		}
		return
	}
	for {
		b := d.NextBatch(batch)
		if len(b) == 0 {
			return
		}
		if len(b) > min(max(batch, 1), MaxBatch) {
			panic(fmt.Sprintf("NextBatch(%d) returned %d series", batch, len(b)))
		}
		for _, s := range b {
			f(s)
		}
	}
}

// decDecodeBatches is decDecodeAll with the series as decEach yields
// them.
func decDecodeBatches(tb testing.TB, d *Decoder, buf []byte, msg remoteapi.WriteMessageType, batch int) ([]decSeries, error) {
	tb.Helper()
	_ = d.Reset(buf, msg) // its error is d.Err
	var out []decSeries
	decEach(d, batch, func(s *Series) {
		if err := s.Err(); err != nil {
			if !errors.Is(err, ErrSymbolRef) {
				tb.Fatalf("Series.Err() = %v, want ErrSymbolRef", err)
			}
			if m, ok := s.Metadata(); ok {
				tb.Fatalf("Series.Metadata() of a series with an error = %+v, true", m)
			}
			decCheckMatchesNothing(tb, s)
			out = append(out, decSeries{bad: true})
			return
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
	})
	if d.Err() == nil {
		decCheckEqualPending(tb, buf, msg, out)
	}
	return out, d.Err()
}

// decCheckEqualPending decodes buf again and checks Series.Equal before
// any other accessor adds the series' pairs to its Set (the path of a
// lookup that confirms a cache guess): against the series' own labels, as
// decDecodeAll built them into got, those of the series before it and its
// labels with a byte more in the last value. The hashes, computed after,
// must be those decDecodeAll saw.
func decCheckEqualPending(tb testing.TB, buf []byte, msg remoteapi.WriteMessageType, got []decSeries) {
	tb.Helper()
	var d Decoder
	_ = d.Reset(buf, msg)
	for i := 0; d.Next(); i++ {
		s := d.Series()
		if got[i].bad {
			continue
		}
		ls := got[i].lset
		if !s.Equal(ls) {
			tb.Fatalf("series %d: Series.Equal(%s) as the first accessor = false, want true", i, ls)
		}
		if i > 0 && !got[i-1].bad {
			prev := got[i-1].lset
			if eq, want := s.Equal(prev), labels.Equal(ls, prev); eq != want {
				tb.Fatalf("series %d %s: Series.Equal(%s) before the labels were built = %v, want %v", i, ls, prev, eq, want)
			}
		}
		if n := ls.Len(); n > 0 {
			b := labels.NewScratchBuilder(n)
			k := 0
			ls.Range(func(l labels.Label) {
				if k++; k == n {
					l.Value += "x"
				}
				b.Add(l.Name, l.Value)
			})
			if longer := b.Labels(); s.Equal(longer) {
				tb.Fatalf("series %d: Series.Equal(%s) of %s before the labels were built = true", i, longer, ls)
			}
		}
		if h := s.Hash(); h != got[i].hash {
			tb.Fatalf("series %d %s: Hash() after Equal = %#x, want %#x", i, ls, h, got[i].hash)
		}
		if l := s.Labels(); !labels.Equal(l, ls) {
			tb.Fatalf("series %d: Labels() after Equal = %s, want %s", i, l, ls)
		}
	}
}

// decCheckMatchesNothing fails tb unless s, a series with an error,
// answers as a series of no labels: not equal to the pairs decoded before
// its bad reference, nor to any label set.
func decCheckMatchesNothing(tb testing.TB, s *Series) {
	tb.Helper()
	if partial := s.lb.Set.Labels(); s.Equal(partial) {
		tb.Fatalf("Series.Equal(%s), the pairs before the bad reference, of a series with an error = true", partial)
	}
	if s.Equal(labels.EmptyLabels()) {
		tb.Fatalf("Series.Equal({}) of a series with an error = true")
	}
	if h := s.Hash(); h != 0 {
		tb.Fatalf("Series.Hash() of a series with an error = %#x, want 0", h)
	}
	if s.withTenant {
		if h := s.tenantHash(); h != 0 {
			tb.Fatalf("Series.tenantHash() of a series with an error = %#x, want 0", h)
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
	// NextBatch yields what Next yields, up to the same error, with every
	// series of a batch held at once: in batches of one, of a few, or of
	// MaxBatch, by the request's length.
	batch := []int{1, 7, MaxBatch}[len(in)%3]
	bbuf := slices.Clone(in)
	gotB, errB := decDecodeBatches(tb, d, bbuf, msg, batch)
	for i := range bbuf {
		bbuf[i] = ^bbuf[i]
	}
	if fmt.Sprint(errB) != fmt.Sprint(err) {
		tb.Fatalf("NextBatch(%d): Decoder.Err() = %v, Next's %v", batch, errB, err)
	}
	decCompare(tb, gotB, got)

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
