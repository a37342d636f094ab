package decode

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ingestkit/ingestkit/internal/labelhash"
	"github.com/ingestkit/ingestkit/internal/labelset"
)

// The fast paths of the Decoder. Every encoder of remote write (Prometheus's
// generated code, client_golang, the OpenTelemetry exporters) writes the
// fields of a series, a label, a sample, 2.0 metadata and an exemplar in
// field order, with one-byte tags, short lengths and short symbol
// references; for those bytes the decoder reads the wire inline, without
// the calls into protowire that the general path makes for each tag, length
// and varint. A fast path only accepts bytes whose meaning is plain (the
// exact tag expected, a length of one or two bytes that stays within the
// message, nothing repeated or unknown, references that resolve) and
// otherwise leaves the bytes, untouched, to the general path, which
// decides: so the results, and the errors, are those of the general path.
// The differential and fuzz tests run both. BenchmarkDecode measures them.

// The one-byte tags that the fast paths look for: field number << 3 | wire
// type, which TestDecodeTags checks against protowire.EncodeTag.
const (
	tagV1Timeseries   = byte(v1FieldTimeseries<<3) | byte(protowire.BytesType)
	tagV2Timeseries   = byte(v2FieldTimeseries<<3) | byte(protowire.BytesType)
	tagV2Symbols      = byte(v2FieldSymbols<<3) | byte(protowire.BytesType)
	tagV1Labels       = byte(v1SeriesLabels<<3) | byte(protowire.BytesType)
	tagV1Samples      = byte(v1SeriesSamples<<3) | byte(protowire.BytesType)
	tagV1Exemplars    = byte(v1SeriesExemplars<<3) | byte(protowire.BytesType)
	tagV1ExLabels     = byte(v1ExemplarLabels<<3) | byte(protowire.BytesType)
	tagV1ExValue      = byte(v1ExemplarValue<<3) | byte(protowire.Fixed64Type)
	tagV1ExTime       = byte(v1ExemplarTimestamp<<3) | byte(protowire.VarintType)
	tagV2LabelsRefs   = byte(v2SeriesLabelsRefs<<3) | byte(protowire.BytesType)
	tagV2Samples      = byte(v2SeriesSamples<<3) | byte(protowire.BytesType)
	tagV2Metadata     = byte(v2SeriesMetadata<<3) | byte(protowire.BytesType)
	tagV2Exemplars    = byte(v2SeriesExemplars<<3) | byte(protowire.BytesType)
	tagExemplarRefs   = byte(v2ExemplarLabelsRefs<<3) | byte(protowire.BytesType)
	tagExemplarValue  = byte(v2ExemplarValue<<3) | byte(protowire.Fixed64Type)
	tagExemplarTime   = byte(v2ExemplarTimestamp<<3) | byte(protowire.VarintType)
	tagSampleValue    = byte(v2SampleValue<<3) | byte(protowire.Fixed64Type)
	tagSampleTime     = byte(v2SampleTimestamp<<3) | byte(protowire.VarintType)
	tagSampleStart    = byte(v2SampleStartTimestamp<<3) | byte(protowire.VarintType)
	tagMetadataType   = byte(v2MetadataType<<3) | byte(protowire.VarintType)
	tagMetadataHelp   = byte(v2MetadataHelpRef<<3) | byte(protowire.VarintType)
	tagMetadataUnit   = byte(v2MetadataUnitRef<<3) | byte(protowire.VarintType)
	tagLabelName      = byte(v1LabelName<<3) | byte(protowire.BytesType)
	tagLabelValue     = byte(v1LabelValue<<3) | byte(protowire.BytesType)
	maxShortBytesSize = 1<<14 - 1 // the longest value shortBytes reads
)

// shortBytes reads the value of a length-delimited field whose length, at
// the start of b, is a varint of one or two bytes (up to
// maxShortBytesSize): v is the value and n the bytes of length and value.
// ok is false if the length is longer, or runs past the end of b.
func shortBytes(b []byte) (v []byte, n int, ok bool) {
	var l int
	switch {
	case len(b) > 0 && b[0] < 0x80:
		l, n = int(b[0]), 1
	case len(b) > 1 && b[1] < 0x80:
		l, n = int(b[0]&0x7f)|int(b[1])<<7, 2
	default:
		return nil, 0, false
	}
	if l > len(b)-n {
		return nil, 0, false
	}
	return b[n : n+l], n + l, true
}

// shortRef reads the symbol reference of one or two bytes at v[i], the
// form of nearly every reference of a 2.0 request, and returns it and the
// position after it; ok is false if v holds no such reference at i (a
// longer varint, or one cut short), which is for protowire to read or
// reject.
func shortRef(v []byte, i int) (x uint64, next int, ok bool) {
	if c := v[i]; c < 0x80 {
		return uint64(c), i + 1, true
	} else if i+1 < len(v) && v[i+1] < 0x80 {
		return uint64(c&0x7f) | uint64(v[i+1])<<7, i + 2, true
	}
	return 0, i, false
}

// shortVarint reads a varint of at most nine bytes (63 bits) at the start of
// b; n is 0 if there is none: a longer varint, or one that runs past the end
// of b, is for protowire to read or reject.
func shortVarint(b []byte) (x uint64, n int) {
	for i := 0; i < len(b) && i < 9; i++ {
		c := b[i]
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}

// fastLabel reads a prometheus.Label that holds its name and then its value,
// with short lengths, and nothing else. name and value are views of v whose
// capacity runs on to the end of the request, which lets the hasher copy
// them in whole words.
func fastLabel(v []byte) (name, value []byte, ok bool) {
	if len(v) == 0 || v[0] != tagLabelName {
		return nil, nil, false
	}
	name, n, ok := shortBytes(v[1:])
	if !ok {
		return nil, nil, false
	}
	rest := v[1+n:]
	if len(rest) == 0 || rest[0] != tagLabelValue {
		return nil, nil, false
	}
	value, m, ok := shortBytes(rest[1:])
	if !ok || 1+m != len(rest) {
		return nil, nil, false
	}
	return name, value, true
}

// fastSample reads a Sample (1.0, or 2.0 with v2) that holds its value, then
// its timestamp if not 0, then (2.0) its start timestamp if not 0, each at
// most once, with varints of up to nine bytes (negative timestamps take ten,
// and the general path).
func fastSample(v []byte, v2 bool) (smp Sample, ok bool) {
	if len(v) < 9 || v[0] != tagSampleValue {
		return Sample{}, false
	}
	smp.Value = math.Float64frombits(binary.LittleEndian.Uint64(v[1:9]))
	rest := v[9:]
	if len(rest) > 0 && rest[0] == tagSampleTime {
		x, n := shortVarint(rest[1:])
		if n == 0 {
			return Sample{}, false
		}
		smp.Timestamp = int64(x)
		rest = rest[1+n:]
	}
	if v2 && len(rest) > 0 && rest[0] == tagSampleStart {
		x, n := shortVarint(rest[1:])
		if n == 0 {
			return Sample{}, false
		}
		smp.StartTimestamp = int64(x)
		rest = rest[1+n:]
	}
	return smp, len(rest) == 0
}

// fastExemplarV1 reports whether v is a prometheus.Exemplar that holds its
// labels, each as fastLabel reads it, then its value, then its timestamp,
// the value and the timestamp at most once (the encoders leave out those
// that are 0) and the timestamp of up to nine bytes: bytes that
// parseExemplarV1 accepts. Like the check of Next, it reads nothing out;
// [Series.Exemplars] decodes the exemplar with parseExemplarV1.
func fastExemplarV1(v []byte) bool {
	for len(v) > 0 && v[0] == tagV1ExLabels {
		l, n, ok := shortBytes(v[1:])
		if !ok {
			return false
		}
		if _, _, ok := fastLabel(l); !ok {
			return false
		}
		v = v[1+n:]
	}
	if len(v) > 0 && v[0] == tagV1ExValue {
		if len(v) < 9 {
			return false
		}
		v = v[9:]
	}
	if len(v) > 0 && v[0] == tagV1ExTime {
		_, n := shortVarint(v[1:])
		if n == 0 {
			return false
		}
		v = v[1+n:]
	}
	return len(v) == 0
}

// fastMetadataV2 reads an io.prometheus.write.v2.Metadata of varint fields
// type, help_ref and unit_ref, in that order, each at most once, into s's
// metadata fields, over what an earlier metadata field of the series set,
// as parseMetadataV2 does.
func (s *Series) fastMetadataV2(v []byte) bool {
	typ, help, unit := s.metaType, s.metaHelp, s.metaUnit
	if len(v) > 0 && v[0] == tagMetadataType {
		x, n := shortVarint(v[1:])
		if n == 0 {
			return false
		}
		typ, v = int32(x), v[1+n:]
	}
	if len(v) > 0 && v[0] == tagMetadataHelp {
		x, n := shortVarint(v[1:])
		if n == 0 {
			return false
		}
		help, v = uint32(x), v[1+n:]
	}
	if len(v) > 0 && v[0] == tagMetadataUnit {
		x, n := shortVarint(v[1:])
		if n == 0 {
			return false
		}
		unit, v = uint32(x), v[1+n:]
	}
	if len(v) != 0 {
		return false
	}
	s.metaType, s.metaHelp, s.metaUnit = typ, help, unit
	return true
}

// fastExemplarV2 reads an io.prometheus.write.v2.Exemplar that holds its
// packed labels_refs, its value and its timestamp, in that order, each at
// most once (the encoders leave out those that are empty or 0), with
// references of one or two bytes that all resolve in syms, an even number
// of them, and a timestamp of up to nine bytes. refs is the packed
// references; an exemplar with any other bytes, including a reference that
// does not resolve, is for parseExemplarV2, which makes its error.
func fastExemplarV2(v []byte, syms [][]byte) (refs []byte, value float64, ts int64, ok bool) {
	if len(v) > 0 && v[0] == tagExemplarRefs {
		r, n, ok := shortBytes(v[1:])
		if !ok {
			return nil, 0, 0, false
		}
		odd := false
		for i := 0; i < len(r); {
			x, next, ok := shortRef(r, i)
			if !ok {
				return nil, 0, 0, false
			}
			i = next
			if x >= uint64(len(syms)) {
				return nil, 0, 0, false
			}
			odd = !odd
		}
		if odd {
			return nil, 0, 0, false
		}
		refs, v = r, v[1+n:]
	}
	if len(v) > 0 && v[0] == tagExemplarValue {
		if len(v) < 9 {
			return nil, 0, 0, false
		}
		value, v = math.Float64frombits(binary.LittleEndian.Uint64(v[1:9])), v[9:]
	}
	if len(v) > 0 && v[0] == tagExemplarTime {
		x, n := shortVarint(v[1:])
		if n == 0 {
			return nil, 0, 0, false
		}
		ts, v = int64(x), v[1+n:]
	}
	return refs, value, ts, len(v) == 0
}

// addRefs adds to set the pairs of refs, packed references that
// fastExemplarV2 checked against syms.
func addRefs(set *labelset.Set, refs []byte, syms [][]byte) {
	var name uint64
	odd := false
	for i := 0; i < len(refs); {
		x, next, _ := shortRef(refs, i) // checked by fastExemplarV2
		i = next
		if !odd {
			name, odd = x, true
			continue
		}
		odd = false
		set.Add(syms[name], syms[x])
	}
}

// fastPairs appends to out the (name, value) pairs of v, the packed
// references of a series' labels_refs field, if each reference is a varint
// of one or two bytes that resolves in syms and there is an even number of
// them; otherwise it returns out as it was and false, and refPairs.packed
// reads v. It reads a pair at a time, with few enough live values to keep
// them in registers, which the general loop cannot (BenchmarkDecode in
// examples/peers, rw=2/case=captured).
func fastPairs(out []labelhash.Pair, v []byte, syms [][]byte) ([]labelhash.Pair, bool) {
	n0 := len(out)
	for i := 0; i < len(v); {
		name, i1, ok := shortRef(v, i)
		if !ok || i1 >= len(v) {
			return out[:n0], false
		}
		value, i2, ok := shortRef(v, i1)
		if !ok {
			return out[:n0], false
		}
		i = i2
		if name >= uint64(len(syms)) || value >= uint64(len(syms)) {
			return out[:n0], false
		}
		out = labelset.PushPair(out)
		q := &out[len(out)-1]
		q.Name, q.Value = syms[name], syms[value]
	}
	return out, true
}
