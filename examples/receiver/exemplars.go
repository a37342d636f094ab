package main

import (
	"errors"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/ingestkit/ingestkit/exemplars"
	"github.com/ingestkit/ingestkit/ingest/refcache"
)

// RingExemplars is an [ExemplarStore] that keeps exemplars in an
// exemplars.Ring, found by the hash the decoder computed for the series,
// instead of the TSDB's own exemplar storage. Its appenders accept and
// reject what Prometheus's head does, and store it when the head would:
//
//   - the exemplars of a series the TSDB does not hold are refused with
//     the head's error, which wraps storage.ErrNotFound (a 1.0 sender
//     sends exemplars in series entries of their own, without samples);
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
// replays them at start, the ring is in memory only: a restart loses every
// exemplar. A fork that swaps the ring in for the head's storage replays
// the WAL's exemplar records into the ring.
//
// A RingExemplars is safe for concurrent use by multiple goroutines, as the
// Ring is; each of its appenders is for one request at a time.
type RingExemplars struct {
	Ring *exemplars.Ring
}

// NewExemplarAppender implements [ExemplarStore].
func (x RingExemplars) NewExemplarAppender() ExemplarAppender {
	return &ringAppender{ring: x.Ring}
}

// ringAppender stages one request's exemplars for a RingExemplars.
type ringAppender struct {
	ring    *exemplars.Ring
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
