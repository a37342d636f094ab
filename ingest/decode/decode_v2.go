package decode

import (
	"math"

	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ingestkit/ingestkit/internal/labelhash"
	"github.com/ingestkit/ingestkit/internal/labelset"
)

// Field numbers of remote write 2.0, from
// prompb/io/prometheus/write/v2/types.proto in Prometheus v0.316.0.
const (
	v2FieldSymbols    protowire.Number = 4 // Request.symbols (1 to 3 are reserved)
	v2FieldTimeseries protowire.Number = 5 // Request.timeseries

	v2SeriesLabelsRefs protowire.Number = 1 // TimeSeries.labels_refs, packed uint32
	v2SeriesSamples    protowire.Number = 2 // TimeSeries.samples
	v2SeriesHistograms protowire.Number = 3 // TimeSeries.histograms
	v2SeriesExemplars  protowire.Number = 4 // TimeSeries.exemplars
	v2SeriesMetadata   protowire.Number = 5 // TimeSeries.metadata (6 is reserved)

	v2ExemplarLabelsRefs protowire.Number = 1 // Exemplar.labels_refs, packed uint32
	v2ExemplarValue      protowire.Number = 2 // Exemplar.value, double
	v2ExemplarTimestamp  protowire.Number = 3 // Exemplar.timestamp, int64

	v2SampleValue          protowire.Number = 1 // Sample.value, double
	v2SampleTimestamp      protowire.Number = 2 // Sample.timestamp, int64
	v2SampleStartTimestamp protowire.Number = 3 // Sample.start_timestamp, int64

	v2MetadataType    protowire.Number = 1 // Metadata.type, enum
	v2MetadataHelpRef protowire.Number = 3 // Metadata.help_ref, uint32
	v2MetadataUnitRef protowire.Number = 4 // Metadata.unit_ref, uint32
)

// indexSymbols reads the top-level fields of a 2.0 request and appends the
// symbols to d.syms, as views of d.buf. It checks the top level only; each
// series is checked when Next decodes it.
func (d *Decoder) indexSymbols() *decodeError {
	for b := d.buf; len(b) > 0; {
		switch b[0] { // the fast paths of decode_fast.go
		case tagV2Symbols:
			if v, n, ok := shortBytes(b[1:]); ok {
				d.syms = append(d.syms, v)
				b = b[1+n:]
				continue
			}
		case tagV2Timeseries:
			if _, n, ok := shortBytes(b[1:]); ok {
				b = b[1+n:]
				continue
			}
		}
		num, typ, v, _, n := consumeField(b)
		if n < 0 {
			return parseError("field", b, n)
		}
		switch num {
		case v2FieldSymbols:
			if typ != protowire.BytesType {
				return wireTypeError("symbols", b, typ)
			}
			d.syms = append(d.syms, v)
		case v2FieldTimeseries:
			if typ != protowire.BytesType {
				return wireTypeError("timeseries", b, typ)
			}
		}
		b = b[n:]
	}
	return nil
}

// decodeV2 decodes the io.prometheus.write.v2.TimeSeries message b into s,
// which has been reset.
func (s *Series) decodeV2(b []byte) *decodeError {
	series := b
	s.lb.Pairs = s.lb.Pairs[:0] // the labels, added to the set at the end
	refs := refPairs{syms: s.syms, out: &s.lb.Pairs}
	for len(b) > 0 {
		switch b[0] { // the fast paths of decode_fast.go
		case tagV2LabelsRefs:
			if v, n, ok := shortBytes(b[1:]); ok {
				if !refs.odd && refs.bad == nil {
					if w, ok := fastPairs(s.lb.Pairs, v, s.syms); ok {
						s.lb.Pairs = w
						b = b[1+n:]
						continue
					}
				}
				if e := refs.packed(v, "labels_refs"); e != nil {
					return e
				}
				b = b[1+n:]
				continue
			}
		case tagV2Samples:
			if v, n, ok := shortBytes(b[1:]); ok {
				if smp, ok := fastSample(v, true); ok {
					s.samples = append(s.samples, smp)
					b = b[1+n:]
					continue
				}
			}
		case tagV2Metadata:
			if v, n, ok := shortBytes(b[1:]); ok && s.fastMetadataV2(v) {
				b = b[1+n:]
				continue
			}
		case tagV2Exemplars:
			if v, n, ok := shortBytes(b[1:]); ok {
				if _, _, _, ok := fastExemplarV2(v, s.syms); ok {
					s.rawEx = append(s.rawEx, v)
					b = b[1+n:]
					continue
				}
			}
		}
		num, typ, v, x, n := consumeField(b)
		if n < 0 {
			return parseError("field", b, n)
		}
		switch num {
		case v2SeriesLabelsRefs:
			if e := refs.field(typ, v, x, b, "labels_refs"); e != nil {
				return e
			}
		case v2SeriesSamples:
			if typ != protowire.BytesType {
				return wireTypeError("samples", b, typ)
			}
			smp, e := parseSample(v, true)
			if e != nil {
				return e
			}
			s.samples = append(s.samples, smp)
		case v2SeriesHistograms:
			if typ != protowire.BytesType {
				return wireTypeError("histograms", b, typ)
			}
			if e := s.histogramV2(v); e != nil {
				return e
			}
		case v2SeriesExemplars:
			if typ != protowire.BytesType {
				return wireTypeError("exemplars", b, typ)
			}
			if _, _, e := parseExemplarV2(v, s.syms, nil); e != nil {
				if e.kind != ErrSymbolRef {
					return e
				}
				// Prometheus's handler skips the exemplar, keeps the
				// series, and answers 400 in the end.
				s.badEx = append(s.badEx, e)
			} else {
				s.rawEx = append(s.rawEx, v)
			}
		case v2SeriesMetadata:
			if typ != protowire.BytesType {
				return wireTypeError("metadata", b, typ)
			}
			// A repeated metadata field merges into the earlier one, as in
			// the generated code.
			if e := s.parseMetadataV2(v); e != nil {
				return e
			}
		}
		b = b[n:]
	}
	// A reference that does not resolve makes the series unusable, not the
	// request malformed: Prometheus's handler skips such a series, writes
	// the others and answers 400. ToMetadata checks both references even
	// when the series has no metadata: an empty symbols table fails it.
	switch {
	case refs.err(series, "labels_refs") != nil:
		s.bad = refs.err(series, "labels_refs")
	case uint64(s.metaUnit) >= uint64(len(s.syms)):
		s.bad = symbolError("metadata unit_ref", series, s.metaUnit, len(s.syms))
	case uint64(s.metaHelp) >= uint64(len(s.syms)):
		s.bad = symbolError("metadata help_ref", series, s.metaHelp, len(s.syms))
	}
	// Sorted names let a lookup compare the pairs without adding them to
	// the set (labelset.Pending.Equal).
	s.lb.Gathered, s.lb.Sorted = true, labelset.PairsIncrease(s.lb.Pairs) // see Series.labelSet
	return nil
}

// refPairs resolves a labels_refs field, which may come in several packed
// or unpacked pieces, into (name, value) pairs appended to out, or else
// added to set, or only checks it if both are nil.
type refPairs struct {
	syms [][]byte
	out  *[]labelhash.Pair
	set  *labelset.Set
	name uint32 // the name of the pair being read, if odd
	odd  bool   // an odd number of references was read so far
	// bad is the first reference that did not resolve. The field is read
	// to its end all the same, so that malformed bytes after it are still
	// found, but no more pairs are added to set.
	bad *decodeError
}

// err returns the error of the references read, if any: the first that
// did not resolve, or an odd number of them.
func (p *refPairs) err(at []byte, what string) *decodeError {
	if p.bad != nil {
		return p.bad
	}
	if p.odd {
		return &decodeError{kind: ErrSymbolRef, at: at, what: what + ": odd number of references"}
	}
	return nil
}

// field reads one labels_refs field of wire type typ: a single reference x,
// or the packed references v. at is where the field starts.
func (p *refPairs) field(typ protowire.Type, v []byte, x uint64, at []byte, what string) *decodeError {
	switch typ {
	case protowire.VarintType:
		// The generated code keeps the low 32 bits of a larger varint.
		return p.add(uint32(x), at, what)
	case protowire.BytesType:
		return p.packed(v, what)
	default:
		return wireTypeError(what, at, typ)
	}
}

// packed reads the packed references v of one labels_refs field. Most
// references are varints of one or two bytes, read inline; the pairs of a
// series (out set) are gathered in a local slice, by index into v.
func (p *refPairs) packed(v []byte, what string) *decodeError {
	if p.out == nil {
		return p.packedAdd(v, what)
	}
	out, syms := *p.out, p.syms
	name, odd, bad := p.name, p.odd, p.bad
	for i := 0; i < len(v); {
		at := i
		x, next, ok := shortRef(v, i)
		if ok {
			i = next
		} else {
			y, n := protowire.ConsumeVarint(v[i:])
			if n < 0 {
				*p.out, p.name, p.odd, p.bad = out, name, odd, bad
				return &decodeError{kind: ErrMalformed, at: v[i:], what: "packed " + what, cause: protowire.ParseError(n)}
			}
			x, i = y, i+n
		}
		// add, by hand: the compiler does not inline it.
		ref := uint32(x)
		if uint64(ref) >= uint64(len(syms)) && bad == nil {
			bad = symbolError(what, v[at:], ref, len(syms))
		}
		if !odd {
			name, odd = ref, true
			continue
		}
		odd = false
		if bad == nil {
			out = labelset.PushPair(out)
			q := &out[len(out)-1]
			q.Name, q.Value = syms[name], syms[ref]
		}
	}
	*p.out, p.name, p.odd, p.bad = out, name, odd, bad
	return nil
}

// packedAdd is packed with each reference read by add: for exemplars,
// whose pairs go to a set, or are only checked.
func (p *refPairs) packedAdd(v []byte, what string) *decodeError {
	for len(v) > 0 {
		x, n := protowire.ConsumeVarint(v)
		if n < 0 {
			return &decodeError{kind: ErrMalformed, at: v, what: "packed " + what, cause: protowire.ParseError(n)}
		}
		if e := p.add(uint32(x), v, what); e != nil {
			return e
		}
		v = v[n:]
	}
	return nil
}

// add reads one reference.
func (p *refPairs) add(ref uint32, at []byte, what string) *decodeError {
	if uint64(ref) >= uint64(len(p.syms)) && p.bad == nil {
		p.bad = symbolError(what, at, ref, len(p.syms))
	}
	if !p.odd {
		p.name, p.odd = ref, true
		return nil
	}
	p.odd = false
	switch {
	case p.bad != nil:
	case p.out != nil:
		*p.out = append(*p.out, labelhash.Pair{Name: p.syms[p.name], Value: p.syms[ref]})
	case p.set != nil:
		p.set.Add(p.syms[p.name], p.syms[ref])
	}
	return nil
}

// parseSample decodes a prometheus.Sample, or with v2 an
// io.prometheus.write.v2.Sample: the same message with a start timestamp
// (field 3, unknown to 1.0 and skipped there).
func parseSample(b []byte, v2 bool) (smp Sample, e *decodeError) {
	for len(b) > 0 {
		num, typ, _, x, n := consumeField(b)
		if n < 0 {
			return Sample{}, parseError("sample", b, n)
		}
		switch {
		case num == v2SampleValue:
			if typ != protowire.Fixed64Type {
				return Sample{}, wireTypeError("sample value", b, typ)
			}
			smp.Value = math.Float64frombits(x)
		case num == v2SampleTimestamp:
			if typ != protowire.VarintType {
				return Sample{}, wireTypeError("sample timestamp", b, typ)
			}
			smp.Timestamp = int64(x)
		case num == v2SampleStartTimestamp && v2:
			if typ != protowire.VarintType {
				return Sample{}, wireTypeError("sample start_timestamp", b, typ)
			}
			smp.StartTimestamp = int64(x)
		}
		b = b[n:]
	}
	return smp, nil
}

// parseExemplarV2 decodes an io.prometheus.write.v2.Exemplar, resolving its
// labels in syms and adding them to set unless set is nil, in which case it
// only checks the message.
func parseExemplarV2(b []byte, syms [][]byte, set *labelset.Set) (value float64, ts int64, e *decodeError) {
	ex := b
	refs := refPairs{syms: syms, set: set}
	for len(b) > 0 {
		num, typ, v, x, n := consumeField(b)
		if n < 0 {
			return 0, 0, parseError("exemplar", b, n)
		}
		switch num {
		case v2ExemplarLabelsRefs:
			if e := refs.field(typ, v, x, b, "exemplar labels_refs"); e != nil {
				return 0, 0, e
			}
		case v2ExemplarValue:
			if typ != protowire.Fixed64Type {
				return 0, 0, wireTypeError("exemplar value", b, typ)
			}
			value = math.Float64frombits(x)
		case v2ExemplarTimestamp:
			if typ != protowire.VarintType {
				return 0, 0, wireTypeError("exemplar timestamp", b, typ)
			}
			ts = int64(x)
		}
		b = b[n:]
	}
	if e := refs.err(ex, "exemplar labels_refs"); e != nil {
		return 0, 0, e
	}
	return value, ts, nil
}

// parseMetadataV2 decodes an io.prometheus.write.v2.Metadata into s's
// metadata fields, over what an earlier metadata field of the series set.
func (s *Series) parseMetadataV2(b []byte) *decodeError {
	for len(b) > 0 {
		num, typ, _, x, n := consumeField(b)
		if n < 0 {
			return parseError("metadata", b, n)
		}
		switch num {
		case v2MetadataType:
			if typ != protowire.VarintType {
				return wireTypeError("metadata type", b, typ)
			}
			s.metaType = int32(x) // an enum is an int32 in the generated code
		case v2MetadataHelpRef:
			if typ != protowire.VarintType {
				return wireTypeError("metadata help_ref", b, typ)
			}
			s.metaHelp = uint32(x)
		case v2MetadataUnitRef:
			if typ != protowire.VarintType {
				return wireTypeError("metadata unit_ref", b, typ)
			}
			s.metaUnit = uint32(x)
		}
		b = b[n:]
	}
	return nil
}

// histogramV2 decodes an io.prometheus.write.v2.Histogram with the
// generated code into the reused s.sc.h2 and appends its conversion to
// s.hists.
func (s *Series) histogramV2(b []byte) *decodeError {
	h := &s.sc.h2
	// As in histogramV1: the conversion keeps the bucket and custom-value
	// slices, so only the others are reused.
	*h = writev2.Histogram{
		NegativeSpans:    h.NegativeSpans[:0],
		PositiveSpans:    h.PositiveSpans[:0],
		XXX_unrecognized: h.XXX_unrecognized[:0],
	}
	if err := h.Unmarshal(b); err != nil {
		return &decodeError{kind: ErrMalformed, at: b, what: "histogram", cause: err}
	}
	hs := HistogramSample{StartTimestamp: h.StartTimestamp, Timestamp: h.Timestamp}
	if h.IsFloatHistogram() {
		hs.FH = h.ToFloatHistogram()
	} else {
		hs.H = h.ToIntHistogram()
	}
	s.hists = append(s.hists, hs)
	return nil
}
