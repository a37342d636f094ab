package exemplars

import (
	"math/rand/v2"
	"testing"
)

// TestIndex drives an index with random sets and removes, against a map,
// and checks every hash after every step: hashes from a few hundred
// values, so that the table grows, runs form and removes move slots back
// across them, and hashes that share their low or high 32 bits, whose
// tags collide.
func TestIndex(t *testing.T) {
	hashSets := map[string]func(r *rand.Rand) uint64{
		"random":    func(r *rand.Rand) uint64 { return r.Uint64N(300) * 0x9e3779b97f4a7c15 },
		"small":     func(r *rand.Rand) uint64 { return r.Uint64N(300) },
		"same-low":  func(r *rand.Rand) uint64 { return r.Uint64N(300) << 32 },
		"same-tag":  func(r *rand.Rand) uint64 { v := r.Uint64N(300); return v<<32 | v },
		"multiples": func(r *rand.Rand) uint64 { return r.Uint64N(300) << 40 },
	}
	for name, hashOf := range hashSets {
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(20) {
				r := rand.New(rand.NewPCG(seed, 0x1de))
				var x index
				if seed%2 == 0 {
					x = makeIndex(int(seed))
				}
				// series[id].hash is the hash set for id; ids are never reused
				// here, which the index does not rely on either way.
				series := make([]seriesEntry, 1, 4096)
				want := map[uint64]uint32{}
				for step := range 3000 {
					h := hashOf(r)
					_, ok := want[h]
					switch {
					case ok && r.IntN(2) == 0:
						x.remove(series, h)
						delete(want, h)
					default:
						id := uint32(len(series))
						series = append(series, seriesEntry{hash: h})
						x.set(series, h, id)
						want[h] = id
					}
					if x.n != len(want) {
						t.Fatalf("seed %d step %d: index holds %d hashes, want %d", seed, step, x.n, len(want))
					}
					if 2*x.n > len(x.slots) {
						t.Fatalf("seed %d step %d: %d hashes in %d slots, more than half full", seed, step, x.n, len(x.slots))
					}
					if step%50 != 0 && step < 2990 {
						continue
					}
					for v := range uint64(300) {
						for _, probe := range []uint64{v * 0x9e3779b97f4a7c15, v, v << 32, v<<32 | v, v << 40} {
							if got := x.head(series, probe); got != want[probe] {
								t.Fatalf("seed %d step %d: head(%#x) = %d, want %d", seed, step, probe, got, want[probe])
							}
						}
					}
				}
			}
		})
	}
}

// TestIndexZero checks that the zero index, and one emptied by removes,
// finds nothing.
func TestIndexZero(t *testing.T) {
	var x index
	series := []seriesEntry{{}, {hash: 7}}
	if got := x.head(series, 7); got != 0 {
		t.Errorf("zero index: head(7) = %d, want 0", got)
	}
	x.set(series, 7, 1)
	if got := x.head(series, 7); got != 1 {
		t.Errorf("after set(7, 1): head(7) = %d, want 1", got)
	}
	x.remove(series, 7)
	if got := x.head(series, 7); got != 0 || x.n != 0 {
		t.Errorf("after remove(7): head(7) = %d with %d hashes, want 0 with 0", got, x.n)
	}
}
