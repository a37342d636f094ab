package ingest

import "sync/atomic"

// SeriesBudget bounds the series that several storages hold together, such
// as the TSDBs of a process's tenants: handlers that share one (through
// [Options.SeriesBudget], as the handlers of a [TenantWriteHandler] share
// their Options) refuse a series their storage does not hold yet while the
// budget is spent, with a 400 that names it ([ErrSeriesBudget]); the
// request's other series are written, as with [Options.MaxSeries].
//
// The budget does not count series itself: its owner, who knows the
// storages, reports what they hold with [SeriesBudget.SetHeld] (for TSDBs,
// the sum of their heads' NumSeries), as often as it likes; between two
// reports each handler adds the series it created. Series leave a TSDB's
// head only when it is compacted, up to hours after they were last
// written: a series the budget refuses is dropped, not delayed, which is
// why the refusal is a 400 (which Prometheus's sender does not retry) and
// not a 503 (which it retries, holding back the other series of its
// shard for as long as the budget stays spent).
//
// Requests served at the same time may pass the limit together by the new
// series of all but one. A SeriesBudget is safe for concurrent use by
// multiple goroutines.
type SeriesBudget struct {
	limit int64
	held  atomic.Int64
}

// NewSeriesBudget returns a budget of limit series, none held.
func NewSeriesBudget(limit int64) *SeriesBudget { return &SeriesBudget{limit: limit} }

// Limit returns the budget's limit.
func (b *SeriesBudget) Limit() int64 { return b.limit }

// Held returns the series held: the last count of SetHeld, plus those
// created since.
func (b *SeriesBudget) Held() int64 { return b.held.Load() }

// SetHeld sets the series the storages hold.
func (b *SeriesBudget) SetHeld(n int64) { b.held.Store(n) }

// admits reports whether the budget has room for one more series, with
// pending series of the request admitted already.
func (b *SeriesBudget) admits(pending int) bool { return b.held.Load()+int64(pending) < b.limit }
