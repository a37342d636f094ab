package labelset

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/internal/bytestr"
)

func TestScratch(t *testing.T) {
	want := labels.FromStrings("__name__", "up", "job", "api", "zone", "")
	var s Set
	for range 3 {
		s.Reset()
		s.Add([]byte("job"), []byte("api"))
		s.Add([]byte("__name__"), []byte("up"))
		s.AddString("zone", "")
		if got := s.Scratch(); !labels.Equal(got, want) {
			t.Fatalf("Scratch() = %s, want %s", got, want)
		}
		if got := s.Labels(); !labels.Equal(got, want) {
			t.Fatalf("Labels() after Scratch() = %s, want %s", got, want)
		}
	}
	if bytestr.Copies {
		return
	}
	s.Reset()
	s.Add([]byte("__name__"), []byte("up"))
	s.Add([]byte("job"), []byte("api"))
	if got := testing.AllocsPerRun(100, func() { _ = s.Scratch() }); got != 0 {
		t.Fatalf("Scratch: AllocsPerRun = %v, want 0", got)
	}
}

// TestRelease: Reset leaves the strings of a long series in the pairs'
// buffer when a shorter one follows; Release drops all of them, so that a
// reused Set keeps nothing of a request that is done.
func TestRelease(t *testing.T) {
	var s Set
	for _, n := range []int{10, 3, 7} {
		s.Reset()
		for i := range n {
			s.Add([]byte{'a', byte('a' + i)}, []byte("v"))
		}
	}
	s.Release()
	full := s.pairs[:cap(s.pairs)]
	for i, p := range full {
		if p != (pair{}) {
			t.Fatalf("after Release, pairs[%d] = %+v, want the zero pair", i, p)
		}
	}
	if s.used != 0 || s.Len() != 0 {
		t.Fatalf("after Release: used = %d, Len() = %d, want 0, 0", s.used, s.Len())
	}
	// The Set is reusable and keeps its buffer.
	s.Add([]byte("a"), []byte("1"))
	if got, want := s.Hash(), labels.FromStrings("a", "1").Hash(); got != want {
		t.Fatalf("Hash() after Release = %#x, want %#x", got, want)
	}
	if cap(s.pairs) != len(full) {
		t.Fatalf("cap after Release = %d, want %d", cap(s.pairs), len(full))
	}
}
