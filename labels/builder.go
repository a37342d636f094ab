package labels

import (
	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/internal/labelset"
)

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
	s labelset.Set
}

// SetInterner makes [Builder.Labels] take label strings from in where the
// labels build keeps strings apart (slicelabels). The default stringlabels
// build copies every label set into one string and the dedupelabels build
// keeps strings in its [labels.SymbolTable], so there the interner is not
// used. A nil in means no interner.
func (b *Builder) SetInterner(in Interner) { b.s.SetInterner(in) }

// SetSymbolTable sets the symbol table that [Builder.Labels] uses in the
// dedupelabels build, typically the one of the TSDB head the labels are for.
// Without one, the Builder makes its own on first use. Other builds ignore it.
func (b *Builder) SetSymbolTable(t *labels.SymbolTable) { b.s.SetSymbolTable(t) }

// Reset forgets the pairs of the previous series. It keeps the Builder's
// buffers, so a reused Builder stops allocating once it has seen its largest
// series.
func (b *Builder) Reset() { b.s.Reset() }

// ResetTenant is [Builder.Reset] that also starts computing
// [Builder.TenantHash] for tenant.
func (b *Builder) ResetTenant(tenant string) { b.s.ResetTenant(tenant) }

// Add adds a pair given as byte slices, typically straight from a request
// buffer. The Builder keeps the slices, without copying, until the next
// [Builder.Reset]: the caller must not change their bytes until then. While
// it runs, Add may also read, without using them, the bytes between a
// slice's length and its capacity (it copies short strings into its hash
// buffer in whole words): no other goroutine may write them meanwhile. No
// [labels.Labels] or [Hashed] built from them aliases them.
//
// Add makes no allocation once the Builder has held as many pairs before.
func (b *Builder) Add(name, value []byte) { b.s.Add(name, value) }

// AddString adds a pair given as strings. Go strings are immutable, so the
// Builder keeps them as they are: in the slicelabels build, a label set built
// from them shares their memory rather than copying it.
//
// AddString makes no allocation once the Builder has held as many pairs
// before.
func (b *Builder) AddString(name, value string) { b.s.AddString(name, value) }

// Len returns the number of pairs added since the last reset.
func (b *Builder) Len() int { return b.s.Len() }

// Hash returns [labels.Labels.Hash] of the pairs added since the last reset,
// sorted by name.
//
// Hash makes no allocation when the pairs arrived sorted.
func (b *Builder) Hash() uint64 { return b.s.Hash() }

// TenantHash returns the Thanos hashring's hash of the pairs for the tenant
// given to [Builder.ResetTenant]: xxhash over "tenant 0xff name 0xff value
// 0xff ..." of the sorted pairs. It equals [Builder.ThanosHash], which Thanos
// receive routes by, when the pairs were added sorted by name. It panics if
// the Builder was not reset with a tenant.
//
// TenantHash makes no allocation. When the pairs were not added sorted it
// hashes them again, once.
func (b *Builder) TenantHash() uint64 {
	if !b.s.HasTenant() {
		panic("labels: TenantHash without ResetTenant")
	}
	return b.s.TenantHash()
}

// ThanosHash returns exactly the hash Thanos receive's hashring routes a
// series by, labelpb.HashWithPrefix(tenant, labels): xxhash over "tenant
// 0xff name 0xff value 0xff ..." of the pairs in the order they were added,
// for the tenant given to [Builder.ResetTenant]. Thanos hashes the labels in
// the order the request holds them, unsorted if they are; when the pairs
// were added sorted by name (remote write requires it) it equals
// [Builder.TenantHash]. It is computed in the same pass as [Builder.Hash];
// it is the value that Hash of package ingest/hashring gives the built
// labels, and what that package's Ring takes, for a caller that decodes its
// own pairs and wants no second pass. It panics if the Builder was not
// reset with a tenant.
//
// ThanosHash makes no allocation.
func (b *Builder) ThanosHash() uint64 {
	if !b.s.HasTenant() {
		panic("labels: ThanosHash without ResetTenant")
	}
	return b.s.ArrivalTenantHash()
}

// Equal reports whether the pairs, sorted by name, are exactly the labels of
// ls. A caller that found a series by [Builder.Hash] confirms the hit with it,
// which tells a hash collision from a match without building anything.
//
// Equal makes no allocation when the pairs arrived sorted.
func (b *Builder) Equal(ls labels.Labels) bool { return b.s.Equal(ls) }

// Range calls f for each pair in label order. The strings passed to f may
// alias the bytes given to [Builder.Add] and are valid only until the next
// reset.
func (b *Builder) Range(f func(name, value string)) { b.s.Range(f) }

// Labels builds the label set of the pairs, sorted by name, with its hash.
// Bytes given to [Builder.Add] are copied exactly once (or taken from the
// interner), so the result never aliases the caller's buffers. It does not
// reset the Builder.
//
// Labels makes one allocation in the default stringlabels build (the label
// data); see [Builder.SetInterner] and [Builder.SetSymbolTable] for the other
// builds.
func (b *Builder) Labels() Hashed {
	h := b.s.Hash()
	return Hashed{ls: b.s.Labels(), xhash: h ^ emptyHash}
}
