package ingest

import (
	"sync/atomic"

	"github.com/prometheus/prometheus/model/labels"
)

// SeriesBudget bounds the series that several storages hold together, such
// as the TSDBs of a process's tenants, in number and, optionally, in the
// bytes of their labels: handlers that share one (through
// [Options.SeriesBudget], as the handlers of a [TenantWriteHandler] share
// their Options) refuse a series their storage does not hold yet while the
// budget is spent, or would be by the series' labels, with a 400 that
// names it ([ErrSeriesBudget]); the request's other series are written,
// as with [Options.MaxSeries]. The label bytes of a series are the lengths
// of its label names and values summed, what its labels take in every
// labels build but for their headers.
//
// The budget does not count series itself: its owner, who knows the
// storages, reports what they hold with [SeriesBudget.SetHeld] and
// [SeriesBudget.SetHeldLabelBytes] (for TSDBs, the sum of their heads'
// NumSeries, and the label bytes of their heads' series), as often as it
// likes; between two reports each handler adds the series it created and
// their label bytes. Series leave a TSDB's head only when it is compacted,
// up to hours after they were last written: a series the budget refuses
// is dropped, not delayed, which is why the refusal is a 400 (which
// Prometheus's sender does not retry) and not a 503 (which it retries,
// holding back the other series of its shard for as long as the budget
// stays spent).
//
// Requests served at the same time may pass the limits together by the
// new series of all but one. A SeriesBudget is safe for concurrent use by
// multiple goroutines.
type SeriesBudget struct {
	limit, bytesLimit int64 // immutable
	held, heldBytes   atomic.Int64
}

// NewSeriesBudget returns a budget of limit series, none held, and no
// bound on their label bytes.
func NewSeriesBudget(limit int64) *SeriesBudget { return &SeriesBudget{limit: limit} }

// NewSeriesBytesBudget returns a budget of limit series and labelBytes
// bytes of their labels, none held. A labelBytes of zero or less bounds
// the series only, as [NewSeriesBudget].
func NewSeriesBytesBudget(limit, labelBytes int64) *SeriesBudget {
	return &SeriesBudget{limit: limit, bytesLimit: max(labelBytes, 0)}
}

// Limit returns the budget's limit of series.
func (b *SeriesBudget) Limit() int64 { return b.limit }

// LabelBytesLimit returns the budget's limit of label bytes, 0 if none.
func (b *SeriesBudget) LabelBytesLimit() int64 { return b.bytesLimit }

// Held returns the series held: the last count of SetHeld, plus those
// created since.
func (b *SeriesBudget) Held() int64 { return b.held.Load() }

// HeldLabelBytes returns the label bytes held: the last count of
// SetHeldLabelBytes, plus those of the series created since.
func (b *SeriesBudget) HeldLabelBytes() int64 { return b.heldBytes.Load() }

// SetHeld sets the series the storages hold.
func (b *SeriesBudget) SetHeld(n int64) { b.held.Store(n) }

// SetHeldLabelBytes sets the label bytes of the series the storages hold.
func (b *SeriesBudget) SetHeldLabelBytes(n int64) { b.heldBytes.Store(n) }

// add counts series new series of labelBytes bytes of labels.
func (b *SeriesBudget) add(series, labelBytes int) {
	b.held.Add(int64(series))
	if b.bytesLimit > 0 {
		b.heldBytes.Add(int64(labelBytes))
	}
}

// admits reports whether the budget has room for one more series of
// labelBytes bytes of labels, with pending series of pendingBytes admitted
// already for the request.
func (b *SeriesBudget) admits(pending, pendingBytes, labelBytes int) bool {
	if b.held.Load()+int64(pending) >= b.limit {
		return false
	}
	return b.bytesLimit <= 0 || b.heldBytes.Load()+int64(pendingBytes+labelBytes) <= b.bytesLimit
}

// LabelBytes returns the label bytes of ls as a [SeriesBudget] counts
// them: the lengths of its label names and values summed.
func LabelBytes(ls labels.Labels) int {
	n := 0
	ls.Range(func(l labels.Label) { n += len(l.Name) + len(l.Value) })
	return n
}
