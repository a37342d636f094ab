package decode

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ingestkit/ingestkit/internal/bytestr"
)

const (
	v1Msg = remoteapi.WriteV1MessageType
	v2Msg = remoteapi.WriteV2MessageType
)

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
		{tagV1Exemplars, v1SeriesExemplars, protowire.BytesType, "tagV1Exemplars"},
		{tagV1ExLabels, v1ExemplarLabels, protowire.BytesType, "tagV1ExLabels"},
		{tagV1ExValue, v1ExemplarValue, protowire.Fixed64Type, "tagV1ExValue"},
		{tagV1ExTime, v1ExemplarTimestamp, protowire.VarintType, "tagV1ExTime"},
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
		_ = d.Series().tenantHash()
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
			// Next, and batches whose series past the first the Decoder
			// made before or after SetTenant.
			for _, batch := range []int{0, 3, MaxBatch} {
				_ = d.Reset(c.buf, c.msg)
				decEach(&d, batch, func(s *Series) {
					ls := s.Labels()
					if decHasDupNames(ls) {
						return
					}
					if got, want := s.tenantHash(), decTenantHash(tenant, ls); got != want {
						t.Fatalf("batch %d: TenantHash() of %s for tenant %q = %#x, want %#x", batch, ls, tenant, got, want)
					}
					if got, want := s.Hash(), ls.Hash(); got != want {
						t.Fatalf("batch %d: Hash() of %s with a tenant = %#x, want %#x", batch, ls, got, want)
					}
				})
				if err := d.Err(); err != nil {
					t.Fatalf("Err() = %v", err)
				}
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
			_ = d.Series().tenantHash() + d.Series().Hash()
		}
	}
	decode()
	if got := testing.AllocsPerRun(20, decode); got != 0 {
		t.Fatalf("AllocsPerRun(Next, TenantHash, Hash) = %v, want 0", got)
	}
	decodeBatches := func() {
		_ = d.Reset(buf, v2Msg)
		decEach(&d, MaxBatch, func(s *Series) { _ = s.tenantHash() + s.Hash() })
	}
	decodeBatches()
	if got := testing.AllocsPerRun(20, decodeBatches); got != 0 {
		t.Fatalf("AllocsPerRun(NextBatch, TenantHash, Hash) = %v, want 0", got)
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
	const want = "decoding io.prometheus.write.v2.Request: decode: symbol reference outside the symbols table: timeseries 0: labels_refs: reference 7, table size 5 at byte 36"
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
