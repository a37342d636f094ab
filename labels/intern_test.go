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
