package decode

import (
	"math"

	"github.com/prometheus/prometheus/prompb"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ingestkit/ingestkit/internal/labelhash"
	"github.com/ingestkit/ingestkit/internal/labelset"
)

// Field numbers of remote write 1.0, from prompb/remote.proto and
// prompb/types.proto in Prometheus v0.316.0.
const (
	v1FieldTimeseries protowire.Number = 1 // WriteRequest.timeseries
	v1FieldMetadata   protowire.Number = 3 // WriteRequest.metadata (2 is reserved)

	v1SeriesLabels     protowire.Number = 1 // TimeSeries.labels
	v1SeriesSamples    protowire.Number = 2 // TimeSeries.samples
	v1SeriesExemplars  protowire.Number = 3 // TimeSeries.exemplars
	v1SeriesHistograms protowire.Number = 4 // TimeSeries.histograms

	v1LabelName  protowire.Number = 1 // Label.name
	v1LabelValue protowire.Number = 2 // Label.value

	// Sample has the fields of the 2.0 Sample but start_timestamp: see
	// parseSample.
	v1SampleValue     = v2SampleValue
	v1SampleTimestamp = v2SampleTimestamp

	v1ExemplarLabels    protowire.Number = 1 // Exemplar.labels
	v1ExemplarValue     protowire.Number = 2 // Exemplar.value, double
	v1ExemplarTimestamp protowire.Number = 3 // Exemplar.timestamp, int64

	v1MetadataType   protowire.Number = 1 // MetricMetadata.type, enum
	v1MetadataFamily protowire.Number = 2 // MetricMetadata.metric_family_name
	v1MetadataHelp   protowire.Number = 4 // MetricMetadata.help
	v1MetadataUnit   protowire.Number = 5 // MetricMetadata.unit
)

// decodeV1 decodes the prometheus.TimeSeries message b into s, which has
// been reset.
func (s *Series) decodeV1(b []byte) *decodeError {
	// The labels are gathered in s.lb.Pairs, for Series.labelSet to add to
	// the set in one call.
	s.lb.Pairs = s.lb.Pairs[:0]
	// sorted stays true while each name gathered by the first fast path
	// below is seen to sort after the one before, from their first eight
	// bytes, zero-padded (key): those pairs go to the set without its own
	// order check (labelset.Set.AddSortedPairs). A tie, a label on another
	// path or too few bytes left to load a key clears it, and the names
	// are then compared in full once the series is gathered.
	sorted, prev := true, uint64(0)
	for len(b) > 0 {
		switch b[0] { // the fast paths of decode_fast.go
		case tagV1Labels:
			// fastLabel, by hand (the compiler does not inline it, and a
			// call per label shows in BenchmarkDecode), first for a label
			// message, name and value of less than 128 bytes, all lengths
			// one byte, in indexes into b rather than subslices.
			if len(b) > 5 && b[1] < 0x80 && b[2] == tagLabelName && b[3] < 0x80 {
				end := 2 + int(b[1]) // of the label message
				ne := 4 + int(b[3])  // of the name
				if ne+1 < end && end <= len(b) && b[ne] == tagLabelValue && b[ne+1] < 0x80 && ne+2+int(b[ne+1]) == end {
					sorted, prev = labelset.KeyOrder(sorted, prev, b[4:min(len(b), 12)], ne-4)
					s.lb.Pairs = labelset.PushPair(s.lb.Pairs)
					q := &s.lb.Pairs[len(s.lb.Pairs)-1]
					q.Name, q.Value = b[4:ne], b[ne+2:end]
					b = b[end:]
					continue
				}
			}
			sorted = false
			if v, n, ok := shortBytes(b[1:]); ok && len(v) > 0 && v[0] == tagLabelName {
				if name, k, ok := shortBytes(v[1:]); ok {
					if rest := v[1+k:]; len(rest) > 0 && rest[0] == tagLabelValue {
						if value, m, ok := shortBytes(rest[1:]); ok && 1+m == len(rest) {
							s.lb.Pairs = append(s.lb.Pairs, labelhash.Pair{Name: name, Value: value})
							b = b[1+n:]
							continue
						}
					}
				}
			}
		case tagV1Samples:
			if v, n, ok := shortBytes(b[1:]); ok {
				if smp, ok := fastSample(v, false); ok {
					s.samples = append(s.samples, smp)
					b = b[1+n:]
					continue
				}
			}
		case tagV1Exemplars:
			if v, n, ok := shortBytes(b[1:]); ok && fastExemplarV1(v) {
				s.rawEx = append(s.rawEx, v)
				b = b[1+n:]
				continue
			}
		}
		num, typ, v, _, n := consumeField(b)
		if n < 0 {
			return parseError("field", b, n)
		}
		switch num {
		case v1SeriesLabels:
			sorted = false
			if typ != protowire.BytesType {
				return wireTypeError("labels", b, typ)
			}
			name, value, e := parseLabel(v)
			if e != nil {
				return e
			}
			s.lb.Pairs = append(s.lb.Pairs, labelhash.Pair{Name: name, Value: value})
		case v1SeriesSamples:
			if typ != protowire.BytesType {
				return wireTypeError("samples", b, typ)
			}
			smp, e := parseSample(v, false)
			if e != nil {
				return e
			}
			s.samples = append(s.samples, smp)
		case v1SeriesExemplars:
			if typ != protowire.BytesType {
				return wireTypeError("exemplars", b, typ)
			}
			if _, _, e := parseExemplarV1(v, nil); e != nil {
				return e
			}
			s.rawEx = append(s.rawEx, v)
		case v1SeriesHistograms:
			if typ != protowire.BytesType {
				return wireTypeError("histograms", b, typ)
			}
			if e := s.histogramV1(v); e != nil {
				return e
			}
		}
		b = b[n:]
	}
	if !sorted {
		// A tie of keys, or a label of the slow path: the names decide.
		sorted = labelset.PairsIncrease(s.lb.Pairs)
	}
	s.lb.Gathered, s.lb.Sorted = true, sorted // see Series.labelSet
	return nil
}

// parseLabel decodes a prometheus.Label. A missing field is empty, as in
// the generated code, and a repeated one overrides the earlier.
func parseLabel(b []byte) (name, value []byte, e *decodeError) {
	if name, value, ok := fastLabel(b); ok {
		return name, value, nil
	}
	for len(b) > 0 {
		num, typ, v, _, n := consumeField(b)
		if n < 0 {
			return nil, nil, parseError("label", b, n)
		}
		switch num {
		case v1LabelName:
			if typ != protowire.BytesType {
				return nil, nil, wireTypeError("label name", b, typ)
			}
			name = v
		case v1LabelValue:
			if typ != protowire.BytesType {
				return nil, nil, wireTypeError("label value", b, typ)
			}
			value = v
		}
		b = b[n:]
	}
	return name, value, nil
}

// parseExemplarV1 decodes a prometheus.Exemplar, adding its labels to set
// unless set is nil, in which case it only checks the message.
func parseExemplarV1(b []byte, set *labelset.Set) (value float64, ts int64, e *decodeError) {
	for len(b) > 0 {
		num, typ, v, x, n := consumeField(b)
		if n < 0 {
			return 0, 0, parseError("exemplar", b, n)
		}
		switch num {
		case v1ExemplarLabels:
			if typ != protowire.BytesType {
				return 0, 0, wireTypeError("exemplar labels", b, typ)
			}
			name, val, e := parseLabel(v)
			if e != nil {
				return 0, 0, e
			}
			if set != nil {
				set.Add(name, val)
			}
		case v1ExemplarValue:
			if typ != protowire.Fixed64Type {
				return 0, 0, wireTypeError("exemplar value", b, typ)
			}
			value = math.Float64frombits(x)
		case v1ExemplarTimestamp:
			if typ != protowire.VarintType {
				return 0, 0, wireTypeError("exemplar timestamp", b, typ)
			}
			ts = int64(x)
		}
		b = b[n:]
	}
	return value, ts, nil
}

// histogramV1 decodes a prometheus.Histogram with the generated code into
// the reused s.sc.h1 and appends its conversion to s.hists.
func (s *Series) histogramV1(b []byte) *decodeError {
	h := &s.sc.h1
	// Reuse only what the conversion copies: it keeps the bucket and
	// custom-value slices in the histogram it returns, so those must be
	// fresh for each histogram.
	*h = prompb.Histogram{
		NegativeSpans:    h.NegativeSpans[:0],
		PositiveSpans:    h.PositiveSpans[:0],
		XXX_unrecognized: h.XXX_unrecognized[:0],
	}
	if err := h.Unmarshal(b); err != nil {
		return &decodeError{kind: ErrMalformed, at: b, what: "histogram", cause: err}
	}
	hs := HistogramSample{Timestamp: h.Timestamp}
	if h.IsFloatHistogram() {
		hs.FH = h.ToFloatHistogram()
	} else {
		hs.H = h.ToIntHistogram()
	}
	s.hists = append(s.hists, hs)
	return nil
}

// checkMetricMetadata checks a prometheus.MetricMetadata, which the Decoder
// does not otherwise use.
func checkMetricMetadata(b []byte) *decodeError {
	for len(b) > 0 {
		num, typ, _, _, n := consumeField(b)
		if n < 0 {
			return parseError("metadata", b, n)
		}
		switch num {
		case v1MetadataType:
			if typ != protowire.VarintType {
				return wireTypeError("metadata type", b, typ)
			}
		case v1MetadataFamily, v1MetadataHelp, v1MetadataUnit:
			if typ != protowire.BytesType {
				return wireTypeError("metadata string", b, typ)
			}
		}
		b = b[n:]
	}
	return nil
}
