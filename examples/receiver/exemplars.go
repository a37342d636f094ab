package main

import (
	"errors"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/storage"

	"github.com/ingestkit/ingestkit/exemplars"
	"github.com/ingestkit/ingestkit/ingest"
)

// RingExemplars is an [ExemplarAppender] that keeps exemplars in an
// exemplars.Ring, found by the hash the decoder computed for the series,
// instead of the TSDB's own exemplar storage. It treats exemplars as
// Prometheus's head does: empty labels dropped, duplicates (and exemplars
// when the ring's size is 0) skipped silently, every other rejection
// returned in a *storage.AppendPartialError. Unlike the head, which adds
// exemplars when the transaction commits and writes them to its WAL, the
// ring adds them at once and keeps them in memory only: a fork that swaps
// the ring in for the head's storage replays its WAL into the ring.
//
// A RingExemplars is safe for concurrent use by multiple goroutines, as the
// Ring is.
type RingExemplars struct {
	Ring *exemplars.Ring
}

// AppendExemplars implements [ExemplarAppender].
func (x RingExemplars) AppendExemplars(_ *ingest.Appender, h *ingest.Handle, es []exemplar.Exemplar) error {
	var errs []storage.ExemplarError
	for i, e := range es {
		e.Labels = e.Labels.WithoutEmpty()
		err := x.Ring.AddExemplarHash(h.Hash(), h.Labels(), e)
		if err == nil || errors.Is(err, storage.ErrDuplicateExemplar) || errors.Is(err, storage.ErrExemplarsDisabled) {
			continue
		}
		errs = append(errs, storage.ExemplarError{Index: i, Err: err})
	}
	if len(errs) > 0 {
		return &storage.AppendPartialError{ExemplarErrors: errs}
	}
	return nil
}
