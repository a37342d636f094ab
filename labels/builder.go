package labels

import (
	"cmp"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/internal/labelhash"
)

// pair is one (name, value) given to a Builder. Strings added from byte
// slices alias the caller's bytes (see strings_unsafe.go).
type pair struct {
	name, value string
	borrowed    bool // aliases caller bytes: must be copied before it is kept
}

// Builder collects the (name, value) pairs of one series and hashes them as
// they arrive, so that the series can be found by hash and confirmed with
// [Builder.Equal] without building a [labels.Labels]; [Builder.Labels] builds
// one, copying the bytes once, only when the series is new.
//
// Pairs normally arrive sorted by name, as Prometheus's remote-write senders
// send them; then each pair is hashed once, as it is added. If a pair arrives
// out of order the Builder sorts the pairs and hashes them again on the next
// call that needs the hash, so that the result is always that of the sorted
// set, as Prometheus's own decoders sort. Pairs are kept as given otherwise:
// empty values and repeated names are hashed and built like any other pair,
// as [labels.ScratchBuilder] does; validating them is the appender's job
// (Prometheus's head rejects repeated names). Pairs with the same name are
// ordered by value, so the hash of such an invalid set does not depend on
// arrival order; it is the hash of the labels [Builder.Labels] builds, but
// may differ from that of a ScratchBuilder, whose sort leaves their order
// unspecified.
//
// The zero value is ready to use. A Builder is meant to be reused, one per
// goroutine, with [Builder.Reset] between series. It is not safe for
// concurrent use by multiple goroutines.
type Builder struct {
	h          labelhash.TenantHasher
	withTenant bool
	tenant     string
	pairs      []pair
	unsorted   bool // a pair arrived out of order; the hasher is stale
	sb         labels.ScratchBuilder
	sbReady    bool // sb is set up with syms (dedupelabels)
	syms       *labels.SymbolTable
	interner   Interner
}

// SetInterner makes [Builder.Labels] take label strings from in where the
// labels build keeps strings apart (slicelabels). The default stringlabels
// build copies every label set into one string and the dedupelabels build
// keeps strings in its [labels.SymbolTable], so there the interner is not
// used. A nil in means no interner.
func (b *Builder) SetInterner(in Interner) { b.interner = in }

// SetSymbolTable sets the symbol table that [Builder.Labels] uses in the
// dedupelabels build, typically the one of the TSDB head the labels are for.
// Without one, the Builder makes its own on first use. Other builds ignore it.
func (b *Builder) SetSymbolTable(t *labels.SymbolTable) {
	b.syms = t
	b.sbReady = false
}

// Reset forgets the pairs of the previous series. It keeps the Builder's
// buffers, so a reused Builder stops allocating once it has seen its largest
// series.
func (b *Builder) Reset() {
	b.h.Hasher.Reset()
	b.withTenant = false
	b.tenant = ""
	clear(b.pairs) // drop references to the previous request's memory
	b.pairs = b.pairs[:0]
	b.unsorted = false
}

// ResetTenant is [Builder.Reset] that also starts computing
// [Builder.TenantHash] for tenant.
func (b *Builder) ResetTenant(tenant string) {
	b.Reset()
	b.h.Reset(tenant)
	b.withTenant = true
	b.tenant = tenant
}

// Add adds a pair given as byte slices, typically straight from a request
// buffer. The Builder keeps the slices, without copying, until the next
// [Builder.Reset]: the caller must not change their bytes until then. No
// [labels.Labels] or [Hashed] built from them aliases them.
//
// Add makes no allocation once the Builder has held as many pairs before.
func (b *Builder) Add(name, value []byte) {
	b.add(pair{name: yoloString(name), value: yoloString(value), borrowed: true})
	if !b.unsorted {
		if b.withTenant {
			b.h.Write(name, value)
		} else {
			b.h.Hasher.Write(name, value)
		}
	}
}

// AddString adds a pair given as strings. Go strings are immutable, so the
// Builder keeps them as they are: in the slicelabels build, a label set built
// from them shares their memory rather than copying it.
//
// AddString makes no allocation once the Builder has held as many pairs
// before.
func (b *Builder) AddString(name, value string) {
	b.add(pair{name: name, value: value})
	if !b.unsorted {
		b.hashString(name, value)
	}
}

func (b *Builder) hashString(name, value string) {
	if b.withTenant {
		b.h.WriteString(name, value)
	} else {
		b.h.Hasher.WriteString(name, value)
	}
}

func (b *Builder) add(p pair) {
	if n := len(b.pairs); n > 0 {
		if last := &b.pairs[n-1]; p.name < last.name || p.name == last.name && p.value < last.value {
			b.unsorted = true
		}
	}
	b.pairs = append(b.pairs, p)
}

// Len returns the number of pairs added since the last reset.
func (b *Builder) Len() int { return len(b.pairs) }

// sort puts the pairs in label order and rehashes them, if one arrived out of
// order. Pairs with the same name are ordered by value, so that the result
// does not depend on arrival order.
func (b *Builder) sort() {
	if !b.unsorted {
		return
	}
	slices.SortFunc(b.pairs, func(x, y pair) int {
		if c := cmp.Compare(x.name, y.name); c != 0 {
			return c
		}
		return cmp.Compare(x.value, y.value)
	})
	if b.withTenant {
		b.h.Reset(b.tenant)
	} else {
		b.h.Hasher.Reset()
	}
	for _, p := range b.pairs {
		b.hashString(p.name, p.value)
	}
	b.unsorted = false
}

// Hash returns [labels.Labels.Hash] of the pairs added since the last reset,
// sorted by name.
//
// Hash makes no allocation when the pairs arrived sorted.
func (b *Builder) Hash() uint64 {
	b.sort()
	return b.h.Sum64()
}

// TenantHash returns the Thanos hashring's hash of the pairs for the tenant
// given to [Builder.ResetTenant]: xxhash over "tenant 0xff name 0xff value
// 0xff ..." of the sorted pairs. It panics if the Builder was not reset with a
// tenant.
//
// TenantHash makes no allocation when the pairs arrived sorted.
func (b *Builder) TenantHash() uint64 {
	if !b.withTenant {
		panic("labels: TenantHash without ResetTenant")
	}
	b.sort()
	return b.h.TenantSum64()
}

// Equal reports whether the pairs, sorted by name, are exactly the labels of
// ls. A caller that found a series by [Builder.Hash] confirms the hit with it,
// which tells a hash collision from a match without building anything.
//
// Equal makes no allocation when the pairs arrived sorted.
func (b *Builder) Equal(ls labels.Labels) bool {
	b.sort()
	eq := true
	i := 0
	ls.Range(func(l labels.Label) {
		if !eq {
			return
		}
		if i >= len(b.pairs) || b.pairs[i].name != l.Name || b.pairs[i].value != l.Value {
			eq = false
		}
		i++
	})
	return eq && i == len(b.pairs)
}

// Range calls f for each pair in label order. The strings passed to f may
// alias the bytes given to [Builder.Add] and are valid only until the next
// reset.
func (b *Builder) Range(f func(name, value string)) {
	b.sort()
	for _, p := range b.pairs {
		f(p.name, p.value)
	}
}

// Labels builds the label set of the pairs, sorted by name, with its hash.
// Bytes given to [Builder.Add] are copied exactly once (or taken from the
// interner), so the result never aliases the caller's buffers. It does not
// reset the Builder.
//
// Labels makes one allocation in the default stringlabels build (the label
// data); see [Builder.SetInterner] and [Builder.SetSymbolTable] for the other
// builds.
func (b *Builder) Labels() Hashed {
	h := b.Hash()
	return Hashed{ls: b.build(), xhash: h ^ emptyHash}
}
