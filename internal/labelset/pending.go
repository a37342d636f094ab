package labelset

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/internal/labelhash"
)

// Pending is a series' labels as a decoder gathers them: pairs that alias
// the request, in Pairs, added to Set only when a caller first asks for the
// labels (LabelSet), so that a series found by its pairs alone (Equal) is
// neither copied nor hashed. The decoders of package ingest/decode keep
// one in each series view, and the benchmarks of package ingest/refcache
// build theirs the same way. A Pending is not safe for concurrent use.
type Pending struct {
	Set   Set
	Pairs []labelhash.Pair // the series' labels, gathered for Set.AddPairs
	// Gathered is set when Pairs holds labels not yet added to Set.
	Gathered bool
	// Sorted is set when the names of Pairs were seen to increase
	// strictly (KeyOrder), for LabelSet to add them without Set's own
	// order check.
	Sorted bool
}

// LabelSet returns p.Set with the gathered pairs added, which it adds on
// the first call.
func (p *Pending) LabelSet() *Set {
	if p.Gathered {
		p.Gathered = false
		if p.Sorted {
			p.Set.AddSortedPairs(p.Pairs)
		} else {
			p.Set.AddPairs(p.Pairs)
		}
	}
	return &p.Set
}

// Equal reports whether the labels are exactly ls. Pairs gathered and
// sorted are compared without being added to the Set, so that a lookup
// that confirms a cache guess and takes the hash from the entry neither
// copies nor hashes them again.
func (p *Pending) Equal(ls labels.Labels) bool {
	if p.Gathered && p.Sorted {
		return p.Set.EqualSortedPairs(p.Pairs, ls)
	}
	return p.LabelSet().Equal(ls)
}

// nameKey returns the first eight bytes of b, which starts with a name of
// n bytes, zero-padded past the name, as a big-endian number: keys order
// as the names' first eight bytes do, so a key above the last one's shows
// a name that sorts after it. A shift of 64 or more gives 0: an empty name
// has key 0, which sorts after nothing.
func nameKey(b []byte, n int) uint64 {
	return binary.BigEndian.Uint64(b[:8]) & (^uint64(0) << (8 * max(8-n, 0)))
}

// KeyOrder is the order check that a decoder makes as it gathers names:
// given whether the names so far increased (sorted) and the last one's
// key, it returns the same for one more name of n bytes, whose bytes and
// those after it are b, of which it reads eight. A name with fewer than
// eight bytes left from its start cannot be keyed, and ends the check.
func KeyOrder(sorted bool, prev uint64, b []byte, n int) (bool, uint64) {
	if len(b) < 8 {
		return false, prev
	}
	key := nameKey(b, n)
	return sorted && key > prev, key
}

// PairsIncrease reports whether the names of ps increase strictly, compared
// in full: the exact check a decoder makes once a series is gathered when
// KeyOrder could not tell, as for names that share their first eight bytes
// (Thanos's BenchmarkHandlerReceiveHTTP names, Kubernetes' "label_app_..."),
// or for remote-write 2.0's pairs, resolved from the symbols. An empty name
// sorts after nothing, as in KeyOrder, and so is never reported in order.
func PairsIncrease(ps []labelhash.Pair) bool {
	if len(ps) == 0 || len(ps[0].Name) == 0 {
		return false
	}
	for i := 1; i < len(ps); i++ {
		if bytes.Compare(ps[i-1].Name, ps[i].Name) >= 0 {
			return false
		}
	}
	return true
}

// PushPair returns ps one pair longer, for the caller to fill in place: a
// Pair built apart and appended is written to the stack in words and read
// back in wider moves, which stalls the processor's store-to-load
// forwarding (seen in the profile of package ingest/decode's
// BenchmarkDecode).
func PushPair(ps []labelhash.Pair) []labelhash.Pair {
	if len(ps) == cap(ps) {
		ps = slices.Grow(ps, 1)
	}
	return ps[:len(ps)+1]
}
