package labelhash

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"
	"google.golang.org/protobuf/encoding/protowire"
)

// boundaryLens are string lengths around every edge of the encodings and of
// the 1 KiB buffer: the one-byte length limit (254/255), the 0x7f/0x80 varint
// edge, and the buffer size.
var boundaryLens = []int{0, 1, 2, 7, 8, 127, 128, 129, 253, 254, 255, 256, 1000, 1021, 1022, 1023, 1024, 1025, 2048, 4096, 64 << 10}

// thanosTenantHash is an independent oracle for the tenant hash: the bytes
// Thanos's HashWithPrefix feeds xxhash, built in full and hashed at once.
func thanosTenantHash(tenant string, ls labels.Labels) uint64 {
	b := append([]byte(tenant), sep)
	ls.Range(func(l labels.Label) {
		b = append(b, l.Name...)
		b = append(b, sep)
		b = append(b, l.Value...)
		b = append(b, sep)
	})
	return xxhash.Sum64(b)
}

func hashBytes(ls labels.Labels) uint64 {
	var h Hasher
	ls.Range(func(l labels.Label) { h.Write([]byte(l.Name), []byte(l.Value)) })
	return h.Sum64()
}

func hashStrings(ls labels.Labels) uint64 {
	var h Hasher
	ls.Range(func(l labels.Label) { h.WriteString(l.Name, l.Value) })
	return h.Sum64()
}

// checkSet asserts that every way of hashing ls agrees with Prometheus.
func checkSet(t *testing.T, ls labels.Labels) {
	t.Helper()
	want := ls.Hash()
	if got := hashBytes(ls); got != want {
		t.Fatalf("Hasher.Write over %d labels (%d bytes) = %#x, want Labels.Hash() = %#x", ls.Len(), ls.ByteSize(), got, want)
	}
	if got := hashStrings(ls); got != want {
		t.Fatalf("Hasher.WriteString over %d labels (%d bytes) = %#x, want Labels.Hash() = %#x", ls.Len(), ls.ByteSize(), got, want)
	}
	var h TenantHasher
	h.Reset("tenant-a")
	ls.Range(func(l labels.Label) { h.Write([]byte(l.Name), []byte(l.Value)) })
	if got := h.Sum64(); got != want {
		t.Fatalf("Hasher.Sum64 with tenant = %#x, want %#x", got, want)
	}
	if got, want := h.TenantSum64(), thanosTenantHash("tenant-a", ls); got != want {
		t.Fatalf("Hasher.TenantSum64 = %#x, want %#x", got, want)
	}
	// The same pairs in one call, and, for the tenant hash only, split
	// between the two hashes and the tenant one.
	var ps []Pair
	ls.Range(func(l labels.Label) { ps = append(ps, Pair{[]byte(l.Name), []byte(l.Value)}) })
	var hp Hasher
	hp.WritePairs(ps)
	if got := hp.Sum64(); got != want {
		t.Fatalf("Hasher.WritePairs over %d labels = %#x, want %#x", len(ps), got, want)
	}
	// The same pairs as views of their remote-write encoding, as the
	// decoders hand them over, with the rest of the buffer past each one.
	names, values := wirePairsOf(ls)
	wire := make([]Pair, len(names))
	for i := range names {
		wire[i] = Pair{names[i], values[i]}
	}
	hp.Reset()
	hp.WritePairs(wire)
	if got := hp.Sum64(); got != want {
		t.Fatalf("Hasher.WritePairs over %d labels as views of their encoding = %#x, want %#x", len(ps), got, want)
	}
	var tp TenantHasher
	tp.Reset("tenant-a")
	tp.WritePairs(ps[:len(ps)/2])
	tp.WriteTenantPairs(ps[len(ps)/2:])
	if got, want := tp.TenantSum64(), thanosTenantHash("tenant-a", ls); got != want {
		t.Fatalf("TenantHasher.WritePairs then WriteTenantPairs: TenantSum64 = %#x, want %#x", got, want)
	}
	tp.Reset("tenant-a")
	tp.WritePairs(ps)
	if got, want := tp.TenantSum64(), thanosTenantHash("tenant-a", ls); got != want || tp.Sum64() != ls.Hash() {
		t.Fatalf("TenantHasher.WritePairs: TenantSum64, Sum64 = %#x, %#x, want %#x, %#x", got, tp.Sum64(), want, ls.Hash())
	}
}

func randString(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		switch r.IntN(4) {
		case 0:
			b[i] = 0xff // the separator byte must not confuse anything
		default:
			b[i] = byte(r.IntN(256))
		}
	}
	return string(b)
}

func TestHashBoundaryLengths(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, nl := range boundaryLens {
		for _, vl := range boundaryLens {
			t.Run(fmt.Sprintf("name=%d/value=%d", nl, vl), func(t *testing.T) {
				name := "a" + randString(r, nl)
				checkSet(t, labels.FromStrings(name, randString(r, vl)))
				// The same pair after labels that nearly fill the buffer.
				filler := strings.Repeat("f", 1000)
				checkSet(t, labels.FromStrings("__name__", filler, "b"+name, randString(r, vl)))
			})
		}
	}
}

func TestHashRandomSets(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		n := r.IntN(40)
		ss := make([]string, 0, 2*n)
		for j := range n {
			ss = append(ss, fmt.Sprintf("l%03d_%s", j, randString(r, r.IntN(8))))
			vl := r.IntN(64)
			if r.IntN(10) == 0 {
				vl = boundaryLens[r.IntN(len(boundaryLens))]
			}
			ss = append(ss, randString(r, vl))
		}
		ls := labels.FromStrings(ss...)
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkSet(t, ls) })
	}
}

func TestHashEmpty(t *testing.T) {
	checkSet(t, labels.EmptyLabels())
	var h Hasher
	if got, want := h.Sum64(), labels.EmptyLabels().Hash(); got != want {
		t.Fatalf("zero Hasher.Sum64() = %#x, want %#x", got, want)
	}
}

func TestHashTenMiBValue(t *testing.T) {
	v := bytes.Repeat([]byte{0xff, 'x', 0, 'y'}, 10<<20/4)
	checkSet(t, labels.FromStrings("__name__", "big", "payload", string(v), "zz", "after"))
}

func TestHashResetReuse(t *testing.T) {
	a := labels.FromStrings("__name__", strings.Repeat("a", 3000), "job", "x")
	b := labels.FromStrings("__name__", "up", "job", "y")
	var h Hasher
	a.Range(func(l labels.Label) { h.WriteString(l.Name, l.Value) })
	h.Reset()
	b.Range(func(l labels.Label) { h.WriteString(l.Name, l.Value) })
	if got, want := h.Sum64(), b.Hash(); got != want {
		t.Fatalf("Sum64 after Reset = %#x, want %#x", got, want)
	}
	// Sum64 does not consume the state: more pairs may follow.
	h.Reset()
	h.WriteString("__name__", "up")
	_ = h.Sum64()
	h.WriteString("job", "y")
	if got, want := h.Sum64(), b.Hash(); got != want {
		t.Fatalf("Sum64 after an intermediate Sum64 = %#x, want %#x", got, want)
	}
}

func TestTenantHasherZeroValue(t *testing.T) {
	ls := labels.FromStrings("__name__", "up", "job", "x")
	var h TenantHasher
	ls.Range(func(l labels.Label) { h.WriteString(l.Name, l.Value) })
	if got, want := h.TenantSum64(), thanosTenantHash("", ls); got != want {
		t.Fatalf("zero TenantHasher.TenantSum64() = %#x, want %#x", got, want)
	}
	if got, want := h.Sum64(), ls.Hash(); got != want {
		t.Fatalf("zero TenantHasher.Sum64() = %#x, want %#x", got, want)
	}
}

func TestHashAllocs(t *testing.T) {
	ls := benchLabels(10, 16)
	names, values := pairsOf(ls)
	big := strings.Repeat("v", 5000)
	ps := make([]Pair, len(names))
	for i := range names {
		ps[i] = Pair{names[i], values[i]}
	}
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"bytes", func() {
			var h Hasher
			for i := range names {
				h.Write(names[i], values[i])
			}
			_ = h.Sum64()
		}},
		{"pairs+tenant", func() {
			var h TenantHasher
			h.Reset("tenant")
			h.WritePairs(ps[:5])
			h.WriteTenantPairs(ps[5:])
			_, _ = h.Sum64(), h.TenantSum64()
		}},
		{"strings+tenant", func() {
			var h TenantHasher
			h.Reset("tenant")
			ls.Range(func(l labels.Label) { h.WriteString(l.Name, l.Value) })
			h.WriteString("zz", big)
			_, _ = h.Sum64(), h.TenantSum64()
		}},
	} {
		if got := testing.AllocsPerRun(100, tc.f); got != 0 {
			t.Errorf("%s: AllocsPerRun = %v, want 0", tc.name, got)
		}
	}
}

// TestHashGolden pins the hash of fixed label sets for the build in use, so
// that a change of Prometheus's hash (or of this package) is seen, not
// silently followed.
func TestHashGolden(t *testing.T) {
	want, ok := goldenHashes[labels.ImplementationName]
	if !ok {
		t.Fatalf("no golden hashes for labels build %q", labels.ImplementationName)
	}
	sets := goldenSets()
	if len(want) != len(sets) {
		t.Fatalf("%d golden hashes for %d sets", len(want), len(sets))
	}
	for i, ls := range sets {
		if got := hashBytes(ls); got != want[i] {
			t.Errorf("golden set %d (%d bytes): Hasher = %#x, want %#x", i, ls.ByteSize(), got, want[i])
		}
		if got := ls.Hash(); got != want[i] {
			t.Errorf("golden set %d: Labels.Hash() = %#x, want %#x (Prometheus's hash changed)", i, got, want[i])
		}
	}
}

func goldenSets() []labels.Labels {
	return []labels.Labels{
		labels.EmptyLabels(),
		labels.FromStrings("__name__", "up"),
		labels.FromStrings("__name__", "http_requests_total", "job", "api", "instance", "10.0.0.1:9090", "method", "GET", "code", "200"),
		labels.FromStrings("a", "", "b", "\xff\xff"),
		labels.FromStrings("n", strings.Repeat("x", 254)),
		labels.FromStrings("n", strings.Repeat("x", 255)),
		labels.FromStrings("n", strings.Repeat("x", 1024), "o", "p"),
		labels.FromStrings("n", strings.Repeat("xyz", 1<<16)),
	}
}

// goldenHashes was computed with Prometheus v0.316.0's Labels.Hash() under
// each build.
var goldenHashes = map[string][]uint64{
	"stringlabels": {0xef46db3751d8e999, 0xecd75f13400abdf5, 0x8debda23dd2a8688, 0x3fcf6121a0039c35, 0x72a1668466d7dbe8, 0x53a3eca37ed02156, 0x935fc04c290b3647, 0x1681a374826166db},
	"slicelabels":  {0xef46db3751d8e999, 0x23d4c2cb13387598, 0x238e1eb9a7148b0f, 0x1ae91f6d2e03bd88, 0x3e85e6915e7b1f49, 0x405dd9b0809bdfe6, 0xdb3d3ac43e1a1846, 0xbb71c63863f80e3c},
	"dedupelabels": {0xef46db3751d8e999, 0x23d4c2cb13387598, 0x238e1eb9a7148b0f, 0x1ae91f6d2e03bd88, 0x3e85e6915e7b1f49, 0x405dd9b0809bdfe6, 0xdb3d3ac43e1a1846, 0xbb71c63863f80e3c},
}

func pairsOf(ls labels.Labels) (names, values [][]byte) {
	ls.Range(func(l labels.Label) {
		names = append(names, []byte(l.Name))
		values = append(values, []byte(l.Value))
	})
	return names, values
}

// benchLabels returns n typical labels with values of about valueLen bytes.
func benchLabels(n, valueLen int) labels.Labels {
	b := labels.NewScratchBuilder(n)
	b.Add("__name__", "http_server_requests_seconds_bucket")
	for i := 1; i < n; i++ {
		v := fmt.Sprintf("value-%d-", i)
		v += strings.Repeat("v", max(0, valueLen-len(v)))
		b.Add(fmt.Sprintf("label_%02d", i), v)
	}
	b.Sort()
	return b.Labels()
}

func TestBenchLabelsSorted(t *testing.T) {
	ls := benchLabels(10, 16)
	var names []string
	ls.Range(func(l labels.Label) { names = append(names, l.Name) })
	if !slices.IsSorted(names) || len(names) != 10 {
		t.Fatalf("benchLabels(10, 16) names = %q, want 10 sorted names", names)
	}
}

// wirePairsOf returns the names and values of ls as views of one buffer
// holding ls encoded as the labels of a remote-write 1.0 TimeSeries, followed
// by a sample, so that each view's capacity runs to the buffer's end as a
// view of a request body does.
func wirePairsOf(ls labels.Labels) (names, values [][]byte) {
	var buf []byte
	type span struct{ nameAt, nameLen, valueAt, valueLen int }
	var spans []span
	ls.Range(func(l labels.Label) {
		var msg []byte
		msg = protowire.AppendTag(msg, 1, protowire.BytesType)
		msg = protowire.AppendString(msg, l.Name)
		msg = protowire.AppendTag(msg, 2, protowire.BytesType)
		msg = protowire.AppendString(msg, l.Value)
		buf = protowire.AppendTag(buf, 1, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(len(msg)))
		start := len(buf)
		buf = append(buf, msg...)
		valueAt := start + len(msg) - len(l.Value)
		nameAt := valueAt - 1 - protowire.SizeVarint(uint64(len(l.Value))) - len(l.Name)
		spans = append(spans, span{nameAt, len(l.Name), valueAt, len(l.Value)})
	})
	var sample []byte
	sample = protowire.AppendTag(sample, 1, protowire.Fixed64Type)
	sample = protowire.AppendFixed64(sample, 0x3ff0000000000000)
	sample = protowire.AppendTag(sample, 2, protowire.VarintType)
	sample = protowire.AppendVarint(sample, 1700000000000)
	buf = protowire.AppendTag(buf, 2, protowire.BytesType)
	buf = protowire.AppendBytes(buf, sample)
	for _, sp := range spans {
		names = append(names, buf[sp.nameAt:sp.nameAt+sp.nameLen])
		values = append(values, buf[sp.valueAt:sp.valueAt+sp.valueLen])
	}
	return names, values
}

func TestWirePairsOf(t *testing.T) {
	for _, n := range []int{1, 10, 30} {
		ls := benchLabels(n, 200)
		names, values := wirePairsOf(ls)
		wantNames, wantValues := pairsOf(ls)
		if !slices.EqualFunc(names, wantNames, bytes.Equal) || !slices.EqualFunc(values, wantValues, bytes.Equal) {
			t.Fatalf("labels=%d: the views are not the label set's names and values", n)
		}
		last := values[len(values)-1]
		if cap(last) <= len(last) {
			t.Fatalf("labels=%d: the last value's view ends the buffer; the sample should follow it", n)
		}
	}
}
