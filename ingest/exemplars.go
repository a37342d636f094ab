package ingest

import (
	"errors"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/ingestkit/ingestkit/ingest/refcache"
)

// ExemplarStore is where a [WriteHandler] puts exemplars: the TSDB's own
// storage unless [Options] give another, such as [RingExemplars]. It makes
// an [ExemplarAppender] for each of the handler's workers, which keeps it
// for the requests it serves one after the other. An ExemplarStore is used
// by many requests at once and must be safe for concurrent use by multiple
// goroutines.
type ExemplarStore interface {
	NewExemplarAppender() ExemplarAppender
}

// ExemplarAppender takes the exemplars of one request at a time, in the
// request's transaction: AppendExemplars is called for each series with
// exemplars, then Commit once the TSDB's transaction has committed, or
// Rollback if it was rolled back or its commit failed.
//
// AppendExemplars takes the exemplars of one series: h is the series,
// resolved in t, the request's transaction; es holds no exemplar too far in
// the future and is sorted by timestamp (exemplar.Compare) on the 2.0
// appender, in request order on the 1.0 one (see [Txn]). It returns what
// [Txn.AppendExemplars] returns: nil, a *storage.AppendPartialError listing
// the exemplars it rejected, or another error if it took none. What it
// takes is stored when Commit is called, and not if Rollback is, as the
// TSDB does with the exemplars of a transaction. It must not keep es.
//
// An ExemplarAppender is not safe for concurrent use.
type ExemplarAppender interface {
	AppendExemplars(t *Txn, h *refcache.Handle, es []exemplar.Exemplar) error
	Commit()
	Rollback()
}

// tsdbExemplars is the TSDB's exemplar storage: the exemplars go into the
// request's transaction, as Prometheus's handler puts them, and the TSDB's
// own commit and rollback apply to them.
type tsdbExemplars struct{}

func (tsdbExemplars) NewExemplarAppender() ExemplarAppender { return tsdbExemplars{} }

func (tsdbExemplars) AppendExemplars(t *Txn, h *refcache.Handle, es []exemplar.Exemplar) error {
	return t.AppendExemplars(h, es)
}

func (tsdbExemplars) Commit()   {}
func (tsdbExemplars) Rollback() {}

// ExemplarRing is an exemplar storage that a [RingExemplars] validates and
// adds exemplars to by their series' hash, labels.Labels.Hash of the
// series' labels: the methods of package exemplars' Ring, which needs no
// adapter. Its methods must be safe for concurrent use.
type ExemplarRing interface {
	// ValidateExemplarHash reports whether e would be added to the series
	// of the given hash and labels: nil, storage.ErrDuplicateExemplar
	// (skipped silently), storage.ErrExemplarsDisabled or another error
	// of tsdb.CircularExemplarStorage's.
	ValidateExemplarHash(hash uint64, lset labels.Labels, e exemplar.Exemplar) error
	// AddExemplarHash adds e to the series, as the storage's
	// AddExemplar does.
	AddExemplarHash(hash uint64, lset labels.Labels, e exemplar.Exemplar) error
}

// RingExemplars is an [ExemplarStore] that keeps exemplars in an
// ExemplarRing, such as an exemplars.Ring, found by the hash the decoder
// computed for the series, instead of the TSDB's own exemplar storage. Its
// appenders accept and reject what Prometheus's head does, and store it
// when the head would:
//
//   - the exemplars of a series the TSDB does not hold are refused with
//     an error that wraps storage.ErrNotFound (a 1.0 sender sends
//     exemplars in series entries of their own, without samples);
//   - each exemplar, its empty labels dropped, is validated against the
//     ring as it stands: duplicates (and every exemplar when the ring's
//     size is 0) are skipped silently, other rejections returned in a
//     *storage.AppendPartialError;
//   - the valid ones are added when the request's transaction commits,
//     and dropped when it rolls back; an add that fails then (an exemplar
//     out of order behind one of the same request) loses the exemplar
//     silently, as the head's commit does.
//
// Unlike the head's storage, which writes exemplars to the TSDB's WAL and
// replays them at start, a ring in memory only loses every exemplar at a
// restart; a program that swaps one in for the head's storage replays the
// WAL's exemplar records into it.
//
// A RingExemplars is safe for concurrent use by multiple goroutines, as
// its ring is; each of its appenders is for one request at a time.
type RingExemplars struct {
	Ring ExemplarRing
}

// NewExemplarAppender implements [ExemplarStore].
func (x RingExemplars) NewExemplarAppender() ExemplarAppender {
	return &ringAppender{ring: x.Ring}
}

// ringAppender stages one request's exemplars for a RingExemplars.
type ringAppender struct {
	ring    ExemplarRing
	pending []pendingExemplar
}

// pendingExemplar is an exemplar validated and waiting for the commit.
type pendingExemplar struct {
	hash uint64
	lset labels.Labels
	e    exemplar.Exemplar
}

// AppendExemplars implements [ExemplarAppender].
func (x *ringAppender) AppendExemplars(t *Txn, h *refcache.Handle, es []exemplar.Exemplar) error {
	if err := t.HasSeries(h); err != nil {
		return err
	}
	var errs partialErrors
	for i, e := range es {
		e.Labels = e.Labels.WithoutEmpty()
		err := x.ring.ValidateExemplarHash(h.Hash(), h.Labels(), e)
		if err == nil {
			x.pending = append(x.pending, pendingExemplar{h.Hash(), h.Labels(), e})
			continue
		}
		if !errors.Is(err, storage.ErrDuplicateExemplar) && !errors.Is(err, storage.ErrExemplarsDisabled) {
			errs.add(i, err)
		}
	}
	return errs.err()
}

// Commit implements [ExemplarAppender].
func (x *ringAppender) Commit() {
	for _, p := range x.pending {
		_ = x.ring.AddExemplarHash(p.hash, p.lset, p.e)
	}
	x.Rollback()
}

// Rollback implements [ExemplarAppender].
func (x *ringAppender) Rollback() {
	clear(x.pending) // let go of the labels
	x.pending = x.pending[:0]
}
