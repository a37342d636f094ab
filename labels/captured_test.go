package labels

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/ingestkit/ingestkit/internal/rwtest"
)

// capturedTenant is the tenant whose hash TestBuilderCaptured checks.
const capturedTenant = "tenant-1"

// capturedSet is one label set of a captured request: the pairs as a decoder
// would hand them to a HashedBuilder, in wire order, as slices of a buffer
// that the test overwrites afterwards, and the labels Prometheus's own
// conversion makes of them.
type capturedSet struct {
	what  string // "series 12" or "series 12 exemplar 0"
	pairs []capturedPair
	want  labels.Labels
}

type capturedPair struct{ name, value []byte }

// capturedSpan locates a string in a capturedRequest's buffer while the
// buffer is still growing.
type capturedSpan struct{ off, len int }

// capturedRequest holds the label sets of one captured request and the
// buffer their bytes live in, as a decoder's request buffer would.
type capturedRequest struct {
	buf       []byte
	sets      []capturedSet
	series    int
	exemplars int
}

func (r *capturedRequest) span(s string) capturedSpan {
	sp := capturedSpan{off: len(r.buf), len: len(s)}
	r.buf = append(r.buf, s...)
	return sp
}

func (r *capturedRequest) bytes(sp capturedSpan) []byte {
	return r.buf[sp.off : sp.off+sp.len : sp.off+sp.len]
}

// capturedV1 decodes a remote-write 1.0 body with Prometheus's prompb and
// copies every name and value into one buffer, so that the test owns the bytes
// the HashedBuilder borrows, like a decoder that aliases its request buffer.
func capturedV1(tb testing.TB, path string) *capturedRequest {
	tb.Helper()
	req := rwtest.DecodeV1(tb, path)
	r := &capturedRequest{}
	sb := labels.NewScratchBuilder(0)
	var spans [][]capturedSpan
	add := func(what string, pairs []prompb.Label, want labels.Labels) {
		sp := make([]capturedSpan, 0, 2*len(pairs))
		for _, p := range pairs {
			sp = append(sp, r.span(p.Name), r.span(p.Value))
		}
		spans = append(spans, sp)
		r.sets = append(r.sets, capturedSet{what: what, want: want})
	}
	for i, ts := range req.Timeseries {
		add(capturedWhat(i, -1), ts.Labels, ts.ToLabels(&sb, nil))
		r.series++
		for j, e := range ts.Exemplars {
			add(capturedWhat(i, j), e.Labels, e.ToExemplar(&sb, nil).Labels)
			r.exemplars++
		}
	}
	for i, sp := range spans {
		for k := 0; k < len(sp); k += 2 {
			r.sets[i].pairs = append(r.sets[i].pairs, capturedPair{r.bytes(sp[k]), r.bytes(sp[k+1])})
		}
	}
	return r
}

// capturedV2 decodes a remote-write 2.0 body with Prometheus's writev2 and
// copies its symbols table into one buffer once; every pair borrows its name
// and value from there, so that, as in a decoder that aliases the request,
// many series share the same bytes.
func capturedV2(tb testing.TB, path string) *capturedRequest {
	tb.Helper()
	req := rwtest.DecodeV2(tb, path)
	r := &capturedRequest{}
	spans := make([]capturedSpan, len(req.Symbols))
	for i, s := range req.Symbols {
		spans[i] = r.span(s)
	}
	sb := labels.NewScratchBuilder(0)
	add := func(what string, refs []uint32, want labels.Labels) {
		if len(refs)%2 != 0 {
			tb.Fatalf("%s: %d label refs, want an even number", what, len(refs))
		}
		set := capturedSet{what: what, want: want}
		for k := 0; k < len(refs); k += 2 {
			set.pairs = append(set.pairs, capturedPair{r.bytes(spans[refs[k]]), r.bytes(spans[refs[k+1]])})
		}
		r.sets = append(r.sets, set)
	}
	for i, ts := range req.Timeseries {
		want, err := ts.ToLabels(&sb, req.Symbols)
		if err != nil {
			tb.Fatalf("%s: TimeSeries.ToLabels: %v", capturedWhat(i, -1), err)
		}
		add(capturedWhat(i, -1), ts.LabelsRefs, want)
		r.series++
		for j, e := range ts.Exemplars {
			ex, err := e.ToExemplar(&sb, req.Symbols)
			if err != nil {
				tb.Fatalf("%s: Exemplar.ToExemplar: %v", capturedWhat(i, j), err)
			}
			add(capturedWhat(i, j), e.LabelsRefs, ex.Labels)
			r.exemplars++
		}
	}
	return r
}

// capturedWhat names a label set in failure messages; exemplar < 0 means the
// series' own labels.
func capturedWhat(series, exemplar int) string {
	if exemplar < 0 {
		return "series " + strconv.Itoa(series)
	}
	return "series " + strconv.Itoa(series) + " exemplar " + strconv.Itoa(exemplar)
}

// capturedTenantOracle is the Thanos receive hashring's hash, written out
// independently of the package: xxhash of "tenant 0xff name 0xff value 0xff
// ..." over the sorted labels.
func capturedTenantOracle(tenant string, ls labels.Labels) uint64 {
	b := append([]byte(tenant), 0xff)
	ls.Range(func(l labels.Label) {
		b = append(b, l.Name...)
		b = append(b, 0xff)
		b = append(b, l.Value...)
		b = append(b, 0xff)
	})
	return xxhash.Sum64(b)
}

// TestBuilderCaptured feeds every label set of the real remote-write requests
// in testdata (series and exemplars, both protocol versions) to a HashedBuilder
// from byte slices, as a decoder would, and compares the result with the
// labels Prometheus's own prompb and writev2 conversions make: hash, Equal,
// the built labels, and the tenant hash against an independent oracle. It
// then overwrites the borrowed bytes and checks that no built label set
// aliased them.
func TestBuilderCaptured(t *testing.T) {
	type file struct {
		path   string
		decode func(testing.TB, string) *capturedRequest
	}
	var files []file
	for _, p := range rwtest.Files(t, 1) {
		files = append(files, file{p, capturedV1})
	}
	for _, p := range rwtest.Files(t, 2) {
		files = append(files, file{p, capturedV2})
	}
	// Modes feed each set to a HashedBuilder in a different way. "reversed"
	// makes the HashedBuilder sort the pairs itself; the requests' pairs come
	// sorted.
	modes := []struct {
		name     string
		tenant   bool
		reversed bool
	}{
		{name: "Reset"},
		{name: "ResetTenant", tenant: true},
		{name: "ResetTenant/reversed", tenant: true, reversed: true},
	}
	var totalSeries, totalExemplars int
	for _, f := range files {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			r := f.decode(t, f.path)
			if len(r.sets) == 0 {
				t.Fatalf("no label sets in %s", f.path)
			}
			builders := make([]HashedBuilder, len(modes))
			// built[m][i] is what mode m built of set i; all are checked
			// again after the borrowed bytes are overwritten.
			built := make([][]Hashed, len(modes))
			for _, set := range r.sets {
				wantHash := set.want.Hash()
				for m, mode := range modes {
					b := &builders[m]
					if mode.tenant {
						b.ResetTenant(capturedTenant)
					} else {
						b.Reset()
					}
					pairs := set.pairs
					if mode.reversed {
						pairs = slices.Clone(pairs)
						slices.Reverse(pairs)
					}
					for _, p := range pairs {
						b.Add(p.name, p.value)
					}
					if got, want := b.Len(), set.want.Len(); got != want {
						t.Errorf("%s %s: HashedBuilder.Len() = %d, want %d", set.what, mode.name, got, want)
					}
					if got := b.Hash(); got != wantHash {
						t.Errorf("%s %s: HashedBuilder.Hash() = %#x, want %#x (%s)", set.what, mode.name, got, wantHash, set.want)
					}
					if !b.Equal(set.want) {
						t.Errorf("%s %s: HashedBuilder.Equal(%s) = false, want true", set.what, mode.name, set.want)
					}
					if mode.tenant {
						want := capturedTenantOracle(capturedTenant, set.want)
						if got := b.TenantHash(); got != want {
							t.Errorf("%s %s: HashedBuilder.TenantHash() = %#x, want %#x (%s)", set.what, mode.name, got, want, set.want)
						}
					}
					if got := b.Labels(); !labels.Equal(got, set.want) {
						t.Errorf("%s %s: HashedBuilder.Labels() = %s, want %s", set.what, mode.name, got, set.want)
					}
					h := b.Hashed()
					if got := h.Labels(); !labels.Equal(got, set.want) {
						t.Errorf("%s %s: HashedBuilder.Hashed().Labels() = %s, want %s", set.what, mode.name, got, set.want)
					}
					if got := h.Hash(); got != wantHash {
						t.Errorf("%s %s: HashedBuilder.Hashed().Hash() = %#x, want %#x (%s)", set.what, mode.name, got, wantHash, set.want)
					}
					built[m] = append(built[m], h)
				}
			}

			// The HashedBuilders still hold the borrowed slices, as they may
			// until the next Reset; what they built must not.
			for i := range r.buf {
				r.buf[i] = 0xAA
			}
			for m, mode := range modes {
				for i, h := range built[m] {
					set := r.sets[i]
					if got := h.Labels(); !labels.Equal(got, set.want) {
						t.Errorf("%s %s: after overwriting the added bytes, HashedBuilder.Hashed().Labels() = %s, want %s", set.what, mode.name, got, set.want)
					}
					if got, want := h.Labels().Hash(), set.want.Hash(); got != want {
						t.Errorf("%s %s: after overwriting the added bytes, HashedBuilder.Hashed().Labels().Hash() = %#x, want %#x", set.what, mode.name, got, want)
					}
					if got, want := h.Hash(), set.want.Hash(); got != want {
						t.Errorf("%s %s: after overwriting the added bytes, HashedBuilder.Hashed().Hash() = %#x, want %#x", set.what, mode.name, got, want)
					}
				}
			}
			t.Logf("%s: %d series and %d exemplar label sets checked (%d label sets, %d modes, %d bytes borrowed)",
				filepath.Base(f.path), r.series, r.exemplars, len(r.sets), len(modes), len(r.buf))
			totalSeries += r.series
			totalExemplars += r.exemplars
		})
	}
	t.Logf("total: %d series and %d exemplar label sets in %d files", totalSeries, totalExemplars, len(files))
}
