package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/prometheus/storage"
)

// Tenants' defaults, those of Thanos receive (pkg/receive/handler.go and
// pkg/tenancy); Mimir and Cortex name the tenant in X-Scope-OrgID.
const (
	DefaultTenantHeader = "THANOS-TENANT"
	DefaultTenant       = "default-tenant"
)

// MaxTenantIDLength is the longest tenant ID, Mimir's and Cortex's limit
// (dskit's tenant.MaxTenantIDLength).
const MaxTenantIDLength = 150

// ValidTenantID checks a tenant ID as Mimir and Cortex do (dskit's
// tenant.ValidTenantID) before it names anything: at most
// MaxTenantIDLength bytes of [a-zA-Z0-9!-_.*'()], neither "." nor "..",
// and not empty. No path separator nor NUL can pass, so that dir/<id> is
// always a direct child of dir. The error wraps [ErrInvalidTenant] and
// quotes at most the first 64 bytes of id.
func ValidTenantID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrInvalidTenant)
	}
	if len(id) > MaxTenantIDLength {
		return fmt.Errorf("%w: %d bytes, longer than %d", ErrInvalidTenant, len(id), MaxTenantIDLength)
	}
	for i := 0; i < len(id); i++ {
		if !tenantIDByte(id[i]) {
			return fmt.Errorf("%w: %.64q has an unsupported character at byte %d", ErrInvalidTenant, id, i)
		}
	}
	if id == "." || id == ".." {
		return fmt.Errorf("%w: %q", ErrInvalidTenant, id)
	}
	return nil
}

func tenantIDByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '-', '_', '.', '*', '\'', '(', ')':
		return true
	}
	return false
}

// RequestTenant returns the tenant of a request: the value of its header,
// validated with [ValidTenantID], or def if it has none or an empty one.
// A request that repeats the header names no single tenant and is
// refused.
func RequestTenant(req *http.Request, header, def string) (string, error) {
	vs := req.Header.Values(header)
	switch {
	case len(vs) > 1:
		return "", fmt.Errorf("%w: %d %s headers, want one", ErrInvalidTenant, len(vs), header)
	case len(vs) == 0 || vs[0] == "":
		return def, nil
	}
	return vs[0], ValidTenantID(vs[0])
}

// TenantStorage gives a [TenantWriteHandler] the storage of a tenant, whose
// ID has passed [ValidTenantID], for one request: app, a
// storage.Appendable that the handler appends to as [NewWriteHandler]
// does (through its storage.AppendableV2 too, if it has one that calls for
// it), and done, which the handler calls once the request is finished with
// app (nil if there is nothing to do). Between the call and done, app must
// stay open: a storage closed while a request appends loses the request.
// app's dynamic type must be comparable, and a tenant's storage the same
// value for as long as it is the same TSDB: the tenant's ref cache serves
// one storage at a time, and empties when given another (a tenant's TSDB
// closed and opened again, pruned and re-created, is another).
//
// An error wrapping [ErrTenantUnavailable] is answered 503, one wrapping
// [ErrTenantForbidden] 403, any other 500.
//
// A TenantStorage is called by many requests at once and must be safe for
// concurrent use by multiple goroutines.
type TenantStorage func(ctx context.Context, tenant string) (app storage.Appendable, done func(), err error)

// TenantOptions are the settings of a [TenantWriteHandler]. The zero value
// of each field means its documented default. A TenantOptions is a plain
// value that NewTenantWriteHandler copies; it is not safe for concurrent
// use by multiple goroutines while one of them modifies it.
type TenantOptions struct {
	// Header is the request header that names the tenant. Empty means
	// DefaultTenantHeader, Thanos receive's; Mimir and Cortex read
	// X-Scope-OrgID.
	Header string
	// DefaultTenant is the tenant of a request without the header, or with
	// an empty one. Empty means DefaultTenant.
	DefaultTenant string
	// Options returns the options of a tenant's WriteHandler, made at the
	// tenant's first request: its limits, exemplar store and ring, for
	// instance. The handler sets Options.Tenant to the tenant's ID when it
	// is empty. Nil means the zero Options for every tenant. Options that
	// share a decode.BodyReader share its in-flight budget.
	Options func(tenant string) Options
}

// TenantWriteHandler is an http.Handler for remote write into one storage
// per tenant, as Thanos receive's multi-TSDB and Cortex's and Mimir's
// ingesters keep them: it reads the tenant of each request from a header,
// asks a [TenantStorage] for the tenant's storage, and serves the request
// with the tenant's [WriteHandler], made at its first request, which keeps
// the tenant's ref cache, interner and active-series tracker (if its
// Options track active series) across requests. The TenantStorage owns the storages and their lifecycle.
//
// A request whose tenant header is not a valid tenant ID is answered 400
// before anything is read or opened. A tenant's WriteHandler binds its ref
// cache to the storage of each request: a tenant whose storage is closed
// and opened again, or removed and re-created, gets a new storage value,
// and its cache starts empty then, so that no ref of a closed head reaches
// a new one. [TenantWriteHandler.Forget] and [TenantWriteHandler.Purge]
// drop the WriteHandlers of tenants gone.
//
// A TenantWriteHandler is safe for concurrent use by multiple goroutines.
type TenantWriteHandler struct {
	storages TenantStorage
	header   string
	def      string
	options  func(tenant string) Options
	logger   *slog.Logger

	mu sync.RWMutex
	m  map[string]*tenantState // guarded by mu

	invalid, unrouted atomic.Int64
}

// tenantState is a tenant's WriteHandler and the binding of the storage
// it was last given.
type tenantState struct {
	h        *WriteHandler
	forceV1  bool
	st       atomic.Pointer[binding]
	lastUsed atomic.Int64 // Unix nanoseconds of the last request's start
}

// NewTenantWriteHandler returns a TenantWriteHandler that serves each
// tenant's requests into the storage storages gives, logging to logger
// (nil: nowhere) the requests refused before they reached a tenant, and
// giving each tenant's WriteHandler the same logger with the tenant.
func NewTenantWriteHandler(logger *slog.Logger, storages TenantStorage, opts TenantOptions) *TenantWriteHandler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := &TenantWriteHandler{
		storages: storages,
		header:   opts.Header,
		def:      opts.DefaultTenant,
		options:  opts.Options,
		logger:   logger,
		m:        map[string]*tenantState{},
	}
	if t.header == "" {
		t.header = DefaultTenantHeader
	}
	if t.def == "" {
		t.def = DefaultTenant
	}
	return t
}

// ServeHTTP routes a remote-write request to its tenant's WriteHandler; see
// [TenantWriteHandler].
func (t *TenantWriteHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	id, err := RequestTenant(req, t.header, t.def)
	if err != nil {
		t.invalid.Add(1)
		t.logger.Warn("remote-write request rejected", "code", http.StatusBadRequest, "err", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	app, done, err := t.storages(req.Context(), id)
	if err != nil {
		t.unrouted.Add(1)
		code := http.StatusInternalServerError
		switch {
		case errors.Is(err, ErrTenantUnavailable):
			code = http.StatusServiceUnavailable
		case errors.Is(err, ErrTenantForbidden):
			code = http.StatusForbidden
		}
		t.logger.Warn("remote-write request rejected", "tenant", id, "code", code, "err", err)
		http.Error(w, err.Error(), code)
		return
	}
	if done != nil {
		defer done()
	}
	ts := t.tenant(id)
	ts.lastUsed.Store(time.Now().UnixNano())
	ts.h.serve(w, req, ts.bind(app))
}

// tenant returns the state of tenant id, made on its first request.
func (t *TenantWriteHandler) tenant(id string) *tenantState {
	t.mu.RLock()
	ts := t.m[id]
	t.mu.RUnlock()
	if ts != nil {
		return ts
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ts = t.m[id]; ts != nil {
		return ts
	}
	var opts Options
	if t.options != nil {
		opts = t.options(id)
	}
	if opts.Tenant == "" {
		opts.Tenant = id
	}
	ts = &tenantState{h: newWriteHandler(t.logger.With("tenant", id), opts), forceV1: opts.appenderV1}
	t.m[id] = ts
	return ts
}

// bind returns the binding of app for the tenant: the last one if app is
// the same storage, else a new one, which replaces it.
func (ts *tenantState) bind(app storage.Appendable) *binding {
	if b := ts.st.Load(); b != nil && b.key == any(app) {
		return b
	}
	b := bindV1(app, ts.forceV1)
	ts.st.Store(&b)
	return &b
}

// Handler returns the WriteHandler of tenant, nil if it has none: none
// served it yet, or it was forgotten since.
func (t *TenantWriteHandler) Handler(tenant string) *WriteHandler {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if ts := t.m[tenant]; ts != nil {
		return ts.h
	}
	return nil
}

// Tenants returns the IDs of the tenants that have a WriteHandler, in no
// order.
func (t *TenantWriteHandler) Tenants() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ids := make([]string, 0, len(t.m))
	for id := range t.m {
		ids = append(ids, id)
	}
	return ids
}

// Forget drops the WriteHandler of tenant, and with it its ref cache,
// interner and tracker, as a program does when it closes the tenant's
// storage for good (a tenant pruned); the tenant's next request makes a
// new one. Requests of the tenant being served finish with the old one.
func (t *TenantWriteHandler) Forget(tenant string) {
	t.mu.Lock()
	delete(t.m, tenant)
	t.mu.Unlock()
}

// Purge calls [WriteHandler.Purge] on every tenant's handler, and forgets
// the tenants that received no request since keepFrom, whose ref caches
// and trackers would hold nothing more after it anyway. It returns the
// sums of what the handlers purged.
func (t *TenantWriteHandler) Purge(keepFrom time.Time) (cache, active int) {
	t.mu.RLock()
	states := make(map[string]*tenantState, len(t.m))
	for id, ts := range t.m {
		states[id] = ts
	}
	t.mu.RUnlock()
	for id, ts := range states {
		c, a := ts.h.Purge(keepFrom)
		cache, active = cache+c, active+a
		if ts.lastUsed.Load() < keepFrom.UnixNano() {
			t.mu.Lock()
			if t.m[id] == ts && ts.lastUsed.Load() < keepFrom.UnixNano() {
				delete(t.m, id)
			}
			t.mu.Unlock()
		}
	}
	return cache, active
}

// TenantStats are the counts of a TenantWriteHandler's own, of the
// requests it answered before they reached a tenant: a plain value, safe
// for concurrent use.
type TenantStats struct {
	Tenants  int   // tenants with a WriteHandler
	Invalid  int64 // requests refused for their tenant header
	Unrouted int64 // requests whose tenant's storage could not be had
}

// Stats returns the handler's own counts; each tenant's are its
// WriteHandler's ([TenantWriteHandler.Handler]).
func (t *TenantWriteHandler) Stats() TenantStats {
	t.mu.RLock()
	n := len(t.m)
	t.mu.RUnlock()
	return TenantStats{Tenants: n, Invalid: t.invalid.Load(), Unrouted: t.unrouted.Load()}
}
