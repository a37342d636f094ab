package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/exemplars"
	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/ingest/decode"
)

// Errors of the tenant layer. Each is answered with the status its doc
// gives.
var (
	// errTenantsClosed is returned for a request that comes after the
	// tenants were closed; answered 503.
	errTenantsClosed = errors.New("receiver: tenants are closed")
	// errTooManyTenants is returned for the first request of a tenant
	// while tenantOptions.MaxTenants tenants are open; answered 503, as
	// Mimir answers its ingesters' -ingester.instance-limits.max-tenants,
	// so that the sender retries (an idle tenant may be closed meanwhile).
	errTooManyTenants = errors.New("receiver: too many tenants")
	// errSingleTenantDir is returned at start for a -data-dir that holds
	// the TSDB of a single-tenant receiver (a wal directory of its own)
	// rather than one directory per tenant.
	errSingleTenantDir = errors.New("receiver: the data directory holds a single TSDB, not one per tenant")
)

// tenantOptions are the settings of a [tenants] router.
type tenantOptions struct {
	// Dir holds one TSDB per tenant, in Dir/<tenant>. Required.
	Dir string
	// Header is the request header that names the tenant; empty means
	// ingest.DefaultTenantHeader.
	Header string
	// Default is the tenant of a request without the header (or with an
	// empty one); empty means ingest.DefaultTenant.
	Default string
	// Receiver are the options of each tenant's write handler; the router sets
	// Tenant (the tenant's ID, which the ring hashes series with) and,
	// with RingExemplars, Exemplars.
	Receiver ingest.Options
	// MaxExemplars is the size of each tenant's TSDB exemplar storage (0:
	// off).
	MaxExemplars int64
	// MaxExemplarsTotal, if positive, bounds the slots of the tenants'
	// exemplar storages (TSDB or ring) together: growExemplars grows one
	// only while the open tenants hold fewer.
	MaxExemplarsTotal int64
	// GrowExemplars opens each tenant's exemplar storage (the TSDB's, or
	// with RingExemplars its ring) small and grows it up to MaxExemplars
	// (RingExemplars) as exemplars arrive, when accountLoop runs
	// (exemplar_growth.go); otherwise it is MaxExemplars (RingExemplars)
	// from the start, as in Prometheus.
	GrowExemplars bool
	// MetadataWAL turns on each tenant TSDB's metadata WAL records (the
	// storage half of Prometheus's metadata-wal-records feature).
	MetadataWAL bool
	// TSDB are the -tsdb.* settings of each tenant's TSDB (retention, the
	// out-of-order window); the zero value means Prometheus's defaults.
	TSDB tsdbConfig
	// RingExemplars, if positive, gives each tenant an exemplars.Ring of
	// that size (with GrowExemplars, of up to that size), in memory only:
	// a tenant closed when idle loses it. It excludes MaxExemplars: a
	// tenant's exemplars go to one store.
	RingExemplars int64
	// Registerer, if not nil, takes each tenant TSDB's metrics and its
	// exemplar ring's, labelled tenant="<id>", and loses them when the
	// tenant is closed.
	Registerer prometheus.Registerer
	// MaxTenants, if positive, bounds the open tenants: a new tenant's
	// request beyond it is refused (errTooManyTenants), since every
	// tenant costs a TSDB, its directory, and its exemplar storage.
	MaxTenants int
	// Allowed, if not nil, names the tenants allowed to write: another
	// tenant's request is refused (errNotAllowed, a 403) before its TSDB
	// is opened or its directory made, and openExisting leaves its
	// directory alone.
	Allowed *allowlist
	// Logger receives a line when a tenant is opened or closed, and for
	// each request refused before it reached a tenant. Nil means none.
	Logger *slog.Logger
}

// tenants is an http.Handler that routes each remote-write request to the
// write handler of its tenant, named by a header, as Thanos receive's
// multi-TSDB does: an ingest.TenantWriteHandler over one tsdb.DB per tenant
// in Dir/<tenant> (its TenantStorage is storage), each tenant with its own
// ingest.WriteHandler (and so its own ref cache, active-series tracker,
// interner and exemplar storage). A tenant is opened on its first request
// or, for the tenants found in Dir, by openExisting at start. closeIdle
// closes tenants that received nothing for a while, as Thanos prunes them:
// the TSDB is closed and its write handler forgotten, and the next request
// opens it again (a WAL replay) with a write handler that starts empty, so
// that no ref of a closed head, nor of a head whose directory was removed
// while it was closed and numbers its series from 1 again, ever reaches a
// new one.
//
// Tenant lifecycle: a tenant is in the map from its first request until
// it is closed. Requests hold a reference (inflight) from acquire to
// release; closeIdle only closes a tenant with none, and marks it closing
// under the write lock, which acquire's read lock excludes, so that no
// request ever uses a closed TSDB. A request for a closing tenant waits
// for the close to finish and opens the tenant anew: the old and the new
// TSDB of a tenant are never open at once. Concurrent first requests of a
// tenant open it once: the first opens it, the others wait on ready.
//
// A tenants is safe for concurrent use by multiple goroutines.
type tenants struct {
	opts   tenantOptions
	logger *slog.Logger

	mu     sync.RWMutex
	m      map[string]*tenant // guarded by mu
	closed bool               // guarded by mu

	// h routes the requests to the tenants' write handlers, asking
	// storage for their TSDBs.
	h          *ingest.TenantWriteHandler
	opened     atomic.Int64 // tenant TSDBs opened, successfully or not
	idleClosed atomic.Int64 // tenants closed by closeIdle
}

// tenant is one tenant's TSDB, and its exemplar ring if it has one.
type tenant struct {
	id    string
	ready chan struct{} // closed once open returned; err, db, r and reg are set before
	err   error
	db    *tsdb.DB
	reg   *tenantRegisterer
	// exRing is the tenant's exemplar ring, with tenantOptions.RingExemplars.
	exRing *exemplars.Ring
	// exSize is the size of the exemplar storage (exRing, else the
	// TSDB's), and exAt the
	// exemplars its write handler had written when it last grew
	// (exemplar_growth.go): set by open, then only by growExemplars.
	exSize, exAt int64
	// labels is what countHeld last counted of the head's label bytes.
	labels labelCount

	inflight atomic.Int64 // references held; taken under tenants.mu's read lock
	lastUsed atomic.Int64 // Unix nanoseconds of the last release, or of the open

	closing chan struct{} // guarded by tenants.mu; set by a closer, closed once the tenant left the map
}

// newTenants returns a router over opts.Dir, which it creates if needed.
// It opens no tenant: see openExisting.
func newTenants(opts tenantOptions) (*tenants, error) {
	if opts.Dir == "" {
		panic("receiver: tenants without a directory")
	}
	if opts.Header == "" {
		opts.Header = ingest.DefaultTenantHeader
	}
	if opts.Default == "" {
		opts.Default = ingest.DefaultTenant
	}
	if err := ingest.ValidTenantID(opts.Default); err != nil {
		return nil, fmt.Errorf("default tenant: %w", err)
	}
	if opts.RingExemplars > 0 && opts.MaxExemplars > 0 {
		panic("receiver: tenants with exemplars in both a ring and the TSDB")
	}
	if err := os.MkdirAll(opts.Dir, 0o777); err != nil {
		return nil, err
	}
	if single, err := isSingleTenantDir(opts.Dir); err != nil {
		return nil, err
	} else if single {
		return nil, fmt.Errorf("%w: move the contents of %s into %s", errSingleTenantDir, opts.Dir, filepath.Join(opts.Dir, opts.Default))
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tt := &tenants{opts: opts, logger: logger, m: map[string]*tenant{}}
	tt.h = ingest.NewTenantWriteHandler(logger, tt.storage, ingest.TenantOptions{
		Header: opts.Header, DefaultTenant: opts.Default, Options: tt.optionsOf,
	})
	return tt, nil
}

// storage is the tenants' ingest.TenantStorage: the TSDB of tenant, opened
// if need be, held until done.
func (tt *tenants) storage(_ context.Context, id string) (storage.Appendable, func(), error) {
	if !tt.opts.Allowed.allowed(id) {
		return nil, nil, fmt.Errorf("tenant %q: %w", id, errNotAllowed)
	}
	tn, err := tt.acquire(id)
	if err != nil {
		if errors.Is(err, errTenantsClosed) || errors.Is(err, errTooManyTenants) {
			err = fmt.Errorf("%w: %w", ingest.ErrTenantUnavailable, err)
		}
		return nil, nil, err
	}
	return tn.db, func() { tt.release(tn) }, nil
}

// optionsOf returns the options of the WriteHandler of tenant id, which
// the ingest.TenantWriteHandler asks for at the tenant's first request
// since it was opened: the request holds the open tenant, whose exemplar
// ring, if any, the options name.
func (tt *tenants) optionsOf(id string) ingest.Options {
	opts := tt.opts.Receiver
	opts.Tenant = id
	tt.mu.RLock()
	tn := tt.m[id]
	tt.mu.RUnlock()
	if tn != nil && tn.exRing != nil {
		opts.Exemplars = ingest.RingExemplars{Ring: tn.exRing}
	}
	return opts
}

// isSingleTenantDir reports whether dir is itself a TSDB directory, as
// -data-dir was before tenants: it has a wal directory that holds WAL
// segments rather than a tenant's own wal directory (a tenant named "wal"
// holds dir/wal/wal).
func isSingleTenantDir(dir string) (bool, error) {
	fi, err := os.Stat(filepath.Join(dir, "wal"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil || !fi.IsDir() {
		return false, err
	}
	if _, err := os.Stat(filepath.Join(dir, "wal", "wal")); err == nil {
		return false, nil
	}
	return true, nil
}

// openExisting opens the default tenant (openDefault), then the tenants
// whose directories Dir holds (existing, openAll), as Thanos opens its
// tenants' TSDBs at start: the TSDBs replay their WALs, and /metrics and
// /api/v1/series_count show them before any request. Server mode runs
// openAll in the background instead, so that readiness waits only for the
// default tenant.
func (tt *tenants) openExisting() error {
	if err := tt.openDefault(); err != nil {
		return err
	}
	ids, err := tt.existing()
	if err != nil {
		return err
	}
	tt.openAll(ids)
	return nil
}

// openDefault opens the default tenant, unless the allowlist leaves it
// out.
func (tt *tenants) openDefault() error {
	if !tt.opts.Allowed.allowed(tt.opts.Default) {
		return nil
	}
	tn, err := tt.acquire(tt.opts.Default)
	if err != nil {
		return err
	}
	tt.release(tn)
	return nil
}

// existing returns the tenants whose directories Dir holds, but for the
// default tenant, most recently written first (by the time of their wal
// directory, else their own). A directory whose name is not a valid tenant
// ID, or of a tenant not allowed, is left alone.
func (tt *tenants) existing() ([]string, error) {
	ents, err := os.ReadDir(tt.opts.Dir)
	if err != nil {
		return nil, err
	}
	type dir struct {
		id      string
		written time.Time
	}
	var dirs []dir
	for _, e := range ents {
		id := e.Name()
		if !e.IsDir() || id == tt.opts.Default || ingest.ValidTenantID(id) != nil || !tt.opts.Allowed.allowed(id) {
			continue
		}
		d := dir{id: id}
		for _, p := range []string{filepath.Join(tt.opts.Dir, id, "wal"), filepath.Join(tt.opts.Dir, id)} {
			if fi, err := os.Stat(p); err == nil {
				d.written = fi.ModTime()
				break
			}
		}
		dirs = append(dirs, d)
	}
	slices.SortStableFunc(dirs, func(a, b dir) int { return b.written.Compare(a.written) })
	ids := make([]string, len(dirs))
	for i, d := range dirs {
		ids[i] = d.id
	}
	return ids, nil
}

// openAll opens the tenants ids, in order, until MaxTenants are open: the
// others open on their first request, as any tenant does, once idle
// tenants have made room. A tenant that fails to open is logged and
// skipped: its requests are answered 500 until it opens. What is on disk
// never stops the receiver from serving the other tenants.
func (tt *tenants) openAll(ids []string) (opened int) {
	for i, id := range ids {
		tn, err := tt.acquire(id)
		switch {
		case errors.Is(err, errTooManyTenants):
			tt.logger.Warn("tenant directories left closed at start, -max-tenants being open; each opens on its first request once idle tenants are closed", "left", len(ids)-i, "max_tenants", tt.opts.MaxTenants)
			return opened
		case errors.Is(err, errTenantsClosed):
			return opened
		case err != nil:
			tt.logger.Error("opening a tenant found in the data directory; its requests are answered 500 until it opens", "tenant", id, "err", err)
			continue
		}
		tt.release(tn)
		opened++
	}
	return opened
}

// ServeHTTP routes a remote-write request to its tenant's write handler
// (ingest.TenantWriteHandler). A request whose tenant header is not a
// valid tenant ID is answered 400 before anything is read or opened; one
// whose tenant fails to open, 500; a new tenant's beyond MaxTenants, or one
// after close, 503.
func (tt *tenants) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	tt.h.ServeHTTP(w, req)
}

// handler returns the write handler of tenant id, nil if it has none
// (no request since it was opened, or forgotten by a purge since).
func (tt *tenants) handler(id string) *ingest.WriteHandler { return tt.h.Handler(id) }

// acquire returns the open tenant id, opening it if needed, with a
// reference that the caller gives back with release. id must be valid.
func (tt *tenants) acquire(id string) (*tenant, error) {
	for {
		tt.mu.RLock()
		if tt.closed {
			tt.mu.RUnlock()
			return nil, errTenantsClosed
		}
		tn := tt.m[id]
		if tn != nil && tn.closing == nil {
			tn.inflight.Add(1)
			tt.mu.RUnlock()
			<-tn.ready
			if tn.err != nil {
				tt.release(tn)
				return nil, tn.err
			}
			return tn, nil
		}
		var closing chan struct{}
		if tn != nil {
			closing = tn.closing
		}
		tt.mu.RUnlock()
		if closing != nil {
			<-closing // then open it anew
			continue
		}

		tt.mu.Lock()
		if tt.closed || tt.m[id] != nil {
			tt.mu.Unlock()
			continue // closed, or another request made it first
		}
		if limit := tt.opts.MaxTenants; limit > 0 && len(tt.m) >= limit {
			tt.mu.Unlock()
			return nil, fmt.Errorf("%w: %d open, the limit (-max-tenants)", errTooManyTenants, limit)
		}
		tn = &tenant{id: id, ready: make(chan struct{})}
		tn.inflight.Add(1)
		tt.m[id] = tn
		tt.mu.Unlock()

		tn.err = tt.open(tn)
		tn.lastUsed.Store(time.Now().UnixNano())
		close(tn.ready)
		if tn.err != nil {
			tt.mu.Lock()
			delete(tt.m, id) // the next request tries again
			tt.mu.Unlock()
			tt.release(tn)
			return nil, tn.err
		}
		return tn, nil
	}
}

// release gives back a reference of acquire.
func (tt *tenants) release(tn *tenant) {
	tn.lastUsed.Store(time.Now().UnixNano())
	tn.inflight.Add(-1)
}

// open opens tn's TSDB, and its exemplar ring with RingExemplars. A panic of tsdb.Open (as a
// registry panics on a metric registered twice) is returned as an error,
// so that the requests waiting for the tenant are answered.
func (tt *tenants) open(tn *tenant) (err error) {
	tt.opened.Add(1)
	dir := filepath.Join(tt.opts.Dir, tn.id)
	tn.reg = newTenantRegisterer(tt.opts.Registerer, tn.id)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("opening tenant %q: panic: %v", tn.id, p)
		}
		if err != nil {
			if tn.db != nil {
				err = errors.Join(err, tn.db.Close())
			}
			tn.reg.unregisterAll()
		}
	}()
	var reg prometheus.Registerer // not a nil *tenantRegisterer
	if tn.reg != nil {
		reg = tn.reg
	}
	tsdbOpts := tsdb.DefaultOptions()
	tt.opts.TSDB.options(tsdbOpts)
	tsdbOpts.EnableMetadataWALRecords = tt.opts.MetadataWAL
	tn.exSize = tt.opts.MaxExemplars
	if tt.opts.GrowExemplars {
		tn.exSize = openExemplars(dir, tt.opts.MaxExemplars)
	}
	db, _, err := openDBWith(dir, tsdbOpts, tn.exSize, reg, tt.logger.With("tenant", tn.id))
	if err != nil {
		return fmt.Errorf("opening tenant %q: %w", tn.id, err)
	}
	tn.db = db
	if tt.opts.RingExemplars > 0 {
		// A ring is in memory only: it starts small at every open.
		tn.exSize = tt.opts.RingExemplars
		if tt.opts.GrowExemplars {
			tn.exSize = min(initialExemplars, tt.opts.RingExemplars)
		}
		ring := exemplars.New(tn.exSize, exemplars.Options{})
		if tn.reg != nil {
			// The head registers Prometheus's exemplar metrics, for its
			// own storage, even when it is off: the ring's take another
			// prefix.
			tn.reg.MustRegister(exemplars.NewCollector(ring, exemplars.CollectorOptions{Prefix: ringMetricsPrefix}))
		}
		tn.exRing = ring
	}
	tt.logger.Info("tenant opened", "tenant", tn.id, "dir", dir, "head_series", db.Head().NumSeries())
	return nil
}

// closeTenant closes tn's TSDB and unregisters its metrics; tn must be
// marked closing, with no reference held.
func (tt *tenants) closeTenant(tn *tenant) error {
	// The tenant's write handler goes with its TSDB: opened again, the
	// tenant starts with an empty cache and tracker, and its new ring.
	tt.h.Forget(tn.id)
	err := tn.db.Close()
	tn.reg.unregisterAll()
	tt.mu.Lock()
	delete(tt.m, tn.id)
	tt.mu.Unlock()
	close(tn.closing)
	if err != nil {
		return fmt.Errorf("closing tenant %q: %w", tn.id, err)
	}
	return nil
}

// closeIdle closes the open tenants that no request used since before,
// and returns how many it closed. A tenant in use, or being opened, is
// left open.
func (tt *tenants) closeIdle(before time.Time) (int, error) {
	ns := before.UnixNano()
	var idle []*tenant
	tt.mu.Lock()
	for _, tn := range tt.m {
		if tn.closing != nil || !tn.isOpen() || tn.inflight.Load() != 0 || tn.lastUsed.Load() >= ns {
			continue
		}
		tn.closing = make(chan struct{})
		idle = append(idle, tn)
	}
	tt.mu.Unlock()
	var errs []error
	for _, tn := range idle {
		errs = append(errs, tt.closeTenant(tn))
		tt.idleClosed.Add(1)
		tt.logger.Info("idle tenant closed", "tenant", tn.id)
	}
	return len(idle), errors.Join(errs...)
}

// isOpen reports whether tn was opened without error. Not for a tenant
// whose open may still run, except to find out whether it does.
func (tn *tenant) isOpen() bool {
	select {
	case <-tn.ready:
		return tn.err == nil
	default:
		return false
	}
}

// close refuses every request from now on, waits for those in flight and
// for tenants being opened, and closes every tenant.
func (tt *tenants) close() error {
	tt.mu.Lock()
	if tt.closed {
		tt.mu.Unlock()
		return nil
	}
	tt.closed = true
	var all []*tenant
	for _, tn := range tt.m {
		if tn.closing == nil {
			tn.closing = make(chan struct{})
			all = append(all, tn)
		}
	}
	tt.mu.Unlock()
	var errs []error
	for _, tn := range all {
		<-tn.ready
		for tn.inflight.Load() > 0 {
			// Only at exit, after the server's Shutdown: rarely entered.
			time.Sleep(time.Millisecond)
		}
		if tn.err != nil {
			close(tn.closing)
			continue
		}
		errs = append(errs, tt.closeTenant(tn))
	}
	return errors.Join(errs...)
}

// each calls f for every open tenant in the order of their IDs, with a
// reference held. Tenants that open or close meanwhile may be missed.
func (tt *tenants) each(f func(*tenant)) {
	tt.mu.RLock()
	var open []*tenant
	for _, tn := range tt.m {
		if tn.closing == nil && tn.isOpen() {
			tn.inflight.Add(1)
			open = append(open, tn)
		}
	}
	tt.mu.RUnlock()
	sort.Slice(open, func(i, j int) bool { return open[i].id < open[j].id })
	for _, tn := range open {
		f(tn)
		tn.inflight.Add(-1) // not a use: lastUsed stays
	}
}

// Purge is ingest.TenantWriteHandler.Purge: the write handlers' purges,
// summed, and the handlers of tenants idle since keepFrom forgotten (their
// TSDBs stay open until closeIdle closes them).
func (tt *tenants) Purge(keepFrom time.Time) (cache, active int) {
	return tt.h.Purge(keepFrom)
}

// seriesCounts returns each open tenant's /api/v1/series_count, and their
// sum (the earliest and latest head times of all).
func (tt *tenants) seriesCounts() tenantsCountResponse {
	resp := tenantsCountResponse{Tenants: map[string]seriesCountResponse{}}
	t := &resp.seriesCountResponse
	t.HeadMinTimeMs, t.HeadMaxTimeMs = emptyHeadMinTime, emptyHeadMaxTime
	tt.each(func(tn *tenant) {
		s := seriesCount(tt.handler(tn.id), tn.db)
		resp.Tenants[tn.id] = s
		t.HeadSeries += s.HeadSeries
		t.ActiveSeries += s.ActiveSeries
		t.CachedSeries += s.CachedSeries
		t.Samples += s.Samples
		t.Histograms += s.Histograms
		t.Exemplars += s.Exemplars
		t.Requests += s.Requests
		t.Rejected += s.Rejected
		t.NewSeriesBuilt += s.NewSeriesBuilt
		t.HeadMinTimeMs = min(t.HeadMinTimeMs, s.HeadMinTimeMs)
		t.HeadMaxTimeMs = max(t.HeadMaxTimeMs, s.HeadMaxTimeMs)
		for ep, n := range s.OwnedPerPeer {
			if t.OwnedPerPeer == nil {
				t.OwnedPerPeer = map[string]int64{}
			}
			t.OwnedPerPeer[ep] += n
		}
	})
	ts := tt.h.Stats()
	resp.Rejected += ts.Invalid + ts.Unrouted
	return resp
}

// The head times of an empty head (tsdb.Head's MinTime and MaxTime).
const (
	emptyHeadMinTime = int64(^uint64(0) >> 1)
	emptyHeadMaxTime = -emptyHeadMinTime - 1
)

// tenantsCountResponse is what /api/v1/series_count shows with tenants:
// the totals of the open tenants, as a single receiver shows its own, and
// each tenant's under "tenants". rejected_requests counts those refused
// before they reached a tenant too.
type tenantsCountResponse struct {
	seriesCountResponse
	Tenants map[string]seriesCountResponse `json:"tenants"`
}

// tenantExemplars returns the sizes of each tenant's exemplar ring and of
// its TSDB's exemplar storage for -exemplar-store: one of them is 0.
func tenantExemplars(c config) (ring, tsdb int64, _ error) {
	switch c.exemplarStore {
	case "ring":
		return c.maxExemplars, 0, nil
	case "tsdb":
		return 0, c.maxExemplars, nil
	default:
		return 0, 0, fmt.Errorf("-exemplar-store %q: want ring or tsdb", c.exemplarStore)
	}
}

// newBodyReader returns a body reader with the limits of opts, for the
// tenants' handlers to share (ingest.Options.BodyReader).
func newBodyReader(opts ingest.Options) *decode.BodyReader {
	return decode.NewBodyReader(decode.BodyOptions{
		MaxBodySize: opts.MaxBodySize, MaxDecodedSize: opts.MaxDecodedSize, MaxInflightBytes: opts.MaxInflightBytes,
	})
}

// tenantOptionsOf returns the tenant options that c's flags ask for, with
// no Dir yet: c's ring and exemplar store, and each tenant's receiver
// options with one body reader for every tenant, so that
// -max-inflight-bytes bounds the process. serve and the multi-tenant demo
// both start from it; logger may be nil (no logs).
func tenantOptionsOf(c config, logger *slog.Logger) (tenantOptions, error) {
	ringExemplars, tsdbExemplars, err := tenantExemplars(c)
	if err != nil {
		return tenantOptions{}, err
	}
	ring, err := newRing(c)
	if err != nil {
		return tenantOptions{}, err
	}
	ro := receiverOptions(c, ring, nil)
	// One body reader for every tenant: its in-flight budget bounds the
	// process.
	ro.BodyReader = newBodyReader(ro)
	// One series budget for every tenant, which accountLoop keeps.
	if c.maxSeriesTotal > 0 || c.maxLabelBytesTotal > 0 {
		series := c.maxSeriesTotal
		if series <= 0 {
			series = math.MaxInt64
		}
		ro.SeriesBudget = ingest.NewSeriesBytesBudget(series, c.maxLabelBytesTotal)
	}
	allowed, err := newAllowlist(c.tenantsAllowed, c.tenantsAllowedFile, c.tenantsAllowedPattern)
	if err != nil {
		return tenantOptions{}, err
	}
	return tenantOptions{
		Allowed: allowed,
		Header:  c.tenantHeader, Default: c.tenant,
		Receiver:     ro,
		MaxExemplars: tsdbExemplars, MetadataWAL: c.metadataWAL, RingExemplars: ringExemplars,
		MaxTenants: c.maxTenants, Logger: logger,
		GrowExemplars: true, MaxExemplarsTotal: c.maxExemplarsTotal,
	}, nil
}

// tenantIdleLoop closes the tenants idle for idle, every every.
func tenantIdleLoop(ctx context.Context, tt *tenants, every, idle time.Duration, logger *slog.Logger) {
	tick(ctx, every, func(now time.Time) {
		if _, err := tt.closeIdle(now.Add(-idle)); err != nil {
			logger.Error("closing idle tenants", "err", err)
		}
	})
}

// tenantRegisterer registers a tenant's collectors with the tenant="<id>"
// label and remembers them, so that they are unregistered when the tenant
// is closed and registered again when it is opened again. A nil
// *tenantRegisterer is a nil Registerer for tsdb.Open. It is safe for
// concurrent use by multiple goroutines.
type tenantRegisterer struct {
	reg prometheus.Registerer

	mu         sync.Mutex
	collectors []prometheus.Collector // guarded by mu
}

func newTenantRegisterer(reg prometheus.Registerer, id string) *tenantRegisterer {
	if reg == nil {
		return nil
	}
	return &tenantRegisterer{reg: prometheus.WrapRegistererWith(prometheus.Labels{"tenant": id}, reg)}
}

// Register implements prometheus.Registerer.
func (r *tenantRegisterer) Register(c prometheus.Collector) error {
	if err := r.reg.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	r.collectors = append(r.collectors, c)
	r.mu.Unlock()
	return nil
}

// MustRegister implements prometheus.Registerer.
func (r *tenantRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister implements prometheus.Registerer.
func (r *tenantRegisterer) Unregister(c prometheus.Collector) bool {
	return r.reg.Unregister(c)
}

// unregisterAll unregisters every collector registered through r.
func (r *tenantRegisterer) unregisterAll() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.collectors {
		r.reg.Unregister(c)
	}
	r.collectors = nil
}
