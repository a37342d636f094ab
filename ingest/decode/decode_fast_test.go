package decode

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestDecodeFastPathEdges decodes, against Prometheus's generated code, the
// bytes on either side of what the fast paths of decode_fast.go accept:
// lengths at the one-, two- and three-byte varint edges (a label of name
// "zz" and a value of 121 bytes is a message of 127), non-minimal
// varints, fields out of order, repeated or unknown, and 9- and 10-byte
// timestamps. Each must give what the general path gives.
func TestDecodeFastPathEdges(t *testing.T) {
	// label builds a labels field from raw Label bytes.
	label := func(raw []byte) []byte { return decMsg(nil, v1SeriesLabels, raw) }
	name := func(s string) []byte { return decMsg(nil, v1LabelName, []byte(s)) }
	value := func(s string) []byte { return decMsg(nil, v1LabelValue, []byte(s)) }
	// nonMinimal is a length-delimited field whose length takes a
	// needless second byte.
	nonMinimal := func(num protowire.Number, s string) []byte {
		return append(append(decTag(nil, num, protowire.BytesType), byte(len(s))|0x80, 0), s...)
	}
	val := func(b []byte, v float64) []byte {
		return protowire.AppendFixed64(decTag(b, v1SampleValue, protowire.Fixed64Type), math.Float64bits(v))
	}
	sample := func(fields ...[]byte) []byte { return decMsg(nil, v1SeriesSamples, slices.Concat(fields...)) }
	ts := func(v uint64) []byte { return decVarint(nil, v1SampleTimestamp, v) }
	st := func(v uint64) []byte { return decVarint(nil, v2SampleStartTimestamp, v) }
	up := decV1Label("__name__", "up")
	neg := uint64(math.MaxUint64 - 999) // -1000 as a 10-byte varint

	type tc struct {
		name string
		buf  []byte
	}
	var v1Cases, v2Cases []tc
	for _, n := range []int{0, 1, 120, 121, 122, 123, 127, 128, 129, maxShortBytesSize - 20, maxShortBytesSize, maxShortBytesSize + 1, 20000} {
		s := strings.Repeat("v", n)
		v1Cases = append(v1Cases,
			tc{fmt.Sprintf("value of %d bytes", n), decV1Series(up, decV1Label("zz", s), sample(val(nil, 1), ts(5)))},
			tc{fmt.Sprintf("name of %d bytes", n), decV1Series(up, decV1Label("z"+s, "v"))},
		)
		v2Cases = append(v2Cases, tc{fmt.Sprintf("symbol of %d bytes", n),
			decV2Request(append(slices.Clone(decSyms), s), decPacked(v2SeriesLabelsRefs, 1, 2, 3, 5))})
	}
	v1Cases = append(v1Cases,
		tc{"label value before name", decV1Series(up, label(slices.Concat(value("x"), name("job"))))},
		tc{"label name only", decV1Series(up, label(name("job")))},
		tc{"label value only", decV1Series(label(value("x")), up)},
		tc{"label name repeated", decV1Series(up, label(slices.Concat(name("a"), name("job"), value("x"))))},
		tc{"label value repeated", decV1Series(up, label(slices.Concat(name("job"), value("a"), value("x"))))},
		tc{"label with an unknown field", decV1Series(up, label(slices.Concat(name("job"), value("x"), decVarint(nil, 9, 1))))},
		tc{"label lengths not minimal", decV1Series(up, label(slices.Concat(nonMinimal(v1LabelName, "job"), nonMinimal(v1LabelValue, "x"))))},
		tc{"labels field length not minimal", decV1Series(up, append(append(decTag(nil, v1SeriesLabels, protowire.BytesType), byte(len(name("a"))+len(value("b")))|0x80, 0), slices.Concat(name("a"), value("b"))...))},
		tc{"empty label", decV1Series(up, label(nil))},
		tc{"sample value only", decV1Series(up, sample(val(nil, 2)))},
		tc{"sample timestamp only", decV1Series(up, sample(ts(7)))},
		tc{"sample timestamp first", decV1Series(up, sample(ts(7), val(nil, 2)))},
		tc{"sample timestamp repeated", decV1Series(up, sample(val(nil, 2), ts(7), ts(8)))},
		tc{"sample value repeated", decV1Series(up, sample(val(nil, 2), val(nil, 3), ts(8)))},
		tc{"sample timestamp of 9 bytes", decV1Series(up, sample(val(nil, 2), ts(math.MaxInt64)))},
		tc{"sample negative timestamp", decV1Series(up, sample(val(nil, 2), ts(neg)))},
		tc{"sample with a start timestamp, unknown to 1.0", decV1Series(up, sample(val(nil, 2), ts(7), st(3)))},
		tc{"empty sample", decV1Series(up, sample())},
		tc{"samples then labels", decV1Series(sample(val(nil, 2), ts(7)), up, decV1Label("job", "x"))},
		tc{"series of 3-byte length", decV1Series(up, decV1Label("zz", strings.Repeat("v", 20000)), sample(val(nil, 1), ts(5)))},
	)
	// The order check that decodeV1 fuses into gathering: names that tie
	// in their first eight bytes, zero-padded, or sort before the one
	// before, and a last label too close to the end of the series to load
	// eight bytes.
	lbl := func(n, v string) []byte { return decV1Label(n, v) }
	v1Cases = append(v1Cases,
		tc{"names in order", decV1Series(up, lbl("a", "1"), lbl("abcdefgh", "2"), lbl("abcdefghi", "3"), lbl("b", "4"))},
		tc{"names out of order", decV1Series(up, lbl("job", "1"), lbl("env", "2"))},
		tc{"names out of order after 8 bytes", decV1Series(up, lbl("abcdefgh2", "1"), lbl("abcdefgh1", "2"))},
		tc{"names in order after 8 bytes", decV1Series(up, lbl("abcdefgh1", "1"), lbl("abcdefgh2", "2"))},
		tc{"name repeated", decV1Series(up, lbl("job", "b"), lbl("job", "a"))},
		tc{"name a prefix of the next", decV1Series(up, lbl("a", "1"), lbl("ab", "2"))},
		tc{"name longer than the next", decV1Series(up, lbl("ab", "1"), lbl("a", "2"))},
		tc{"name ending in a zero byte", decV1Series(up, lbl("a\x00", "1"), lbl("a", "2"))},
		tc{"name then one ending in a zero byte", decV1Series(up, lbl("a", "1"), lbl("a\x00", "2"))},
		tc{"name after one that extends it by a byte below the value's tag", decV1Series(up, lbl("a\x05", "1"), lbl("a", "2"))},
		tc{"name of 7 bytes after one that extends it", decV1Series(up, lbl("abcdefg\x05", "1"), lbl("abcdefg", "2"))},
		tc{"empty name first", decV1Series(lbl("", "x"), up)},
		tc{"empty name after", decV1Series(up, lbl("", "x"))},
		tc{"last label at the end of the series", decV1Series(up, lbl("a", ""))},
		tc{"labels of one and two length bytes", decV1Series(up, lbl("a", strings.Repeat("v", 200)), lbl("b", "1"))},
		tc{"labels of two length bytes out of order", decV1Series(up, lbl("b", strings.Repeat("v", 200)), lbl("a", "1"))},
		tc{"label after samples, out of order", decV1Series(lbl("job", "1"), sample(val(nil, 1), ts(5)), up)},
	)
	ex1 := func(fields ...[]byte) []byte { return decMsg(nil, v1SeriesExemplars, slices.Concat(fields...)) }
	exLabel := func(raw []byte) []byte { return decMsg(nil, v1ExemplarLabels, raw) }
	exName := exLabel(slices.Concat(name("trace_id"), value("abc")))
	ex1Val := func(v float64) []byte {
		return protowire.AppendFixed64(decTag(nil, v1ExemplarValue, protowire.Fixed64Type), math.Float64bits(v))
	}
	ex1Ts := func(v uint64) []byte { return decVarint(nil, v1ExemplarTimestamp, v) }
	v1Cases = append(v1Cases,
		tc{"exemplar in order", decV1Series(up, ex1(exName, exLabel(slices.Concat(name("span_id"), value("d"))), ex1Val(1.5), ex1Ts(9)))},
		tc{"exemplar after samples", decV1Series(up, sample(val(nil, 1), ts(5)), ex1(exName, ex1Val(1.5), ex1Ts(9)))},
		tc{"empty exemplar", decV1Series(up, ex1())},
		tc{"exemplar value only", decV1Series(up, ex1(ex1Val(1.5)))},
		tc{"exemplar timestamp only", decV1Series(up, ex1(ex1Ts(9)))},
		tc{"exemplar labels only", decV1Series(up, ex1(exName))},
		tc{"exemplar timestamp first", decV1Series(up, ex1(ex1Ts(9), exName, ex1Val(1.5)))},
		tc{"exemplar value before labels", decV1Series(up, ex1(ex1Val(1.5), exName, ex1Ts(9)))},
		tc{"exemplar value repeated", decV1Series(up, ex1(exName, ex1Val(1.5), ex1Val(2.5)))},
		tc{"exemplar timestamp repeated", decV1Series(up, ex1(exName, ex1Ts(9), ex1Ts(10)))},
		tc{"exemplar with an unknown field", decV1Series(up, ex1(exName, decVarint(nil, 9, 1), ex1Val(1.5)))},
		tc{"exemplar label value before name", decV1Series(up, ex1(exLabel(slices.Concat(value("x"), name("a"))), ex1Val(1.5)))},
		tc{"exemplar label name only", decV1Series(up, ex1(exLabel(name("a")), ex1Val(1.5)))},
		tc{"exemplar empty label", decV1Series(up, ex1(exLabel(nil), ex1Val(1.5)))},
		tc{"exemplar label of 128 bytes", decV1Series(up, ex1(exLabel(slices.Concat(name("a"), value(strings.Repeat("v", 123)))), ex1Val(1.5)))},
		tc{"exemplar label length not minimal", decV1Series(up, ex1(exLabel(slices.Concat(nonMinimal(v1LabelName, "a"), value("b"))), ex1Val(1.5)))},
		tc{"exemplar timestamp of 9 bytes", decV1Series(up, ex1(exName, ex1Val(1.5), ex1Ts(math.MaxInt64)))},
		tc{"exemplar negative timestamp", decV1Series(up, ex1(exName, ex1Val(1.5), ex1Ts(neg)))},
		tc{"exemplar value cut short", decV1Series(up, ex1(exName, ex1Val(1.5)[:5]))},
		tc{"exemplar timestamp cut short", decV1Series(up, ex1(exName, ex1Ts(1 << 40)[:3]))},
		tc{"exemplar label cut short", decV1Series(up, ex1(exName[:len(exName)-1]))},
		tc{"exemplar value with a wrong wire type", decV1Series(up, ex1(exName, decVarint(nil, v1ExemplarValue, 3)))},
		tc{"exemplars, one bad", decV1Series(up, ex1(exName, ex1Ts(5)), ex1(exName, ex1Val(1.5)[:5]), ex1(exName))},
	)
	meta := func(fields ...[]byte) []byte { return decMsg(nil, v2SeriesMetadata, slices.Concat(fields...)) }
	mtype := func(v uint64) []byte { return decVarint(nil, v2MetadataType, v) }
	help := func(v uint64) []byte { return decVarint(nil, v2MetadataHelpRef, v) }
	unit := func(v uint64) []byte { return decVarint(nil, v2MetadataUnitRef, v) }
	refs := decPacked(v2SeriesLabelsRefs, 1, 2)
	v2sample := func(fields ...[]byte) []byte { return decMsg(nil, v2SeriesSamples, slices.Concat(fields...)) }
	many := make([]string, 20000) // symbols for references of 1, 2 and 3 bytes
	for i := range many {
		many[i] = fmt.Sprintf("s%05d", i)
	}
	many[0] = ""
	v2Cases = append(v2Cases,
		tc{"sample with start timestamp", decV2Request(decSyms, refs, v2sample(val(nil, 1), ts(9), st(4)))},
		tc{"sample start timestamp first", decV2Request(decSyms, refs, v2sample(val(nil, 1), st(4), ts(9)))},
		tc{"sample negative start timestamp", decV2Request(decSyms, refs, v2sample(val(nil, 1), ts(9), st(neg)))},
		tc{"sample start timestamp only", decV2Request(decSyms, refs, v2sample(st(4)))},
		tc{"metadata in order", decV2Request(decSyms, refs, meta(mtype(2), help(3), unit(4)))},
		tc{"metadata reordered", decV2Request(decSyms, refs, meta(unit(4), mtype(2), help(3)))},
		tc{"metadata repeated field", decV2Request(decSyms, refs, meta(mtype(2), mtype(3), help(3)))},
		tc{"metadata unknown field", decV2Request(decSyms, refs, meta(mtype(2), decVarint(nil, 2, 1), help(3)))},
		tc{"metadata unit only", decV2Request(decSyms, refs, meta(unit(4)))},
		tc{"metadata help out of range", decV2Request(decSyms, refs, meta(help(99)))},
		tc{"metadata type of 10 bytes", decV2Request(decSyms, refs, meta(mtype(neg)))},
		tc{"two metadata fields", decV2Request(decSyms, refs, meta(mtype(2)), meta(help(3)))},
		tc{"refs of 1, 2 and 3 bytes", decV2Request(many, decPacked(v2SeriesLabelsRefs, 1, 127, 128, 129, 16383, 16384, 19999, 2))},
		tc{"ref out of range", decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 2, 3, 99))},
		tc{"odd number of refs", decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 2, 3))},
		tc{"refs in two fields", decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 2), decPacked(v2SeriesLabelsRefs, 3, 4))},
		tc{"refs split across two fields", decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 2, 3), decPacked(v2SeriesLabelsRefs, 4))},
		tc{"refs of 2 bytes", decV2Request(many, decPacked(v2SeriesLabelsRefs, 1, 127, 128, 16383, 200, 300))},
		tc{"refs in two fields, the second out of range", decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 2), decPacked(v2SeriesLabelsRefs, 3, 99))},
		tc{"refs in two fields, the first out of range", decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 99), decPacked(v2SeriesLabelsRefs, 3, 4))},
		tc{"name ref out of range", decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 2, 99, 4))},
		tc{"refs ending in a cut varint", decV2Request(decSyms, decMsg(nil, v2SeriesLabelsRefs, []byte{1, 2, 0x81}))},
		tc{"refs ending in a cut 2-byte varint", decV2Request(decSyms, decMsg(nil, v2SeriesLabelsRefs, []byte{1, 2, 3, 0x81}))},
		tc{"unpacked ref, then packed", decV2Request(decSyms, decVarint(nil, v2SeriesLabelsRefs, 1), decPacked(v2SeriesLabelsRefs, 2, 3, 4))},
	)
	ex := func(fields ...[]byte) []byte { return decMsg(nil, v2SeriesExemplars, slices.Concat(fields...)) }
	exRefs := func(refs ...uint64) []byte { return decPacked(v2ExemplarLabelsRefs, refs...) }
	exVal := func(v float64) []byte {
		return protowire.AppendFixed64(decTag(nil, v2ExemplarValue, protowire.Fixed64Type), math.Float64bits(v))
	}
	exTs := func(v uint64) []byte { return decVarint(nil, v2ExemplarTimestamp, v) }
	v2Cases = append(v2Cases,
		tc{"exemplar in order", decV2Request(decSyms, refs, ex(exRefs(3, 4), exVal(1.5), exTs(9)))},
		tc{"exemplar value only", decV2Request(decSyms, refs, ex(exVal(1.5)))},
		tc{"exemplar refs only", decV2Request(decSyms, refs, ex(exRefs(3, 4, 1, 2)))},
		tc{"empty exemplar", decV2Request(decSyms, refs, ex())},
		tc{"exemplar timestamp first", decV2Request(decSyms, refs, ex(exTs(9), exRefs(3, 4), exVal(1.5)))},
		tc{"exemplar value before refs", decV2Request(decSyms, refs, ex(exVal(1.5), exRefs(3, 4), exTs(9)))},
		tc{"exemplar refs repeated", decV2Request(decSyms, refs, ex(exRefs(3, 4), exRefs(1, 2), exVal(1.5)))},
		tc{"exemplar refs split across two fields", decV2Request(decSyms, refs, ex(exRefs(3), exRefs(4), exVal(1.5)))},
		tc{"exemplar value repeated", decV2Request(decSyms, refs, ex(exRefs(3, 4), exVal(1.5), exVal(2.5)))},
		tc{"exemplar timestamp repeated", decV2Request(decSyms, refs, ex(exRefs(3, 4), exTs(9), exTs(10)))},
		tc{"exemplar with an unknown field", decV2Request(decSyms, refs, ex(exRefs(3, 4), decVarint(nil, 9, 1), exVal(1.5)))},
		tc{"exemplar ref out of range", decV2Request(decSyms, refs, ex(exRefs(3, 99), exVal(1.5)))},
		tc{"exemplar odd number of refs", decV2Request(decSyms, refs, ex(exRefs(3, 4, 1), exVal(1.5)))},
		tc{"exemplar refs of 1, 2 and 3 bytes", decV2Request(many, refs, ex(exRefs(127, 128, 129, 16383, 16384, 19999), exVal(1.5), exTs(9)))},
		tc{"exemplar refs of 2 bytes", decV2Request(many, refs, ex(exRefs(127, 128, 16383, 1), exVal(1.5), exTs(9)))},
		tc{"exemplar timestamp of 9 bytes", decV2Request(decSyms, refs, ex(exRefs(3, 4), exVal(1.5), exTs(math.MaxInt64)))},
		tc{"exemplar negative timestamp", decV2Request(decSyms, refs, ex(exRefs(3, 4), exVal(1.5), exTs(neg)))},
		tc{"exemplar value cut short", decV2Request(decSyms, refs, ex(exRefs(3, 4), exVal(1.5)[:5]))},
		tc{"exemplar timestamp cut short", decV2Request(decSyms, refs, ex(exRefs(3, 4), exTs(1 << 40)[:3]))},
		tc{"exemplars, one bad", decV2Request(decSyms, refs, ex(exRefs(3, 4)), ex(exRefs(3, 99)), ex(exRefs(1, 2), exTs(5)))},
	)
	// The same orders of names in 2.0, whose labels the set sorts and
	// checks (Set.AddPairs): v2Labels makes a series of the given names and
	// values, one symbol each, with the symbols before the series or, last,
	// after it, as the message allows, so that the last symbol ends the
	// request.
	v2Labels := func(symsLast bool, nv ...string) []byte {
		syms := append([]string{""}, nv...)
		var refs []uint64
		for i := range nv {
			refs = append(refs, uint64(i+1))
		}
		series := decPacked(v2SeriesLabelsRefs, refs...)
		if !symsLast {
			return decV2Request(syms, series)
		}
		b := decMsg(nil, v2FieldTimeseries, series)
		for _, sym := range syms {
			b = decMsg(b, v2FieldSymbols, []byte(sym))
		}
		return b
	}
	for _, last := range []bool{false, true} {
		at := ""
		if last {
			at = ", symbols last"
		}
		v2Cases = append(v2Cases,
			tc{"names in order" + at, v2Labels(last, "__name__", "up", "a", "1", "abcdefgh", "2", "abcdefghi", "3", "b", "4")},
			tc{"names out of order" + at, v2Labels(last, "__name__", "up", "job", "1", "env", "2")},
			tc{"names out of order after 8 bytes" + at, v2Labels(last, "abcdefgh2", "1", "abcdefgh1", "2")},
			tc{"names in order after 8 bytes" + at, v2Labels(last, "abcdefgh1", "1", "abcdefgh2", "2")},
			tc{"name a prefix of the next" + at, v2Labels(last, "a", "1", "ab", "2")},
			tc{"name longer than the next" + at, v2Labels(last, "ab", "1", "a", "2")},
			tc{"name ending in a zero byte" + at, v2Labels(last, "a\x00", "1", "a", "2")},
			tc{"name then one ending in a zero byte" + at, v2Labels(last, "a", "1", "a\x00", "2")},
			tc{"name of 7 bytes after one that extends it" + at, v2Labels(last, "abcdefg\x05", "1", "abcdefg", "2")},
			tc{"empty name first" + at, v2Labels(last, "", "x", "__name__", "up")},
			tc{"empty name after" + at, v2Labels(last, "__name__", "up", "", "x")},
			tc{"last name at the end of the request" + at, v2Labels(last, "a", "1", "z", "")},
		)
	}
	// A name repeated is one symbol referenced twice.
	v2Cases = append(v2Cases,
		tc{"name repeated", decV2Request([]string{"", "__name__", "up", "job", "b", "a"}, decPacked(v2SeriesLabelsRefs, 1, 2, 3, 4, 3, 5))},
		tc{"names in order, then in a second field out of order", decV2Request(decSyms, decPacked(v2SeriesLabelsRefs, 1, 2), decPacked(v2SeriesLabelsRefs, 3, 4, 1, 2))},
	)
	var d Decoder
	for _, c := range v1Cases {
		t.Run("rw=1/"+c.name, func(t *testing.T) { decCheck(t, &d, c.buf, v1Msg, decExact) })
	}
	for _, c := range v2Cases {
		t.Run("rw=2/"+c.name, func(t *testing.T) { decCheck(t, &d, c.buf, v2Msg, decExact) })
	}
}
