package thanos

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/thanos-io/thanos/pkg/receive"

	"github.com/ingestkit/ingestkit/ingest/refcache"
)

// TenantStorage is a [receive.TenantStorage] whose appendables keep each
// tenant's series refs in a [refcache.Cache] across requests. Thanos's
// receive.Writer asks its appender for the ref of every series it writes
// (storage.GetRef, with the labels and their hash) before appending; through
// a TenantStorage that question is answered by the tenant's cache, confirmed
// by the labels, and reaches the TSDB head only for a series the cache does
// not hold. Appends then go to the head by ref, as they do without it, and
// the head's answers and errors pass through unchanged, so the TSDB ends up
// with the same data.
//
// Each tenant gets a cache of its own, bound (see [refcache.Cache]) to the
// appendable the wrapped storage returns for it: Thanos's MultiTSDB returns
// one *receive.ReadyStorage per tenant for the life of the tenant's TSDB, so
// a tenant pruned and loaded again is a new storage to the cache, which then
// starts empty rather than hand out the closed head's refs. An appendable
// whose dynamic type is not comparable cannot be told apart from another
// and is used without a cache.
//
// A new series is looked up twice, once for the Writer's GetRef and once for
// its first append (the labels the TSDB keeps are the copy the Writer makes
// after GetRef), so it counts two misses in [refcache.Stats].
//
// A TenantStorage is safe for concurrent use by multiple goroutines. It must
// not be copied after first use.
type TenantStorage struct {
	storage receive.TenantStorage // immutable
	caches  tenantCaches
}

// NewTenantStorage returns a TenantStorage over s, such as Thanos's
// *receive.MultiTSDB, with no tenant cached yet. Pass it where Thanos takes
// s: receive.NewWriter(logger, NewTenantStorage(multiTSDB), opts).
func NewTenantStorage(s receive.TenantStorage) *TenantStorage {
	ts := &TenantStorage{storage: s}
	ts.caches.init()
	return ts
}

// TenantAppendable returns the wrapped storage's appendable for tenant,
// with the tenant's cache behind its appenders, and the wrapped storage's
// errors unchanged.
func (s *TenantStorage) TenantAppendable(tenant string) (receive.Appendable, error) {
	a, err := s.storage.TenantAppendable(tenant)
	if err != nil || !comparable(a) {
		return a, err
	}
	tc := s.caches.tenant(tenant, a)
	return tc.bound(a).wrapped, nil
}

// Cache returns tenant's cache, for its [refcache.Cache.Stats], or nil if no
// request has reached the tenant since it was last purged (see
// [TenantStorage.Purge]).
func (s *TenantStorage) Cache(tenant string) *refcache.Cache { return s.caches.get(tenant) }

// Purge drops from every tenant's cache the series not looked up since
// keepFrom, in milliseconds since the Unix epoch (see
// [refcache.Cache.Purge]), and forgets the tenants left with none, so that
// the cache of a tenant that Thanos pruned no longer keeps its closed
// head's labels. It returns the number of series dropped. Call it
// periodically, for instance with keepFrom an hour or two ago, as the head
// keeps series that long.
//
// A request in progress for a tenant being forgotten keeps its cache until
// it ends; the tenant's next request starts a new, empty one.
func (s *TenantStorage) Purge(keepFrom int64) (purged int) { return s.caches.purge(keepFrom) }

// tenantCaches are the caches of the tenants, and for a [Writer] the pool
// of each tenant's write states. It is safe for concurrent use.
type tenantCaches struct {
	mu sync.RWMutex
	m  map[string]*tenantCache // guarded by mu
}

// tenantCache is one tenant's cache, and the write states of a Writer
// over it.
type tenantCache struct {
	cache *refcache.Cache
	pool  sync.Pool // of *writeState
	// apps are a TenantStorage's appenders of the tenant, committed or
	// rolled back and so free for the next transaction (storage.Appender's
	// contract: an appender is not used after either).
	apps sync.Pool // of *appender

	// db is the last appendable a Writer or a TenantStorage served, as a
	// storage.Appendable and as a TenantStorage's wrapper, made once per
	// appendable rather than once per request.
	db atomic.Pointer[appendableOf]
}

// appendableOf is a tenant's appendable as a storage.Appendable, and as
// the appendable a TenantStorage hands out for it.
type appendableOf struct {
	key     receive.Appendable
	db      storage.Appendable
	wrapped *appendable
}

// appendable returns a as a storage.Appendable, the same value while a is
// the same.
func (tc *tenantCache) appendable(a receive.Appendable) storage.Appendable { return tc.bound(a).db }

// bound returns a's appendableOf, made once per appendable rather than once
// per request.
func (tc *tenantCache) bound(a receive.Appendable) *appendableOf {
	if p := tc.db.Load(); p != nil && p.key == a {
		return p
	}
	// A pointer: the cache compares storages, and a struct holding an
	// interface costs reflection's allocations to compare safely.
	p := &appendableOf{key: a, db: &prometheusAppendable{a}}
	p.wrapped = &appendable{storage: a, cache: tc.cache, db: p.db, tc: tc}
	tc.db.Store(p)
	return p
}

// comparable reports whether a can be compared with ==, as the caches bind
// to storages by comparing them; a pointer, what Thanos's storages return,
// is decided without reflect.Value's allocations.
func comparable(a receive.Appendable) bool {
	if t := reflect.TypeOf(a); t == nil || t.Kind() == reflect.Pointer {
		return true
	}
	return reflect.ValueOf(a).Comparable()
}

func (c *tenantCaches) init() { c.m = make(map[string]*tenantCache) }

// get returns tenant's cache, nil if it has none.
func (c *tenantCaches) get(tenant string) *refcache.Cache {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if tc := c.m[tenant]; tc != nil {
		return tc.cache
	}
	return nil
}

// tenant returns tenant's cache, made on its first request, for its
// appendable a; an appendable whose dynamic type is not comparable cannot
// be told apart from another, and gets a cache of its own, empty.
func (c *tenantCaches) tenant(tenant string, a receive.Appendable) *tenantCache {
	if !comparable(a) {
		return &tenantCache{cache: refcache.New(refcache.Options{})}
	}
	c.mu.RLock()
	tc := c.m[tenant]
	c.mu.RUnlock()
	if tc != nil {
		return tc
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if tc = c.m[tenant]; tc == nil {
		tc = &tenantCache{cache: refcache.New(refcache.Options{})}
		c.m[tenant] = tc
	}
	return tc
}

// purge drops the series not looked up since keepFrom from every tenant's
// cache, forgets the tenants left with none, and returns the number of
// series dropped.
func (c *tenantCaches) purge(keepFrom int64) (purged int) {
	c.mu.RLock()
	caches := make(map[string]*tenantCache, len(c.m))
	for tenant, tc := range c.m {
		caches[tenant] = tc
	}
	c.mu.RUnlock()
	// Purged outside the lock: a purge walks the whole cache, and requests
	// for other tenants must not wait for it.
	for tenant, tc := range caches {
		purged += tc.cache.Purge(keepFrom)
		if tc.cache.Len() == 0 {
			c.mu.Lock()
			if c.m[tenant] == tc {
				delete(c.m, tenant)
			}
			c.mu.Unlock()
		}
	}
	return purged
}

// appendable is a tenant's appendable with the tenant's cache, and the
// appendable as the storage.Appendable the cache is bound to.
type appendable struct {
	storage receive.Appendable
	cache   *refcache.Cache
	db      storage.Appendable
	tc      *tenantCache // whose apps the appenders come from
}

// Appender opens a transaction on the tenant's storage, as Thanos's Writer
// does for each request, and returns an appender over it that resolves
// series through the tenant's cache. An error of the storage, such as
// receive.ErrNotReady, is returned as it is.
//
// The appender is reused once committed or rolled back, as
// storage.Appender's contract allows: it must not be used after either.
func (a *appendable) Appender(ctx context.Context) (storage.Appender, error) {
	now := time.Now().UnixMilli()
	app, _ := a.tc.apps.Get().(*appender)
	if app == nil {
		app = &appender{ik: refcache.NewAppender(ctx, a.db, a.cache, now)}
	} else {
		app.ik.Reset(ctx, a.db, now)
	}
	if n, ok := app.ik.Wrapped().(notOpened); ok {
		a.tc.apps.Put(app)
		return nil, n.err
	}
	app.Appender = app.ik.Wrapped()
	app.pool = &a.tc.apps
	return app, nil
}

// prometheusAppendable is a tenant's Thanos appendable as the
// storage.Appendable that refcache's appenders open their transactions on.
// The cache compares it, and so the Thanos appendable inside it, with the
// storage it serves: the same value for every request to one TSDB.
type prometheusAppendable struct {
	storage receive.Appendable
}

// Appender opens a transaction, or returns a notOpened holding the error
// the storage gave, which the appendable hands to the Writer.
func (p prometheusAppendable) Appender(ctx context.Context) storage.Appender {
	app, err := p.storage.Appender(ctx)
	if err != nil {
		return notOpened{err: err}
	}
	return app
}

// notOpened is the transaction a storage refused to open. Its methods are
// never called: the appendable returns err instead.
type notOpened struct {
	storage.Appender // nil
	err              error
}

// appender is a request's transaction as Thanos's Writer sees it: a
// storage.Appender with storage.GetRef, whose lookups and appends go
// through ingestkit's appender, and whose other methods pass through to
// the transaction.
type appender struct {
	storage.Appender // the transaction, ik's
	ik               *refcache.Appender

	// series is the series of the last GetRef, or of the last append of a
	// series GetRef had not found, and h its handle. A handle of ref 0 is
	// never appended through: its labels are those GetRef was given, which
	// in Thanos alias the request.
	series knownSeries
	h      refcache.Handle

	pool *sync.Pool // where Commit and Rollback put the appender back
}

// GetRef returns the ref and the TSDB's labels of the series of lset,
// whose hash is hash, from the tenant's cache or else from the head, or 0
// and lset if the TSDB does not hold it, as storage.GetRef does. It makes
// no allocation for a series in the cache or the head.
func (a *appender) GetRef(lset labels.Labels, hash uint64) (storage.SeriesRef, labels.Labels) {
	a.series = knownSeries{lset: lset, hash: hash}
	h, err := a.ik.Lookup(&a.series)
	if err != nil || h.Ref() == 0 {
		a.h = refcache.Handle{}
		return 0, lset
	}
	a.h = h
	return h.Ref(), h.Labels()
}

// handle returns the handle to append the series of ref and lset through:
// that of the last GetRef when ref is its ref, one looked up again with
// lset, the labels the TSDB will keep, when ref is 0, and nil (append
// without the cache) for a ref the appender did not hand out.
func (a *appender) handle(ref storage.SeriesRef, lset labels.Labels) *refcache.Handle {
	if ref != 0 {
		if ref == a.h.Ref() {
			return &a.h
		}
		return nil
	}
	// The Writer appends a series GetRef did not find with a copy of the
	// labels it gave GetRef, whose hash it computed: the hash is reused
	// only for those labels.
	hash := a.series.hash
	if a.series.lset.IsEmpty() || !labels.Equal(lset, a.series.lset) {
		hash = lset.Hash()
	}
	a.series = knownSeries{lset: lset, hash: hash}
	h, err := a.ik.Lookup(&a.series)
	if err != nil {
		return nil
	}
	a.h = h
	return &a.h
}

// Append appends a float sample as storage.Appender does, recording the
// series' ref in the cache.
func (a *appender) Append(ref storage.SeriesRef, lset labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	h := a.handle(ref, lset)
	if h == nil {
		return a.Appender.Append(ref, lset, t, v)
	}
	return refOf(h, a.ik.Append(h, t, v))
}

// AppendHistogram appends a histogram sample as storage.Appender does,
// recording the series' ref in the cache.
func (a *appender) AppendHistogram(ref storage.SeriesRef, lset labels.Labels, t int64, hist *histogram.Histogram, fh *histogram.FloatHistogram) (storage.SeriesRef, error) {
	h := a.handle(ref, lset)
	if h == nil {
		return a.Appender.AppendHistogram(ref, lset, t, hist, fh)
	}
	return refOf(h, a.ik.AppendHistogram(h, t, hist, fh))
}

// AppendExemplar appends an exemplar as storage.Appender does.
func (a *appender) AppendExemplar(ref storage.SeriesRef, lset labels.Labels, e exemplar.Exemplar) (storage.SeriesRef, error) {
	h := a.handle(ref, lset)
	if h == nil {
		return a.Appender.AppendExemplar(ref, lset, e)
	}
	return refOf(h, a.ik.AppendExemplar(h, e))
}

// refOf returns what the head's appender returns for an append through h
// that returned err: h's ref, or 0 on an error, on which Thanos's Writer
// relies (it drops the exemplars of a series whose last sample failed).
func refOf(h *refcache.Handle, err error) (storage.SeriesRef, error) {
	if err != nil {
		return 0, err
	}
	return h.Ref(), nil
}

// Commit commits the transaction and adds its lookups to the cache's
// counts. The appender must not be used after it.
func (a *appender) Commit() error {
	err := a.ik.Commit()
	a.release()
	return err
}

// Rollback rolls the transaction back and adds its lookups to the cache's
// counts. The appender must not be used after it.
func (a *appender) Rollback() error {
	err := a.ik.Rollback()
	a.release()
	return err
}

// release puts the appender back in its pool, holding neither the
// request's labels nor the head's nor the transaction.
func (a *appender) release() {
	a.Appender = nil
	a.series, a.h = knownSeries{}, refcache.Handle{}
	if p := a.pool; p != nil {
		a.pool = nil
		p.Put(a)
	}
}

// knownSeries is a series whose labels and hash the Writer already has, as
// refcache's appenders look series up. Its labels are returned as they are:
// for a series the TSDB does not hold they are the request's, and the
// appender appends with the Writer's copy instead (see appender.handle).
type knownSeries struct {
	lset labels.Labels
	hash uint64
}

func (s *knownSeries) Err() error                  { return nil }
func (s *knownSeries) Equal(ls labels.Labels) bool { return labels.Equal(s.lset, ls) }
func (s *knownSeries) Hash() uint64                { return s.hash }
func (s *knownSeries) Labels() labels.Labels       { return s.lset }
