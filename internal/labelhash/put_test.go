package labelhash

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestWriteReadsPastLength feeds the Hasher views of a buffer whose bytes
// past each view's length are junk, with capacities from the length to 64
// bytes more, so that put copies whole words across them: the junk must
// never reach either hash. Each pair is also placed so that it ends at the
// edge of the 1 KiB buffer, where put writes into the slack past it, and
// so that it starts at the last position where WritePairs takes its block
// moves and just after.
func TestWriteReadsPastLength(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	// view returns s in a fresh buffer of len(s)+extra bytes of junk,
	// with capacity len(s)+extra.
	view := func(s string, extra int) []byte {
		b := make([]byte, len(s)+extra)
		copy(b, s)
		for i := len(s); i < len(b); i++ {
			b[i] = byte(r.IntN(256))
		}
		return b[:len(s)]
	}
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 100, 254, 255} {
		for _, extra := range []int{0, 1, 7, 8, 15, 16, 31, 32, 63, 64} {
			name, value := "n"+randString(r, n), randString(r, n)
			// The last six fills start the pair at fastPairMax-1,
			// fastPairMax and fastPairMax+1, the last position at which
			// WritePairs moves a short pair in blocks: the pair before is
			// fill+13 bytes of the stringlabels stream (a 4-byte length
			// for the fill) and fill+10 of the separator stream.
			for _, fill := range []int{0, 1024 - 12 - 2*n - 6, 1024 - 12 - 2*n - 5, 1024 - 12 - 2*n - 4,
				fastPairMax - 14, fastPairMax - 13, fastPairMax - 12, fastPairMax - 11, fastPairMax - 10, fastPairMax - 9} {
				t.Run(fmt.Sprintf("len=%d/extra=%d/fill=%d", n, extra, fill), func(t *testing.T) {
					pre := labels.FromStrings("__name__", strings.Repeat("f", max(0, fill)))
					ls := labels.FromStrings("__name__", strings.Repeat("f", max(0, fill)), name, value)
					var h TenantHasher
					h.Reset("tenant")
					pre.Range(func(l labels.Label) { h.Write(view(l.Name, extra), view(l.Value, extra)) })
					h.Write(view(name, extra), view(value, extra))
					if got, want := h.Sum64(), ls.Hash(); got != want {
						t.Fatalf("Sum64() = %#x, want Labels.Hash() %#x", got, want)
					}
					if got, want := h.TenantSum64(), thanosTenantHash("tenant", ls); got != want {
						t.Fatalf("TenantSum64() = %#x, want %#x", got, want)
					}
					var ps []Pair
					pre.Range(func(l labels.Label) { ps = append(ps, Pair{view(l.Name, extra), view(l.Value, extra)}) })
					h.Reset("tenant")
					h.WritePairs(append(ps, Pair{view(name, extra), view(value, extra)}))
					if got, want := h.Sum64(), ls.Hash(); got != want {
						t.Fatalf("WritePairs: Sum64() = %#x, want Labels.Hash() %#x", got, want)
					}
					if got, want := h.TenantSum64(), thanosTenantHash("tenant", ls); got != want {
						t.Fatalf("WritePairs: TenantSum64() = %#x, want %#x", got, want)
					}
				})
			}
		}
	}
}
