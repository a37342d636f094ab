package refcache

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"
)

// SeriesLabels is a series as an appender needs it: the hash of its labels
// (Prometheus's labels.Labels.Hash, computed once), a comparison with a
// label set that builds nothing, its labels built on demand, and whether it
// can be appended at all. the Series of package ingest/decode implements it. An appender calls a
// SeriesLabels from the goroutine that called it, during the call only, so
// an implementation need not be safe for concurrent use.
//
// A SeriesLabels may also have a method ScratchLabels() labels.Labels that
// returns its labels built in a buffer it reuses, valid until it changes.
// For a series not in the cache, an appender then asks the TSDB for it
// with those (storage.GetRef) and calls Labels only if the TSDB does not
// hold it, so that a series the TSDB holds, after a restart say, costs no
// allocation to resolve. the Series of package ingest/decode and the HashedBuilder of package
// github.com/ingestkit/ingestkit/labels have it.
//
// An appender need not call Hash: a series found in the cache as the guess
// of the series before it (see [Cache]) is confirmed by Equal alone, and
// its handle's [Handle.Hash] is the cached entry's, the hash of the same
// labels.
type SeriesLabels interface {
	// Err returns why the series cannot be appended (its labels could not
	// be decoded), or nil. Lookup refuses a series with an error, whatever
	// its other methods answer.
	Err() error
	Equaler
	// Hash returns labels.Labels.Hash of the series' labels. It may not
	// be called for a series in the cache.
	Hash() uint64
	// Labels returns the series' labels in memory of their own; it is
	// called only for a series the TSDB does not hold.
	Labels() labels.Labels
}

// scratchLabeler is the optional method of a SeriesLabels: its labels
// built in a reused buffer, for a lookup that keeps nothing.
type scratchLabeler interface {
	ScratchLabels() labels.Labels
}

// Handle is a series resolved by an appender: the ref and labels to append
// with. It is a small value meant to live on the caller's stack for the
// samples of one series; appending through it updates it.
//
// A Handle is not safe for concurrent use.
type Handle struct {
	hash  uint64
	ref   storage.SeriesRef
	lset  labels.Labels
	entry *cacheEntry // the cache's entry for the series, with ref; nil if none
	batch bool        // resolved by LookupBatch
}

// Ref returns the series ref, zero for a series not yet appended.
func (h Handle) Ref() storage.SeriesRef { return h.ref }

// Labels returns the labels the series is appended with: the TSDB's own for a
// series it holds.
func (h Handle) Labels() labels.Labels { return h.lset }

// Hash returns the hash of the series' labels.
func (h Handle) Hash() uint64 { return h.hash }

// Cached reports whether the series is in the [Cache]: found there by the
// lookup that made h, or stored since by an append through h. A caller
// that validates the labels of series it has not appended to before (as
// Prometheus's write handler validates every series) can skip a series
// whose handle is cached right after the lookup: it passed when it was
// first appended, and the cache confirmed every label.
func (h Handle) Cached() bool { return h.entry != nil }

// AppenderStats counts how an appender resolved series in one transaction:
// a plain value, a copy not updated afterwards, safe for concurrent use.
// The [Cache] sums the transactions' counts in [Stats].
type AppenderStats struct {
	CacheHits   int // found in the cache
	Guessed     int // of the hits, found as the guess of the series before (see Cache)
	RefLookups  int // found by asking the appender (storage.GetRef)
	NewSeries   int // not held by the TSDB: labels built and copied
	CacheStores int // entries added or refreshed (new series, stale refs)
}

// resolver is the part that [Appender] and [AppenderV2] share.
type resolver struct {
	cache *Cache
	// tab is the cache's table for the storage of the transaction, taken
	// at reset: the appender never sees the refs of another storage.
	tab    *cacheTable
	getRef storage.GetRef // nil if the appender does not offer it
	now    int64
	stats  AppenderStats
	// folded is the part of stats already added to the cache's counts
	// (fold).
	folded AppenderStats
	// prev is the cache entry of the series resolved last, whose guess
	// of the next series the next lookup tries first.
	prev *cacheEntry
	// guessing is whether the series resolved last was found as the
	// guess of the one before it, or had none before it (or none was
	// resolved yet): the next lookup then tries the guess first, by its
	// labels, without hashing the series, and a batch whose next guess
	// fails looks that series up alone, so that the guesses after it are
	// tried, rather than with the others.
	guessing bool
	touch    uint64 // the sum of a batched probe's reads (lookupChunk), kept so that they are made
	// order and keys are appendOrder's buffers, kept across transactions.
	order []int
	keys  []uint64
}

// bind takes the cache's table for db, before a transaction is opened on
// it (bind panics on a storage it cannot compare).
func (r *resolver) bind(db any) { r.tab = r.cache.bind(db) }

// reset starts a transaction, app.
func (r *resolver) reset(app any, now int64) {
	r.fold()
	r.getRef, _ = app.(storage.GetRef)
	r.now = now
	r.stats, r.folded = AppenderStats{}, AppenderStats{}
	r.prev = nil
	r.guessing = true
}

// fold adds the counts of the transaction not yet added to the cache's
// (Stats), at its end: a handful of atomic additions per transaction
// rather than one per lookup (BenchmarkAppend, BenchmarkLookup).
func (r *resolver) fold() {
	c, d, f := r.cache, &r.stats, &r.folded
	if n := d.CacheHits - f.CacheHits; n != 0 {
		c.hits.Add(int64(n))
	}
	if n := d.Guessed - f.Guessed; n != 0 {
		c.guessed.Add(int64(n))
	}
	if n := d.RefLookups + d.NewSeries - f.RefLookups - f.NewSeries; n != 0 {
		c.misses.Add(int64(n))
	}
	if n := d.CacheStores - f.CacheStores; n != 0 {
		c.stores.Add(int64(n))
	}
	r.folded = r.stats
}

// follow makes e the entry resolved last, and prev's guess.
func (r *resolver) follow(e *cacheEntry) {
	if r.prev != nil {
		r.prev.follows(e)
	}
	r.prev = e
}

// lookup finds s in the cache, else asks the appender by hash with labels
// built in a reused buffer, and builds s's labels (the only copy) only for a
// series the TSDB does not hold. It refuses a series with an error.
//
// While the guesses hold (r.guessing), lookup tries the guess first, by
// its labels, and takes the hash from the entry: s is hashed only when the
// guess fails. Otherwise it finds s by its hash in the index, and the guess
// held if the entry found is prev's guess, which takes the lookups after it
// back to trying guesses first; a guess is not tried before the index then,
// as reading the guessed entry would be one more cache miss per series of
// a request in an order of its own (BenchmarkAppend, order=shuffled).
func (r *resolver) lookup(s SeriesLabels) (Handle, error) {
	if err := s.Err(); err != nil {
		return Handle{}, invalidSeries(err)
	}
	var h Handle
	r.resolve(s, &h)
	return h, nil
}

// resolve makes *h the handle of s, which has no error, as lookup does,
// and reports whether s was found by the guess of the series before it
// (see lookup).
func (r *resolver) resolve(s SeriesLabels, h *Handle) (guessed bool) {
	if r.guessing && r.prev != nil {
		if g, ref := r.prev.guessOf(s); g != nil {
			r.hit(h, g.hash, ref, g, true)
			return true
		}
	}
	hash := s.Hash()
	// A purge may have dropped the entry found since: its ref is then 0,
	// and the series is resolved as one not in the cache.
	if e := r.tab.stripe(hash).slots.Load().find(hash, s); e != nil {
		if ref := e.ref.Load(); ref != 0 {
			guessed = r.prev != nil && r.prev.follows(e)
			r.hit(h, hash, ref, e, guessed)
			return guessed
		}
	}
	r.guessing = false
	*h = r.miss(s, hash)
	return false
}

func invalidSeries(err error) error { return fmt.Errorf("%w: %w", ErrInvalidSeries, err) }

// miss resolves s, of the given hash, which is not in the cache: by
// storage.GetRef with labels built in a reused buffer if the appender offers
// it, else, or if the TSDB does not hold s, by building s's labels.
func (r *resolver) miss(s SeriesLabels, hash uint64) Handle {
	var built labels.Labels // s.Labels(), if it had to be called
	if r.getRef != nil {
		var probe labels.Labels
		if sl, ok := s.(scratchLabeler); ok {
			probe = sl.ScratchLabels()
		} else {
			built = s.Labels()
			probe = built
		}
		if ref, lset := r.getRef.GetRef(probe, hash); ref != 0 {
			r.stats.RefLookups++
			return Handle{hash: hash, ref: ref, lset: lset}
		}
	}
	if built.IsEmpty() {
		built = s.Labels()
	}
	r.stats.NewSeries++
	return Handle{hash: hash, lset: built}
}

// appended records the ref an append returned: a series new to the cache,
// or whose ref changed because the head had dropped it, is stored.
func (r *resolver) appended(h *Handle, ref storage.SeriesRef) {
	if ref == 0 {
		return
	}
	if h.entry == nil || ref != h.ref {
		h.entry = r.tab.store(h.hash, ref, h.lset, r.now)
		r.stats.CacheStores++
		if !h.batch {
			// A batch's lookups are over before its appends: the series
			// resolved last is not the one before h's.
			r.follow(h.entry)
		}
	}
	h.ref = ref
}

// AppenderV2 appends to a [storage.AppenderV2] by series ref kept in a
// [Cache] across requests, so that a series the TSDB already holds is found
// by its precomputed hash, confirmed against the request's pairs and
// appended without its labels being hashed again, copied or looked up in the
// head. A series not in the cache is looked up with [storage.GetRef] when
// the appender offers it (Prometheus's head does), without building labels in
// new memory; only a series the TSDB does not hold gets its labels built,
// and is appended with ref 0, so that the head validates and creates it as
// it always does (empty values dropped, repeated names rejected).
//
// Samples, histograms, start timestamps, metadata and exemplars pass through
// to the wrapped appender unchanged; its errors, which are Prometheus's own
// (storage.ErrOutOfOrderSample, storage.ErrDuplicateSampleForTimestamp,
// *storage.AppendPartialError, ...), are returned unchanged.
//
// A caller that holds several series at once resolves them with
// [AppenderV2.LookupBatch], whose cache misses overlap, rather than one
// [AppenderV2.Lookup] after the other.
//
// An AppenderV2 is for one transaction at a time and is not safe for
// concurrent use; the Cache behind it is shared. Reuse one with
// [AppenderV2.Reset].
type AppenderV2 struct {
	resolver
	app   storage.AppenderV2
	exApp exemplarAppenderV2 // nil if app does not implement it
}

// exemplarAppenderV2 is the method of storage.ExemplarAppenderV2, which
// Prometheus has from v0.316.0 on: named by its method set, so that the
// package builds against the releases before it, whose appenders take
// exemplars only in storage.AppendV2Options.Exemplars.
type exemplarAppenderV2 interface {
	AppendExemplars(ref storage.SeriesRef, ls labels.Labels, es []exemplar.Exemplar) (storage.SeriesRef, error)
}

// NewAppenderV2 opens a transaction on db (db.AppenderV2(ctx)) and returns an
// AppenderV2 over it that keeps refs in cache. now is the time the series
// it resolves are marked seen at in the cache, in milliseconds since the
// Unix epoch, as Prometheus timestamps and [Cache.Purge]: the time the
// request arrived, time.Now().UnixMilli(), not the samples' timestamps.
//
// The appender opens the transaction itself so that the cache knows which
// storage its refs are of: a cache that served another storage is emptied
// and serves db from then on (see [Cache]). Pass the same db value for
// every transaction on one TSDB, such as the *tsdb.DB or the tenant's
// storage object; db's dynamic type must be comparable, or NewAppenderV2
// panics.
func NewAppenderV2(ctx context.Context, db storage.AppendableV2, cache *Cache, now int64) *AppenderV2 {
	a := &AppenderV2{resolver: resolver{cache: cache}}
	a.Reset(ctx, db, now)
	return a
}

// Reset opens a new transaction on db (db.AppenderV2(ctx)) and makes the
// AppenderV2 append to it, marking series seen at now (milliseconds since
// the Unix epoch, as for [NewAppenderV2]); the cache is bound to db as by
// NewAppenderV2. The previous transaction must have been committed or
// rolled back.
//
// Reset makes no allocation of its own for the storage the cache serves.
func (a *AppenderV2) Reset(ctx context.Context, db storage.AppendableV2, now int64) {
	a.resolver.bind(db)
	app := db.AppenderV2(ctx)
	a.app = app
	a.exApp, _ = app.(exemplarAppenderV2)
	a.resolver.reset(app, now)
}

// Wrapped returns the transaction the AppenderV2 appends to, opened by the
// last reset.
func (a *AppenderV2) Wrapped() storage.AppenderV2 { return a.app }

// Lookup resolves s to the ref and labels to append with. It returns an
// error wrapping [ErrInvalidSeries] and s.Err(), and a zero Handle that
// must not be appended to, if s has an error; a caller skips such a series
// and answers 400 once the rest is written.
//
// Lookup makes no allocation for a series in the cache, nor for one that
// the wrapped appender finds by storage.GetRef when s can build scratch
// labels (the Series of package ingest/decode can); for a new series it builds s's labels once.
func (a *AppenderV2) Lookup(s SeriesLabels) (Handle, error) { return a.lookup(s) }

// Append appends a float (hist and fh nil), histogram or float histogram
// sample to the series of h, as [storage.AppenderV2.Append] does, and
// records the series' ref in the cache when it is new there or changed.
//
// Append makes no allocation of its own.
func (a *AppenderV2) Append(h *Handle, st, t int64, v float64, hist *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AppendV2Options) error {
	ref, err := a.app.Append(h.ref, h.lset, st, t, v, hist, fh, opts)
	a.appended(h, ref)
	return err
}

// AppendExemplars appends exemplars, sorted by timestamp, to the series of
// h through the wrapped appender's AppendExemplars method, that of
// storage.ExemplarAppenderV2 (Prometheus v0.316.0 and later). It returns
// [ErrExemplarsUnsupported] if the wrapped appender has no such method, as
// the head of earlier releases has not: exemplars then go to the storage in
// [storage.AppendV2Options.Exemplars] of an [AppenderV2.Append].
func (a *AppenderV2) AppendExemplars(h *Handle, es []exemplar.Exemplar) error {
	if a.exApp == nil {
		return ErrExemplarsUnsupported
	}
	ref, err := a.exApp.AppendExemplars(h.ref, h.lset, es)
	a.appended(h, ref)
	return err
}

// Commit commits the wrapped appender's transaction, and adds its counts
// to the cache's ([Stats]).
func (a *AppenderV2) Commit() error {
	a.fold()
	return a.app.Commit()
}

// Rollback rolls the wrapped appender's transaction back, and adds its
// counts to the cache's ([Stats]).
func (a *AppenderV2) Rollback() error {
	a.fold()
	return a.app.Rollback()
}

// Stats returns how the series since the last reset were resolved.
func (a *AppenderV2) Stats() AppenderStats { return a.stats }

// Appender is [AppenderV2] for [storage.Appender], Prometheus's version 1
// appender interface, which Thanos and Cortex receivers still use: the same
// lookup by cached ref, the same copy only for new series, the same binding
// of the cache to one storage.
//
// An Appender is for one transaction at a time and is not safe for
// concurrent use; the Cache behind it is shared.
type Appender struct {
	resolver
	app storage.Appender
}

// NewAppender opens a transaction on db (db.Appender(ctx)) and returns an
// Appender over it that keeps refs in cache, marking series seen at now,
// in milliseconds since the Unix epoch, and bound to db, as by
// [NewAppenderV2]: a cache that served another storage is emptied. Pass the
// same db value for every transaction on one TSDB; its dynamic type must be
// comparable, or NewAppender panics.
func NewAppender(ctx context.Context, db storage.Appendable, cache *Cache, now int64) *Appender {
	a := &Appender{resolver: resolver{cache: cache}}
	a.Reset(ctx, db, now)
	return a
}

// Reset opens a new transaction on db (db.Appender(ctx)) and makes the
// Appender append to it, marking series seen at now (milliseconds since
// the Unix epoch), as [AppenderV2.Reset] does.
func (a *Appender) Reset(ctx context.Context, db storage.Appendable, now int64) {
	a.resolver.bind(db)
	app := db.Appender(ctx)
	a.app = app
	a.resolver.reset(app, now)
}

// Wrapped returns the transaction the Appender appends to, opened by the
// last reset.
func (a *Appender) Wrapped() storage.Appender { return a.app }

// Lookup resolves s to the ref and labels to append with; see
// [AppenderV2.Lookup].
func (a *Appender) Lookup(s SeriesLabels) (Handle, error) { return a.lookup(s) }

// Append appends a float sample, as [storage.Appender.Append] does.
func (a *Appender) Append(h *Handle, t int64, v float64) error {
	ref, err := a.app.Append(h.ref, h.lset, t, v)
	a.appended(h, ref)
	return err
}

// AppendHistogram appends a histogram or float histogram sample, as
// [storage.HistogramAppender.AppendHistogram] does.
func (a *Appender) AppendHistogram(h *Handle, t int64, hist *histogram.Histogram, fh *histogram.FloatHistogram) error {
	ref, err := a.app.AppendHistogram(h.ref, h.lset, t, hist, fh)
	a.appended(h, ref)
	return err
}

// AppendSTZeroSample appends the zero sample of a start timestamp, as
// [storage.StartTimestampAppender.AppendSTZeroSample] does.
func (a *Appender) AppendSTZeroSample(h *Handle, t, st int64) error {
	ref, err := a.app.AppendSTZeroSample(h.ref, h.lset, t, st)
	a.appended(h, ref)
	return err
}

// AppendHistogramSTZeroSample appends the zero sample of a histogram's
// start timestamp, as
// [storage.HistogramAppender.AppendHistogramSTZeroSample] does; it comes
// before the histogram's [Appender.AppendHistogram].
func (a *Appender) AppendHistogramSTZeroSample(h *Handle, t, st int64, hist *histogram.Histogram, fh *histogram.FloatHistogram) error {
	ref, err := a.app.AppendHistogramSTZeroSample(h.ref, h.lset, t, st, hist, fh)
	a.appended(h, ref)
	return err
}

// SetOptions sets the options of the appends that follow, as
// [storage.Appender.SetOptions] does.
func (a *Appender) SetOptions(opts *storage.AppendOptions) { a.app.SetOptions(opts) }

// AppendExemplar appends one exemplar, as
// [storage.ExemplarAppender.AppendExemplar] does.
func (a *Appender) AppendExemplar(h *Handle, e exemplar.Exemplar) error {
	ref, err := a.app.AppendExemplar(h.ref, h.lset, e)
	a.appended(h, ref)
	return err
}

// UpdateMetadata updates the series' metadata, as
// [storage.MetadataUpdater.UpdateMetadata] does.
func (a *Appender) UpdateMetadata(h *Handle, m metadata.Metadata) error {
	ref, err := a.app.UpdateMetadata(h.ref, h.lset, m)
	a.appended(h, ref)
	return err
}

// Commit commits the wrapped appender's transaction, and adds its counts
// to the cache's ([Stats]).
func (a *Appender) Commit() error {
	a.fold()
	return a.app.Commit()
}

// Rollback rolls the wrapped appender's transaction back, and adds its
// counts to the cache's ([Stats]).
func (a *Appender) Rollback() error {
	a.fold()
	return a.app.Rollback()
}

// Stats returns how the series since the last reset were resolved.
func (a *Appender) Stats() AppenderStats { return a.stats }
