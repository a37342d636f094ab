package postings

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/encoding"
	"github.com/prometheus/prometheus/tsdb/index"
)

var (
	smallOnce  sync.Once
	smallIndex []byte
	smallErr   error
)

// smallIndexBytes returns the bytes of the index of a block of 160 series
// written by Prometheus's block writer, for tests that corrupt it.
func smallIndexBytes(t *testing.T) []byte {
	t.Helper()
	smallOnce.Do(func() {
		dir := filepath.Join(tmpDir, "small")
		var path string
		if path, smallErr = writeBlock(dir, 3); smallErr == nil {
			smallIndex, smallErr = os.ReadFile(path)
		}
	})
	if smallErr != nil {
		t.Fatal(smallErr)
	}
	return slices.Clone(smallIndex)
}

func openBytes(b []byte, opts RangeOptions) (*Reader, error) {
	rr := NewRangeReader(ReaderAtSource(bytes.NewReader(b)), opts)
	return NewReader(context.Background(), rr, "index", int64(len(b)))
}

// setTOC rewrites the table of contents of index b with f applied, and a
// correct checksum.
func setTOC(b []byte, f func(toc []byte)) []byte {
	toc := b[len(b)-tocLen:]
	f(toc)
	binary.BigEndian.PutUint32(toc[tocLen-4:], crc32.Checksum(toc[:tocLen-4], castagnoli))
	return b
}

func TestNewReaderErrors(t *testing.T) {
	good := smallIndexBytes(t)
	if _, err := openBytes(good, RangeOptions{}); err != nil {
		t.Fatalf("NewReader(small index) error %v", err)
	}
	tocAt := len(good) - tocLen
	for _, tc := range []struct {
		name    string
		b       []byte
		size    int64 // if not 0, the size passed instead of len(b)
		opts    RangeOptions
		want    error
		wantMsg string
	}{
		{name: "empty", b: nil, want: ErrCorrupt},
		{name: "header only", b: good[:headerLen], want: ErrCorrupt},
		{name: "bad magic", b: func() []byte { b := smallIndexBytes(t); b[0] = 0; return b }(), want: ErrNotIndex},
		{name: "version 1", b: func() []byte { b := smallIndexBytes(t); b[4] = 1; return b }(), want: ErrUnsupportedVersion},
		{name: "toc checksum", b: func() []byte { b := smallIndexBytes(t); b[tocAt+3]++; return b }(), want: encoding.ErrInvalidChecksum},
		{name: "toc past the end", b: setTOC(smallIndexBytes(t), func(toc []byte) { binary.BigEndian.PutUint64(toc[40:], 1<<40) }), want: ErrCorrupt},
		{name: "toc huge offset table", b: setTOC(smallIndexBytes(t), func(toc []byte) {
			binary.BigEndian.PutUint64(toc[32:], headerLen)
			binary.BigEndian.PutUint64(toc[40:], headerLen)
		}), opts: RangeOptions{MaxRangeSize: 1024}, want: ErrRangeTooLarge},
		{name: "offset table checksum", b: func() []byte {
			b := smallIndexBytes(t)
			tc, _ := decodeTOC(b[tocAt:], int64(len(b)))
			b[tc.postingsTable+9]++
			return b
		}(), want: encoding.ErrInvalidChecksum},
		{name: "offset table length", b: func() []byte {
			b := smallIndexBytes(t)
			tc, _ := decodeTOC(b[tocAt:], int64(len(b)))
			binary.BigEndian.PutUint32(b[tc.postingsTable:], 1<<31)
			return b
		}(), want: ErrCorrupt},
		{name: "object shorter than size", b: good, size: int64(len(good)) + 100, want: ErrShortRead},
		{name: "size MaxInt64", b: good, size: math.MaxInt64, want: ErrShortRead},
		{name: "size negative", b: good, size: -1, want: ErrCorrupt},
		{name: "size MinInt64", b: good, size: math.MinInt64, want: ErrCorrupt},
		{name: "toc offset table at 2^63", b: setTOC(smallIndexBytes(t), func(toc []byte) { binary.BigEndian.PutUint64(toc[40:], 1<<63) }), want: ErrCorrupt},
		{name: "toc offsets MaxUint64", b: setTOC(smallIndexBytes(t), func(toc []byte) {
			binary.BigEndian.PutUint64(toc[32:], math.MaxUint64)
			binary.BigEndian.PutUint64(toc[40:], math.MaxUint64)
		}), want: ErrCorrupt},
		{name: "toc postings after the offset table", b: setTOC(smallIndexBytes(t), func(toc []byte) {
			binary.BigEndian.PutUint64(toc[32:], binary.BigEndian.Uint64(toc[40:])+1)
		}), want: ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size := tc.size
			if size == 0 {
				size = int64(len(tc.b))
			}
			rr := NewRangeReader(ReaderAtSource(bytes.NewReader(tc.b)), tc.opts)
			r, err := NewReader(context.Background(), rr, "index", size)
			if !errors.Is(err, tc.want) || r != nil {
				t.Errorf("NewReader() = %v, %v; want nil, %v", r, err, tc.want)
			}
		})
	}
}

func TestExpandedPostingsErrors(t *testing.T) {
	ctx := context.Background()
	b := smallIndexBytes(t)
	r, err := openBytes(b, RangeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n1 := labels.MustNewMatcher(labels.MatchEqual, "n", "1"+suffix)
	if _, err := r.ExpandedPostings(ctx, nil, labels.MustNewMatcher(labels.MatchEqual, "", ""), n1); !errors.Is(err, ErrUnexpectedAllPostings) {
		t.Errorf("ExpandedPostings(\"\"=\"\", n=1) error %v, want %v", err, ErrUnexpectedAllPostings)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if got, err := r.ExpandedPostings(canceled, nil, n1); !errors.Is(err, context.Canceled) || len(got) != 0 {
		t.Errorf("ExpandedPostings(canceled) = %v, %v; want none, %v", got, err, context.Canceled)
	}

	// A flipped byte in the list of n="1" is caught by its checksum.
	k := r.t.entry(r.t.name("n"), "1"+suffix)
	b[r.t.offs[k]+9]++
	if _, err := r.ExpandedPostings(ctx, nil, n1); !errors.Is(err, encoding.ErrInvalidChecksum) {
		t.Errorf("ExpandedPostings(corrupt list) error %v, want %v", err, encoding.ErrInvalidChecksum)
	}
	// A list whose length runs into the next one.
	b[r.t.offs[k]+9]--
	binary.BigEndian.PutUint32(b[r.t.offs[k]:], uint32(r.t.offs[k+1]-r.t.offs[k]))
	if _, err := r.ExpandedPostings(ctx, nil, n1); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ExpandedPostings(list too long) error %v, want %v", err, ErrCorrupt)
	}
}

func TestLabelNames(t *testing.T) {
	b := smallIndexBytes(t)
	r, err := openBytes(b, RangeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ir, err := index.NewReader(byteSlice(b), index.DecodePostingsRaw)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ir.LabelNames(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.LabelNames(); !slices.Equal(got, want) {
		t.Errorf("LabelNames() = %v, want %v", got, want)
	}
	if r.Version() != index.FormatV2 {
		t.Errorf("Version() = %d, want %d", r.Version(), index.FormatV2)
	}
}

// TestExpandedPostingsConcurrent runs the seed cases from several
// goroutines on one Reader (for -race) and checks each against the oracle.
func TestExpandedPostingsConcurrent(t *testing.T) {
	ctx := context.Background()
	b := smallIndexBytes(t)
	r, err := openBytes(b, RangeOptions{MaxGap: 64, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	ir, err := index.NewReader(byteSlice(b), index.DecodePostingsRaw)
	if err != nil {
		t.Fatal(err)
	}
	cases := seedCases()
	wants := make([][]storage.SeriesRef, len(cases))
	for i, c := range cases {
		if wants[i], err = oracle(ctx, ir, c.ms); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dst []storage.SeriesRef
			for i := range 3 * len(cases) {
				c := (i + g) % len(cases)
				var err error
				if dst, err = r.ExpandedPostings(ctx, dst[:0], cases[c].ms...); err != nil {
					t.Error(err)
					return
				}
				if !slices.Equal(dst, wants[c]) {
					t.Errorf("ExpandedPostings(%s) = %d refs, want %d", cases[c].name, len(dst), len(wants[c]))
					return
				}
			}
		}()
	}
	wg.Wait()
}

// byteSlice is index.ByteSlice over memory, for Prometheus's index.NewReader.
type byteSlice []byte

func (b byteSlice) Len() int                    { return len(b) }
func (b byteSlice) Range(start, end int) []byte { return b[start:end] }

// offsetTable encodes a postings offset table of the entries (name, value,
// offset), framed with its length and checksum; count, if not negative,
// replaces the number of entries written in it.
func offsetTable(count int64, entries ...struct {
	name, value string
	off         uint64
}) []byte {
	n := uint32(len(entries))
	if count >= 0 {
		n = uint32(count)
	}
	c := binary.BigEndian.AppendUint32(nil, n)
	for _, e := range entries {
		c = binary.AppendUvarint(c, 2)
		c = binary.AppendUvarint(c, uint64(len(e.name)))
		c = append(c, e.name...)
		c = binary.AppendUvarint(c, uint64(len(e.value)))
		c = append(c, e.value...)
		c = binary.AppendUvarint(c, e.off)
	}
	return frame(c)
}

// TestDecodeOffsetTableBounds decodes offset tables whose offsets or count
// are out of bounds, as a corrupt or hostile index has them: each is
// ErrCorrupt, with nothing sized from the bad value.
func TestDecodeOffsetTableBounds(t *testing.T) {
	type e = struct {
		name, value string
		off         uint64
	}
	const start, end = 8, 100
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"valid", offsetTable(-1, e{"a", "1", start}, e{"a", "2", 20}, e{"b", "1", end - 1}), true},
		{"offset MaxUint64", offsetTable(-1, e{"a", "1", start}, e{"a", "2", math.MaxUint64}), false},
		{"offset 2^63", offsetTable(-1, e{"a", "1", start}, e{"a", "2", 1 << 63}), false},
		{"offset at the end", offsetTable(-1, e{"a", "1", start}, e{"a", "2", end}), false},
		{"offset before the start", offsetTable(-1, e{"a", "1", start - 1}), false},
		{"offset repeated", offsetTable(-1, e{"a", "1", 20}, e{"a", "2", 20}), false},
		{"offset decreasing", offsetTable(-1, e{"a", "1", 30}, e{"a", "2", 20}), false},
		{"count MaxUint32", offsetTable(math.MaxUint32, e{"a", "1", start}), false},
		{"count one more", offsetTable(2, e{"a", "1", start}), false},
		{"value length MaxUint64", func() []byte {
			c := binary.BigEndian.AppendUint32(nil, 1)
			c = append(c, 2, 1, 'a')
			c = binary.AppendUvarint(c, math.MaxUint64)
			return frame(append(c, 'x', start))
		}(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := decodeOffsetTable(tc.b, start, end)
			if tc.ok {
				if err != nil || tab.len() != 3 {
					t.Fatalf("decodeOffsetTable() = %v, %v; want 3 entries", tab, err)
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) || tab != nil {
				t.Errorf("decodeOffsetTable() = %v, %v; want nil, %v", tab, err, ErrCorrupt)
			}
		})
	}
}
