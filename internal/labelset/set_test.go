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
