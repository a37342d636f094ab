package decode

import (
	"errors"
	"io"
	"math"
	"slices"
	"testing"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ingestkit/ingestkit/internal/rwtest"
)

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
			want: "decoding prometheus.WriteRequest: decode: malformed remote-write request: timeseries 0: sample at byte 12: unexpected EOF",
			is:   []error{ErrMalformed, io.ErrUnexpectedEOF},
		},
		{
			name: "wrong wire type",
			msg:  v1Msg,
			buf:  decV1Series(decVarint(nil, v1SeriesLabels, 1)),
			want: "decoding prometheus.WriteRequest: decode: malformed remote-write request: timeseries 0: labels: wrong wire type 0 at byte 2",
			is:   []error{ErrMalformed},
		},
		{
			name: "message type",
			msg:  "prometheus.ReadRequest",
			want: `decoding "prometheus.ReadRequest": decode: unsupported remote-write message type`,
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
