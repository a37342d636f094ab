package labelset

import (
	"cmp"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/internal/bytestr"
	"github.com/ingestkit/ingestkit/internal/labelhash"
)

// pair is one (name, value) given to a Set. Strings added from byte slices
// alias the caller's bytes (see package bytestr).
type pair struct {
	name, value string
	borrowed    bool // aliases caller bytes: must be copied before it is kept
}

// Set holds the (name, value) pairs of one series and hashes them as they
// arrive: the implementation behind labels.HashedBuilder and the decoders of
// package ingest, which document it for their users.
//
// Pairs normally arrive sorted by name and are hashed once, as they are added.
// If one arrives out of order, the Set sorts the pairs (by name, then value,
// so that repeated names, which are invalid, still give one result whatever
// their arrival order) and hashes them again on the next call that needs the
// hash. The tenant hash is also kept in arrival order, which is what Thanos
// routes by ([Set.ArrivalTenantHash]). Empty values and repeated names are
// kept, as labels.ScratchBuilder keeps them; validating them is the appender's
// job.
//
// The zero value is ready to use; reuse one with Reset. A Set is not safe for
// concurrent use by multiple goroutines.
type Set struct {
	h          labelhash.TenantHasher
	withTenant bool
	tenant     string
	pairs      []pair
	// used is the longest pairs has been since the last Release:
	// pairs[len(pairs):used] may still hold strings of earlier series.
	used int
	// sbUsed is the most pairs fill has put into sb since the last
	// Release: its Reset keeps them, views of earlier requests' bytes, in
	// a buffer no method of labels.ScratchBuilder clears.
	sbUsed   int
	unsorted bool // a pair arrived out of order; the hasher is stale
	// ahead is set when EqualSortedPairs wrote pairs to the hashers
	// without adding them to pairs: AddSortedPairs of the same pairs then
	// adds them without writing them again.
	ahead bool
	// The tenant part of h follows the pairs in arrival order, always (it
	// is what Thanos hashes); once pairs were reordered, the tenant hash of
	// the sorted pairs is computed apart, on demand, and kept until the
	// next pair.
	reordered    bool   // the pairs were sorted at least once since the reset
	sortedTenant uint64 // the tenant hash of the sorted pairs, if sortedOK
	sortedOK     bool
	sb           labels.ScratchBuilder
	sbReady      bool          // sb is set up with syms (dedupelabels)
	scratch      labels.Labels // Scratch's result, in sb's reused buffer
	syms         *labels.SymbolTable
	interner     interface{ Intern(b []byte) string } // see SetInterner
	dataBuf      []byte                               // for streamEqual, under purego
}

// SetInterner makes [Set.Labels] take label strings from in where the
// labels build keeps strings apart (slicelabels). The default stringlabels
// build copies every label set into one string and the dedupelabels build
// keeps strings in its [labels.SymbolTable], so there the interner is not
// used. A nil in means no interner.
//
// in has the method set of labels.Interner of package
// github.com/ingestkit/ingestkit/labels, which documents the contract:
// in.Intern(b) returns a canonical string for b,
// does not retain b, and returns a string that does not alias b. A Set calls
// it from the goroutine that adds to the Set; an interner shared by several
// Sets must be safe for concurrent use by multiple goroutines.
func (b *Set) SetInterner(in interface{ Intern(b []byte) string }) { b.interner = in }

// SetSymbolTable sets the symbol table that [Set.Labels] uses in the
// dedupelabels build, typically the one of the TSDB head the labels are for.
// Without one, the Set makes its own on first use. Other builds ignore it.
func (b *Set) SetSymbolTable(t *labels.SymbolTable) {
	b.syms = t
	b.sbReady = false
}

// Reset forgets the pairs of the previous series. It keeps the Set's
// buffers, so a reused Set stops allocating once it has seen its largest
// series. The strings of earlier pairs stay in the pairs' buffer until the
// next pairs overwrite them or [Set.Release] drops them.
func (b *Set) Reset() {
	b.h.Hasher.Reset()
	b.withTenant = false
	b.tenant = ""
	// No clear of the pairs here: with the GC running, clearing pointers
	// costs write barriers on every series (BenchmarkDecode in package
	// ingest, case=captured). Release clears them once per request.
	b.used = max(b.used, len(b.pairs))
	b.pairs = b.pairs[:0]
	b.dropScratch()
	b.unsorted = false
	b.reordered, b.sortedOK = false, false
	b.ahead = false
}

// Release is [Set.Reset] that also drops every reference the Set holds to
// the bytes and strings of the pairs added since the last Release, so that
// a reused Set does not keep a request's memory alive after it. A caller
// that resets the Set per series calls it once the request is done.
func (b *Set) Release() {
	b.Reset()
	clear(b.pairs[:b.used])
	b.used = 0
	if b.sbUsed > 0 {
		// Overwrite the labels sb kept with empty ones, which refer to
		// nothing, and keep its buffer.
		b.sb.Reset()
		for range b.sbUsed {
			b.sb.Add("", "")
		}
		b.sb.Reset()
		b.sbUsed = 0
	}
}

// Trim lets go of the Set's buffers if its largest series had more than
// maxPairs pairs, so that one huge series does not stay in the memory of a
// Set that is reused for small ones. Call it before [Set.Reset] or
// [Set.ResetTenant], which start the next series.
func (b *Set) Trim(maxPairs int) {
	if cap(b.pairs) > maxPairs {
		b.pairs, b.used = nil, 0
		b.sb = labels.ScratchBuilder{}
		b.sbReady = false
		b.scratch = labels.EmptyLabels()
	}
}

// ResetTenant is [Set.Reset] that also starts computing
// [Set.TenantHash] for tenant.
func (b *Set) ResetTenant(tenant string) {
	b.Reset()
	b.h.Reset(tenant)
	b.withTenant = true
	b.tenant = tenant
}

// Add adds a pair given as byte slices, typically straight from a request
// buffer. The Set keeps the slices, without copying, until the next
// [Set.Reset]: the caller must not change their bytes until then. It may
// read the bytes between a slice's length and its capacity while it runs
// (see [labelhash.Hasher.Write]), without using them. No [labels.Labels]
// built from them aliases them.
//
// Add makes no allocation once the Set has held as many pairs before.
func (b *Set) Add(name, value []byte) {
	// AddPairs of one pair, without building the pair and the loop around
	// it (BenchmarkHash in package labels, impl=ingestkit): the same order
	// check, and the pair goes to both hashes unless it or one before it
	// arrived out of order, then to the tenant hash only.
	p := b.push()
	p.name, p.value, p.borrowed = bytestr.String(name), bytestr.String(value), true
	if n := len(b.pairs) - 1; n > 0 && !b.unsorted {
		// outOfOrder, by hand, as in AddPairs.
		last := &b.pairs[n-1]
		switch {
		case len(p.name) >= 8 && len(last.name) >= 8 && prefix8(p.name) != prefix8(last.name):
			b.unsorted = prefix8(p.name) < prefix8(last.name)
		case len(p.name) >= 4 && len(last.name) >= 4 && prefix4(p.name) != prefix4(last.name):
			b.unsorted = prefix4(p.name) < prefix4(last.name)
		case len(p.name) > 0 && len(last.name) > 0 && p.name[0] != last.name[0]:
			b.unsorted = p.name[0] < last.name[0]
		default:
			b.unsorted = p.name < last.name || p.name == last.name && p.value < last.value
		}
	}
	switch {
	case !b.unsorted && !b.withTenant:
		b.h.Hasher.Write(name, value)
	case !b.unsorted:
		b.h.Write(name, value)
	case b.withTenant:
		b.h.WriteTenant(name, value)
	}
}

// AddPairs adds the pairs in order, as an [Set.Add] of each would, in one
// call: a decoder that gathers the pairs of a series first saves a call per
// pair. The Set keeps the slices of the pairs as Add does, and not ps.
//
// AddPairs makes no allocation once the Set has held as many pairs before.
func (b *Set) AddPairs(ps []labelhash.Pair) {
	// The pairs before the first one out of order go to both hashes, the
	// others to the tenant hash only (see sort).
	k := len(ps)
	if b.unsorted {
		k = 0
	}
	for i := range ps {
		p := b.push()
		p.name, p.value, p.borrowed = bytestr.String(ps[i].Name), bytestr.String(ps[i].Value), true
		if n := len(b.pairs) - 1; n > 0 && !b.unsorted {
			// outOfOrder, by hand: the compiler does not inline it, and
			// this is the decoders' path.
			last := &b.pairs[n-1]
			switch {
			case len(p.name) >= 8 && len(last.name) >= 8 && prefix8(p.name) != prefix8(last.name):
				b.unsorted = prefix8(p.name) < prefix8(last.name)
			case len(p.name) >= 4 && len(last.name) >= 4 && prefix4(p.name) != prefix4(last.name):
				b.unsorted = prefix4(p.name) < prefix4(last.name)
			case len(p.name) > 0 && len(last.name) > 0 && p.name[0] != last.name[0]:
				b.unsorted = p.name[0] < last.name[0]
			default:
				b.unsorted = p.name < last.name || p.name == last.name && p.value < last.value
			}
			if b.unsorted {
				k = i
			}
		}
	}
	if !b.withTenant {
		b.h.Hasher.WritePairs(ps[:k])
		return
	}
	b.h.WritePairs(ps[:k])
	b.h.WriteTenantPairs(ps[k:])
}

// AddSortedPairs is [Set.AddPairs] for pairs whose names the caller has
// seen to increase strictly, so that none is out of order: it leaves out the
// order check of each pair, which the decoders of package ingest make while
// they gather the pairs (BenchmarkDecode in examples/peers, rw=1). Pairs in
// any other order must go to AddPairs. Pairs already in the Set are checked
// against as AddPairs checks them.
//
// AddSortedPairs makes no allocation once the Set has held as many pairs
// before.
func (b *Set) AddSortedPairs(ps []labelhash.Pair) {
	n := len(b.pairs)
	if n > 0 {
		b.AddPairs(ps)
		return
	}
	hashed := b.ahead
	b.ahead = false
	if len(ps) > cap(b.pairs) {
		b.pairs = slices.Grow(b.pairs, len(ps))
	}
	b.pairs = b.pairs[:len(ps)]
	b.sortedOK = false
	for i := range ps {
		p := &b.pairs[i]
		p.name, p.value, p.borrowed = bytestr.String(ps[i].Name), bytestr.String(ps[i].Value), true
	}
	if !hashed {
		b.writeSorted(ps)
	}
}

// writeSorted writes ps, sorted pairs, to the hashers.
func (b *Set) writeSorted(ps []labelhash.Pair) {
	if !b.withTenant {
		b.h.Hasher.WritePairs(ps)
		return
	}
	b.h.WritePairs(ps)
}

// EqualSortedPairs reports what [Set.AddSortedPairs] of ps followed by
// [Set.Equal] of ls would, on a Set that holds no pairs, without adding
// them: in the default stringlabels build it writes them to the hashers,
// whose stream Equal compares in one comparison, and skips the copy into
// the Set's pairs, which only its other methods read; in the builds whose
// label sets have no such encoded form it compares the pairs one by one
// and writes nothing. A lookup that confirms a cache's guess by its
// labels, and takes the hash from the cache, so pays for no more
// (BenchmarkReceive in package ingest, typical-500). The caller must then, before any other
// method but EqualSortedPairs of the same ps, give the Set the same ps
// with AddSortedPairs (or reset it): that adds them without writing them
// again. It panics on a Set that holds pairs, whose hashers already hold
// theirs.
//
// EqualSortedPairs makes no allocation when Equal makes none.
func (b *Set) EqualSortedPairs(ps []labelhash.Pair, ls labels.Labels) bool {
	if len(b.pairs) > 0 {
		panic("labelset: EqualSortedPairs on a Set that holds pairs")
	}
	// Without an encoded form to compare the stream with (streamComparable
	// false), the pairs are compared one by one, and written to the
	// hashers only if the caller then adds them.
	if streamComparable {
		if !b.ahead {
			b.writeSorted(ps)
			b.ahead = true
		}
		if eq, ok := b.streamMatch(ls); ok {
			return eq
		}
	}
	return walkEqual(ls, len(ps), func(i int) (string, string) {
		return bytestr.String(ps[i].Name), bytestr.String(ps[i].Value)
	})
}

// AddString adds a pair given as strings. Go strings are immutable, so the
// Set keeps them as they are: in the slicelabels build, a label set built
// from them shares their memory rather than copying it.
//
// AddString makes no allocation once the Set has held as many pairs
// before.
func (b *Set) AddString(name, value string) {
	p := b.push()
	p.name, p.value, p.borrowed = name, value, false
	if n := len(b.pairs) - 1; n > 0 && !b.unsorted {
		b.unsorted = outOfOrder(p, &b.pairs[n-1])
	}
	switch {
	case !b.unsorted && !b.withTenant:
		b.h.Hasher.WriteString(name, value)
	case !b.unsorted:
		b.h.WriteString(name, value)
	case b.withTenant:
		b.h.WriteTenantString(name, value)
	}
}

// push appends a pair to b.pairs, to be filled in, and returns it. The
// fields are stored one by one: a pair built apart and appended is written
// to the stack in words and read back in wider moves, which stalls the
// store-to-load forwarding of the processor (BenchmarkHash in package
// labels showed it).
func (b *Set) push() *pair {
	n := len(b.pairs)
	if n == cap(b.pairs) {
		b.pairs = slices.Grow(b.pairs, 1)
	}
	b.pairs = b.pairs[:n+1]
	b.sortedOK = false
	return &b.pairs[n]
}

// outOfOrder reports whether p sorts before last, by name and then by
// value. Most names that arrive in order differ from the one before in
// their first eight or four bytes (or, when shorter, their first byte), which
// decides without a call to the runtime's string comparison; the others are
// compared in full.
func outOfOrder(p, last *pair) bool {
	switch {
	case len(p.name) >= 8 && len(last.name) >= 8 && prefix8(p.name) != prefix8(last.name):
		return prefix8(p.name) < prefix8(last.name)
	case len(p.name) >= 4 && len(last.name) >= 4 && prefix4(p.name) != prefix4(last.name):
		return prefix4(p.name) < prefix4(last.name)
	case len(p.name) > 0 && len(last.name) > 0 && p.name[0] != last.name[0]:
		return p.name[0] < last.name[0]
	default:
		return p.name < last.name || p.name == last.name && p.value < last.value
	}
}

// prefix4 returns the first four bytes of s, which has at least four, as a
// big-endian number.
func prefix4(s string) uint32 {
	_ = s[3]
	return uint32(s[0])<<24 | uint32(s[1])<<16 | uint32(s[2])<<8 | uint32(s[3])
}

// prefix8 returns the first eight bytes of s, which has at least eight, as a
// big-endian number, which orders as the bytes do.
func prefix8(s string) uint64 {
	_ = s[7]
	return uint64(s[0])<<56 | uint64(s[1])<<48 | uint64(s[2])<<40 | uint64(s[3])<<32 |
		uint64(s[4])<<24 | uint64(s[5])<<16 | uint64(s[6])<<8 | uint64(s[7])
}

// HasTenant reports whether the Set computes a tenant hash.
func (b *Set) HasTenant() bool { return b.withTenant }

// Len returns the number of pairs added since the last reset.
func (b *Set) Len() int { return len(b.pairs) }

// sort puts the pairs in label order and rehashes them for Hash, if one
// arrived out of order. Pairs with the same name are ordered by value, so
// that the result does not depend on arrival order. The tenant part of the
// hasher is left in arrival order.
func (b *Set) sort() {
	if !b.unsorted {
		return
	}
	slices.SortFunc(b.pairs, func(x, y pair) int {
		if c := cmp.Compare(x.name, y.name); c != 0 {
			return c
		}
		return cmp.Compare(x.value, y.value)
	})
	b.h.Hasher.Reset()
	for _, p := range b.pairs {
		b.h.Hasher.WriteString(p.name, p.value)
	}
	b.unsorted = false
	b.reordered = true
}

// Hash returns [labels.Labels.Hash] of the pairs added since the last reset,
// sorted by name.
//
// Hash makes no allocation when the pairs arrived sorted.
func (b *Set) Hash() uint64 {
	b.sort()
	return b.h.Sum64()
}

// TenantHash returns the Thanos hashring's hash of the pairs for the tenant
// given to [Set.ResetTenant]: xxhash over "tenant 0xff name 0xff value
// 0xff ..." of the sorted pairs. It panics if the Set was not reset with a
// tenant.
//
// TenantHash makes no allocation. It hashes the pairs again, once, when
// they did not arrive sorted.
func (b *Set) TenantHash() uint64 {
	if !b.withTenant {
		panic("labelset: TenantHash without ResetTenant")
	}
	b.sort()
	if !b.reordered {
		return b.h.TenantSum64()
	}
	if !b.sortedOK {
		var d labelhash.TenantDigest
		d.Reset(b.tenant)
		for _, p := range b.pairs {
			d.WriteString(p.name, p.value)
		}
		b.sortedTenant, b.sortedOK = d.Sum64(), true
	}
	return b.sortedTenant
}

// ArrivalTenantHash returns the tenant hash of the pairs in the order they
// were added, which is what Thanos receive's hashring routes by: equal to
// [Set.TenantHash] when they arrived sorted. It panics if the Set was not
// reset with a tenant.
//
// ArrivalTenantHash makes no allocation.
func (b *Set) ArrivalTenantHash() uint64 {
	if !b.withTenant {
		panic("labelset: ArrivalTenantHash without ResetTenant")
	}
	return b.h.TenantSum64()
}

// Equal reports whether the pairs, sorted by name, are exactly the labels of
// ls. A caller that found a series by [Set.Hash] confirms the hit with it,
// which tells a hash collision from a match without building anything.
//
// Equal makes no allocation when the pairs arrived sorted.
func (b *Set) Equal(ls labels.Labels) bool {
	b.sort()
	if eq, ok := b.streamMatch(ls); ok {
		return eq
	}
	return walkEqual(ls, len(b.pairs), func(i int) (string, string) { return b.pairs[i].name, b.pairs[i].value })
}

// streamMatch compares the hasher's stream with ls, as streamEqual does;
// ok is false when the stream cannot tell (past the hasher's buffer, or in
// a build whose stream is not a label set's data).
func (b *Set) streamMatch(ls labels.Labels) (eq, ok bool) {
	if stream, ok := b.h.Hasher.Stream(); ok {
		return streamEqual(stream, ls, &b.dataBuf)
	}
	return false, false
}

// walkEqual reports whether the n pairs that at returns, in order, are
// exactly the labels of ls.
func walkEqual(ls labels.Labels, n int, at func(i int) (name, value string)) bool {
	eq := true
	i := 0
	ls.Range(func(l labels.Label) {
		if !eq {
			return
		}
		if i >= n {
			eq = false
			return
		}
		if name, value := at(i); name != l.Name || value != l.Value {
			eq = false
		}
		i++
	})
	return eq && i == n
}

// Range calls f for each pair in label order. The strings passed to f may
// alias the bytes given to [Set.Add] and are valid only until the next
// reset.
func (b *Set) Range(f func(name, value string)) {
	b.sort()
	for _, p := range b.pairs {
		f(p.name, p.value)
	}
}

// Labels builds the label set of the pairs, sorted by name, with its hash.
// Bytes given to [Set.Add] are copied exactly once (or taken from the
// interner), so the result never aliases the caller's buffers. It does not
// reset the Set.
//
// Labels makes one allocation in the default stringlabels build (the label
// data); see [Set.SetInterner] and [Set.SetSymbolTable] for the other
// builds.
func (b *Set) Labels() labels.Labels {
	b.sort()
	return b.build()
}

// Scratch returns the label set of the pairs, sorted by name, built in a
// buffer that the Set reuses: it is valid only until the next Scratch,
// Labels or Reset, and may alias the bytes given to Add. It is for lookups
// that compare labels and keep nothing, such as storage.GetRef, so that they
// make no allocation once the buffer has grown (in dedupelabels, strings new
// to the symbol table are copied into it, as for Labels).
func (b *Set) Scratch() labels.Labels {
	b.sort()
	b.fill()
	b.sb.Overwrite(&b.scratch)
	return b.scratch
}

// MaxLen returns the length of the longest name or value of the Set's
// pairs, 0 for none.
func (b *Set) MaxLen() int {
	n := 0
	for _, p := range b.pairs {
		n = max(n, len(p.name), len(p.value))
	}
	return n
}
