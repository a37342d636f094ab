package labels

import (
	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/internal/labelset"
)

// HashedBuilder collects the (name, value) pairs of one series and hashes
// them as they arrive, so that the series can be found by hash and confirmed
// with [HashedBuilder.Equal] without building a [labels.Labels];
// [HashedBuilder.Labels] builds one, copying the bytes once, only when the
// series is new, and [HashedBuilder.Hashed] builds it with its hash.
//
// Its Err, Equal, Hash and Labels methods are those of the SeriesLabels
// interface of package github.com/ingestkit/ingestkit/ingest, which that
// package's appenders look series up by: a program with a decoder of its own
// adds each series' decoded pairs to a HashedBuilder and passes the
// HashedBuilder to the appender's Lookup, with no adapter.
//
// Pairs normally arrive sorted by name, as Prometheus's remote-write senders
// send them; then each pair is hashed once, as it is added. If a pair arrives
// out of order the HashedBuilder sorts the pairs and hashes them again on the
// next call that needs the hash, so that the result is always that of the
// sorted set, as Prometheus's own decoders sort. Pairs are kept as given
// otherwise: empty values and repeated names are hashed and built like any
// other pair, as [labels.ScratchBuilder] does; validating them is the
// appender's job (Prometheus's head rejects repeated names). Pairs with the
// same name are ordered by value, so the hash of such an invalid set does not
// depend on arrival order; it is the hash of the labels
// [HashedBuilder.Labels] builds, but may differ from that of a
// ScratchBuilder, whose sort leaves their order unspecified.
//
// The zero value is ready to use. A HashedBuilder is meant to be reused, one
// per goroutine, with [HashedBuilder.Reset] between series. It is not safe
// for concurrent use by multiple goroutines.
type HashedBuilder struct {
	s labelset.Set
}

// SetInterner makes [HashedBuilder.Labels] take label strings from in where the
// labels build keeps strings apart (slicelabels). The default stringlabels
// build copies every label set into one string and the dedupelabels build
// keeps strings in its [labels.SymbolTable], so there the interner is not
// used. A nil in means no interner.
func (b *HashedBuilder) SetInterner(in Interner) { b.s.SetInterner(in) }

// SetSymbolTable sets the symbol table that [HashedBuilder.Labels] uses in the
// dedupelabels build, typically the one of the TSDB head the labels are for.
// Without one, the HashedBuilder makes its own on first use. Other builds
// ignore it.
func (b *HashedBuilder) SetSymbolTable(t *labels.SymbolTable) { b.s.SetSymbolTable(t) }

// Reset forgets the pairs of the previous series. It keeps the HashedBuilder's
// buffers, so a reused HashedBuilder stops allocating once it has seen its
// largest series.
func (b *HashedBuilder) Reset() { b.s.Release() }

// ResetTenant is [HashedBuilder.Reset] that also starts computing
// [HashedBuilder.TenantHash] for tenant.
func (b *HashedBuilder) ResetTenant(tenant string) {
	b.s.Release()
	b.s.ResetTenant(tenant)
}

// Add adds a pair given as byte slices, typically straight from a request
// buffer. The HashedBuilder keeps the slices, without copying, until the next
// [HashedBuilder.Reset]: the caller must not change their bytes until then.
// While it runs, Add may also read, without using them, the bytes between a
// slice's length and its capacity (it copies short strings into its hash
// buffer in whole words): no other goroutine may write them meanwhile. No
// [labels.Labels] or [Hashed] built from them aliases them.
//
// Add makes no allocation once the HashedBuilder has held as many pairs before.
func (b *HashedBuilder) Add(name, value []byte) { b.s.Add(name, value) }

// AddString adds a pair given as strings. Go strings are immutable, so the
// HashedBuilder keeps them as they are: in the slicelabels build, a label set
// built from them shares their memory rather than copying it.
//
// AddString makes no allocation once the HashedBuilder has held as many pairs
// before.
func (b *HashedBuilder) AddString(name, value string) { b.s.AddString(name, value) }

// Len returns the number of pairs added since the last reset.
func (b *HashedBuilder) Len() int { return b.s.Len() }

// Hash returns [labels.Labels.Hash] of the pairs added since the last reset,
// sorted by name.
//
// Hash makes no allocation when the pairs arrived sorted.
func (b *HashedBuilder) Hash() uint64 { return b.s.Hash() }

// TenantHash returns the Thanos hashring's hash of the pairs for the tenant
// given to [HashedBuilder.ResetTenant]: xxhash over "tenant 0xff name 0xff
// value 0xff ..." of the sorted pairs. It equals [HashedBuilder.ThanosHash],
// which Thanos receive routes by, when the pairs were added sorted by name. It
// panics if the HashedBuilder was not reset with a tenant.
//
// TenantHash makes no allocation. When the pairs were not added sorted it
// hashes them again, once.
func (b *HashedBuilder) TenantHash() uint64 {
	if !b.s.HasTenant() {
		panic("labels: TenantHash without ResetTenant")
	}
	return b.s.TenantHash()
}

// ThanosHash returns exactly the hash Thanos receive's hashring routes a
// series by, labelpb.HashWithPrefix(tenant, labels): xxhash over "tenant 0xff
// name 0xff value 0xff ..." of the pairs in the order they were added, for the
// tenant given to [HashedBuilder.ResetTenant]. Thanos hashes the labels in the
// order the request holds them, unsorted if they are; when the pairs were
// added sorted by name (remote write requires it) it equals
// [HashedBuilder.TenantHash]. It is computed in the same pass as
// [HashedBuilder.Hash]; it is the value that Hash of package ingest/hashring
// gives the built labels, and what that package's Ring takes, for a caller
// that decodes its own pairs and wants no second pass. It panics if the
// HashedBuilder was not reset with a tenant.
//
// ThanosHash makes no allocation.
func (b *HashedBuilder) ThanosHash() uint64 {
	if !b.s.HasTenant() {
		panic("labels: ThanosHash without ResetTenant")
	}
	return b.s.ArrivalTenantHash()
}

// Equal reports whether the pairs, sorted by name, are exactly the labels of
// ls. A caller that found a series by [HashedBuilder.Hash] confirms the hit
// with it, which tells a hash collision from a match without building
// anything.
//
// Equal makes no allocation when the pairs arrived sorted.
func (b *HashedBuilder) Equal(ls labels.Labels) bool { return b.s.Equal(ls) }

// Range calls f for each pair in label order. The strings passed to f may
// alias the bytes given to [HashedBuilder.Add] and are valid only until the
// next reset.
func (b *HashedBuilder) Range(f func(name, value string)) { b.s.Range(f) }

// Err returns nil: every set of pairs is a label set, with a hash and
// labels, so nothing keeps a HashedBuilder from being looked up and
// appended. It is there for the SeriesLabels interface of package
// github.com/ingestkit/ingestkit/ingest, whose own decoder's series report
// the references of a 2.0 request that do not resolve.
//
// Pairs out of order are not an error: Prometheus's remote-write 1.0
// decoding (prompb's TimeSeries.ToLabels) sorts them too and never fails.
// What Prometheus's remote-write handler refuses, a set without a metric
// name, with a name or value that is not valid UTF-8
// ([labels.Labels.IsValid]) or with a repeated name
// ([labels.Labels.HasDuplicateLabelNames]), it refuses by validating the
// labels it built, after decoding: a 1.0 series is skipped while the
// request still succeeds, a 2.0 one makes the request's answer a 400 once
// the rest is written, and both count their samples in
// prometheus_api_remote_write_invalid_labels_samples_total. A caller of
// the appender validates likewise, for a series whose handle is not
// cached; the TSDB head itself refuses repeated names.
func (b *HashedBuilder) Err() error { return nil }

// Labels builds the label set of the pairs, sorted by name. Bytes given to
// [HashedBuilder.Add] are copied exactly once (or taken from the interner), so
// the result never aliases the caller's buffers. It does not reset the
// HashedBuilder.
//
// Labels makes one allocation in the default stringlabels build (the label
// data); see [HashedBuilder.SetInterner] and [HashedBuilder.SetSymbolTable]
// for the other builds.
func (b *HashedBuilder) Labels() labels.Labels { return b.s.Labels() }

// ScratchLabels returns the label set of the pairs, sorted by name, built
// in a buffer the HashedBuilder reuses: it may alias the bytes given to
// [HashedBuilder.Add] and is valid only until the next change to the
// HashedBuilder. It is for a lookup that keeps nothing, such as a TSDB's
// GetRef: package github.com/ingestkit/ingestkit/ingest's appenders probe
// the TSDB with it for a series that is not in their cache, and call
// [HashedBuilder.Labels] only for a series the TSDB does not hold.
//
// ScratchLabels makes no allocation once the buffer has grown, in the
// default and dedupelabels builds; in the slicelabels build neither.
func (b *HashedBuilder) ScratchLabels() labels.Labels { return b.s.Scratch() }

// Hashed builds the label set of the pairs, as [HashedBuilder.Labels] does,
// together with its hash, which it has computed already. It makes the
// allocations Labels makes.
func (b *HashedBuilder) Hashed() Hashed {
	h := b.s.Hash()
	return Hashed{ls: b.s.Labels(), xhash: h ^ emptyHash}
}
