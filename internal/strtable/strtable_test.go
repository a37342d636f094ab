package strtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// The white-box tests of the tables; package labels tests them through its
// API.

func sameMemory(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
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
