package labels

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
)

type internerCase struct {
	name  string
	new   func() Interner
	reset func(Interner)
	stats func(Interner) InternStats
}

var internerCases = []internerCase{
	{"table", func() Interner { return new(Table) }, func(in Interner) { in.(*Table).Reset() }, func(in Interner) InternStats { return in.(*Table).Stats() }},
	{"unique", func() Interner { return new(Unique) }, func(in Interner) { in.(*Unique).Reset() }, func(in Interner) InternStats { return in.(*Unique).Stats() }},
	{"go4", func() Interner { return new(Go4) }, func(in Interner) { in.(*Go4).Reset() }, func(in Interner) InternStats { return in.(*Go4).Stats() }},
}

// internLens are string lengths around the chunk limits of Table.
var internLens = []int{0, 1, 127, 128, 129, 255, 1023, 1024, 1025, 16 << 10, 64 << 10}

func TestInternCanonical(t *testing.T) {
	for _, tc := range internerCases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.new()
			want := map[string]string{}
			for _, n := range internLens {
				for k := range 3 {
					v := strings.Repeat(string(rune('a'+k)), n)
					buf := []byte(v)
					got := in.Intern(buf)
					for i := range buf {
						buf[i] = '!' // the caller reuses its buffer
					}
					if got != v {
						t.Fatalf("Intern(%d bytes) = %.20q..., want %.20q...", n, got, v)
					}
					if prev, ok := want[v]; ok && !sameMemory(prev, got) {
						t.Fatalf("Intern(%d bytes) twice returned two copies", n)
					}
					want[v] = got
					if again := in.Intern([]byte(v)); !sameMemory(again, got) {
						t.Fatalf("Intern(%d bytes) again returned a new copy", n)
					}
				}
			}
			st := tc.stats(in)
			if got, wantN := st.Strings, len(want); got != wantN {
				t.Fatalf("Stats().Strings = %d, want %d", got, wantN)
			}
			var bytes int64
			for v := range want {
				bytes += int64(len(v))
			}
			if st.Bytes != bytes {
				t.Fatalf("Stats().Bytes = %d, want %d", st.Bytes, bytes)
			}
			tc.reset(in)
			if st := tc.stats(in); st.Strings != 0 || st.Bytes != 0 {
				t.Fatalf("Stats() after Reset = %+v, want zero", st)
			}
			// Strings handed out before Reset stay intact.
			for v, got := range want {
				if got != v {
					t.Fatalf("string changed after Reset: %.20q, want %.20q", got, v)
				}
			}
		})
	}
}

// TestInternSurvivesGC is the case that unique.Make(s).Value() gets wrong on
// its own: once the handle is dropped and a GC runs, the next Make copies the
// string again.
func TestInternSurvivesGC(t *testing.T) {
	for _, tc := range internerCases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.new()
			first := in.Intern([]byte("survives-gc-" + tc.name))
			runtime.GC()
			runtime.GC()
			if again := in.Intern([]byte("survives-gc-" + tc.name)); !sameMemory(first, again) {
				t.Fatalf("Intern after GC returned a new copy")
			}
		})
	}
}

func TestInternHitAllocs(t *testing.T) {
	for _, tc := range internerCases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.new()
			b := []byte("api-server-7d9f8b6c5-x2k4p")
			in.Intern(b)
			if got := testing.AllocsPerRun(1000, func() { in.Intern(b) }); got != 0 {
				t.Fatalf("Intern hit: AllocsPerRun = %v, want 0", got)
			}
		})
	}
}

func TestInternMissCopiesOnce(t *testing.T) {
	// A Table miss copies into a chunk: most misses allocate nothing.
	var tab Table
	vals := internValues(1000)
	i := 0
	allocs := testing.AllocsPerRun(len(vals)-1, func() {
		tab.Intern(vals[i])
		i++
	})
	if allocs > 0.1 {
		t.Fatalf("Table miss: AllocsPerRun = %v, want at most 0.1 (chunks, not a string per miss)", allocs)
	}
}

// internValues returns n distinct label values of typical lengths.
func internValues(n int) [][]byte {
	r := rand.New(rand.NewPCG(1, uint64(n)))
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "pod-%06d-%s", i, strings.Repeat("x", r.IntN(48)))
	}
	return out
}

func TestTableRetained(t *testing.T) {
	for _, n := range []int{10, 1000, 10000, 100000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var tab Table
			for _, v := range internValues(n) {
				tab.Intern(v)
			}
			st := tab.Stats()
			limit := float64(st.Bytes) * 1.05
			if n < 1000 {
				// Tiny tables pay for one minimum chunk.
				limit = float64(st.Bytes) + minChunk
			}
			if float64(st.Retained) > limit {
				t.Fatalf("Table of %d strings: Stats() = %+v, retained %.3fx the strings' bytes, want at most %.0f", n, st, float64(st.Retained)/float64(st.Bytes), limit)
			}
		})
	}
}

func TestInternConcurrent(t *testing.T) {
	vals := internValues(2000)
	for _, tc := range internerCases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.new()
			var wg sync.WaitGroup
			results := make([][]string, 4)
			for g := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res := make([]string, len(vals))
					for i, v := range vals {
						buf := append([]byte(nil), v...)
						res[i] = in.Intern(buf)
						clear(buf)
					}
					results[g] = res
				}()
			}
			wg.Wait()
			for i, v := range vals {
				for g := range results {
					if results[g][i] != string(v) || !sameMemory(results[g][i], results[0][i]) {
						t.Fatalf("goroutine %d: Intern(%q) = %q, not the canonical string", g, v, results[g][i])
					}
				}
			}
		})
	}
}

// TestTableTagCollisions gives many strings one tag, as a chosen hash
// would: each is still found by its bytes, on one long probe sequence.
func TestTableTagCollisions(t *testing.T) {
	var tab Table
	s := &tab.shards[0]
	const tag = 5
	vals := internValues(3000)
	got := make([]string, len(vals))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, v := range vals {
		_, p, ok := tab.find(s, tag, v)
		if ok {
			t.Fatalf("find(%q) before insert: found", v)
		}
		got[i] = tab.insert(s, tag, p, bytes.Clone(v))
	}
	for i, v := range vals {
		found, _, ok := tab.find(s, tag, v)
		if !ok || !sameMemory(found, got[i]) || found != string(v) {
			t.Fatalf("find(%q) = %q, %v; want the string inserted", v, found, ok)
		}
	}
	if s.n != len(vals) {
		t.Fatalf("shard holds %d strings, want %d", s.n, len(vals))
	}
}

// TestTableChunkNumbers runs a table out of chunk numbers: strings then get
// allocations of their own, and every string stays canonical.
func TestTableChunkNumbers(t *testing.T) {
	var tab Table
	// As if maxChunks-1 chunks were filled: the next chunk is the last.
	filled := make([]string, maxChunks-1)
	tab.generation().full.Store(&filled)
	vals := internValues(200) // more than one minimum chunk
	got := make([]string, len(vals))
	for i, v := range vals {
		got[i] = tab.Intern(v)
	}
	own := 0
	for i := range tab.shards {
		if ix := tab.shards[i].index.Load(); ix != nil {
			own += len(ix.own)
		}
	}
	if own == 0 || own == len(vals) {
		t.Fatalf("%d of %d strings have their own allocation, want some but not all", own, len(vals))
	}
	if n := len(*tab.generation().full.Load()); n != maxChunks-1 {
		t.Fatalf("%d chunks filled, want %d: no chunk beyond the last number", n, maxChunks-1)
	}
	for i, v := range vals {
		if again := tab.Intern(bytes.Clone(v)); again != string(v) || !sameMemory(again, got[i]) {
			t.Fatalf("Intern(%q) again = %q, not the canonical string", v, again)
		}
	}
}

// TestHandleTagCollisions gives many strings one shard and one tag in the
// front of Unique and Go4: each is still found by its bytes.
func TestHandleTagCollisions(t *testing.T) {
	var u Unique
	const h = 5<<(64-tagBits) | 3 // tag 5, shard 3
	vals := internValues(3000)
	got := make([]string, len(vals))
	for i, v := range vals {
		got[i] = u.f.internHash(h, bytes.Clone(v), makeUnique)
	}
	for i, v := range vals {
		if again := u.f.internHash(h, v, makeUnique); again != string(v) || !sameMemory(again, got[i]) {
			t.Fatalf("internHash(%q) again = %q, not the canonical string", v, again)
		}
	}
	if st := u.Stats(); st.Strings != len(vals) {
		t.Fatalf("Stats().Strings = %d, want %d", st.Strings, len(vals))
	}
	if ix := u.f.shards[3].index.Load(); ix == nil || len(ix.entries) != len(vals) {
		t.Fatalf("shard 3 does not hold the %d strings", len(vals))
	}
}

// TestInternResetConcurrent resets an interner while other goroutines
// intern: every result is the string given, whichever side of a reset it
// fell on.
func TestInternResetConcurrent(t *testing.T) {
	for _, tc := range internerCases {
		t.Run(tc.name, func(t *testing.T) { testResetConcurrent(t, tc) })
	}
}

func testResetConcurrent(t *testing.T, tc internerCase) {
	in := tc.new()
	vals := internValues(3000)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				tc.reset(in)
				runtime.Gosched()
			}
		}
	}()
	var fail sync.Once
	var workers sync.WaitGroup
	for range 3 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for round := range 5 {
				for _, v := range vals {
					buf := bytes.Clone(v)
					got := in.Intern(buf)
					clear(buf)
					if got != string(v) {
						fail.Do(func() { t.Errorf("round %d: Intern(%q) = %q", round, v, got) })
					}
				}
			}
		}()
	}
	workers.Wait()
	close(stop)
	wg.Wait()
}
