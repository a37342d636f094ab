package labelhash

import (
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"
)

// TestStream checks that the stream is what was hashed, and, in the
// stringlabels build, the data of the labels (Labels.Bytes returns a copy
// of it there); and that a stream past the buffer is not offered.
func TestStream(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 254, 255, 900, 1024, 4096} {
		ls := labels.FromStrings("__name__", "up", "zone", strings.Repeat("z", n))
		var h Hasher
		ls.Range(func(l labels.Label) { h.WriteString(l.Name, l.Value) })
		stream, ok := h.Stream()
		if fits := n <= 900; ok != fits {
			t.Fatalf("value of %d bytes: Stream() ok = %v, want %v", n, ok, fits)
		}
		if !ok {
			continue
		}
		if got, want := xxhash.Sum64(stream), ls.Hash(); got != want {
			t.Fatalf("value of %d bytes: xxhash of Stream() = %#x, want Hash() %#x", n, got, want)
		}
		if labels.ImplementationName == "stringlabels" {
			if got, want := string(stream), string(ls.Bytes(nil)); got != want {
				t.Fatalf("value of %d bytes: Stream() = %q, want the labels' data %q", n, got, want)
			}
		}
	}
}
