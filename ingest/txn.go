package ingest

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/storage"

	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/ingest/refcache"
)

// exemplarAppenderV2 is the method of storage.ExemplarAppenderV2, which
// Prometheus has from v0.316.0 on, named by its method set so that the
// receiver builds against the releases before it.
type exemplarAppenderV2 interface {
	AppendExemplars(ref storage.SeriesRef, ls labels.Labels, es []exemplar.Exemplar) (storage.SeriesRef, error)
}

// appendsV1 reports whether a WriteHandler over db appends through
// storage.Appendable: when db's storage.AppenderV2 has no AppendExemplars
// (Prometheus before v0.316.0, whose handler appends through
// storage.Appendable) and db has storage.Appendable, as a *tsdb.DB of every
// release has. It opens one transaction on db to find out, and rolls it
// back.
func appendsV1(db storage.AppendableV2) bool {
	if _, ok := db.(storage.Appendable); !ok {
		return false
	}
	app := db.AppenderV2(context.Background())
	_, ok := app.(exemplarAppenderV2)
	_ = app.Rollback()
	return !ok
}

// binding is the storage a request appends to, through one of its two
// appenders (Txn): v1 if set, else v2. key is the storage as it was given,
// whose binding a TenantWriteHandler keeps while its tenant's storage
// stays the same.
type binding struct {
	key any
	v2  storage.AppendableV2
	v1  storage.Appendable
}

// bindV1 returns the binding of app, given as a storage.Appendable: its
// storage.AppendableV2 if it has one whose appenders have AppendExemplars
// and forceV1 is false, else app itself.
func bindV1(app storage.Appendable, forceV1 bool) binding {
	if v2, ok := app.(storage.AppendableV2); ok && !forceV1 && !appendsV1(v2) {
		return binding{key: app, v2: v2}
	}
	return binding{key: app, v1: app}
}

// bindV2 returns the binding of app, given as a storage.AppendableV2:
// its storage.Appendable if it has one and its appenders have no
// AppendExemplars (or forceV1), else app itself.
func bindV2(app storage.AppendableV2, forceV1 bool) binding {
	if v1, ok := app.(storage.Appendable); ok && (forceV1 || appendsV1(app)) {
		return binding{key: app, v1: v1}
	}
	return binding{key: app, v2: app}
}

// Txn is the transaction of one request on a Receiver's storage, through
// one of package ingest's two appenders: an [refcache.AppenderV2] when the
// storage's storage.AppenderV2 has AppendExemplars (Prometheus v0.316.0 on),
// whose handler the Receiver then answers as; else an [refcache.Appender] over
// its storage.Appender, whose handler up to v0.315 appends through it, and
// whose answers the Receiver gives then. The two differ only in where
// exemplars and metadata go and in the order of a 1.0 series' exemplars and
// histograms (see [worker.write]).
//
// A Txn is its worker's and not safe for concurrent use.
type Txn struct {
	v2 *refcache.AppenderV2
	v1 *refcache.Appender
	// isV1 says which of the two the current transaction is on.
	isV1 bool
}

// open starts the request's transaction on the storage of b, with r's
// cache, marking the series it resolves seen at nowMs.
func (t *Txn) open(ctx context.Context, r *WriteHandler, b *binding, nowMs int64) {
	t.isV1 = b.v1 != nil
	switch {
	case t.isV1 && t.v1 == nil:
		t.v1 = refcache.NewAppender(ctx, b.v1, r.cache, nowMs)
	case t.isV1:
		t.v1.Reset(ctx, b.v1, nowMs)
	case t.v2 == nil:
		t.v2 = refcache.NewAppenderV2(ctx, b.v2, r.cache, nowMs)
	default:
		t.v2.Reset(ctx, b.v2, nowMs)
	}
}

// hasExemplarAppender reports whether the transaction can take exemplars:
// always on the 1.0 appender, and on the 2.0 one only through
// AppendExemplars, without which Prometheus's v0.316.0 handler refuses
// every request.
func (t *Txn) hasExemplarAppender() (bool, any) {
	if t.isV1 {
		return true, t.v1.Wrapped()
	}
	app := t.v2.Wrapped()
	_, ok := app.(exemplarAppenderV2)
	return ok, app
}

func (t *Txn) lookup(s *decode.Series) (refcache.Handle, error) {
	if t.isV1 {
		return t.v1.Lookup(s)
	}
	return t.v2.Lookup(s)
}

func (t *Txn) lookupBatch(series []refcache.SeriesLabels, hs []refcache.Handle, errs []error) {
	if t.isV1 {
		t.v1.LookupBatch(series, hs, errs)
		return
	}
	t.v2.LookupBatch(series, hs, errs)
}

// guessFailed reports whether a series of the transaction was found in
// the cache other than as the guess of the series before it (its first
// series, which has none, aside): the request is not in the order of the
// last one.
func (t *Txn) guessFailed() bool {
	st := t.stats()
	return st.CacheHits-st.Guessed > 1
}

func (t *Txn) lookupTyped(s *typedSeries) (refcache.Handle, error) {
	if t.isV1 {
		return t.v1.Lookup(s)
	}
	return t.v2.Lookup(s)
}

func (t *Txn) appendOrder(hs []refcache.Handle) []int {
	if t.isV1 {
		return t.v1.AppendOrder(hs)
	}
	return t.v2.AppendOrder(hs)
}

// appendFloat appends a float sample. The 1.0 appender takes neither the
// start timestamp (Prometheus's handler, with its ingestSTZeroSample off,
// drops it) nor the options, whose metadata goes in updateMetadata.
func (t *Txn) appendFloat(h *refcache.Handle, st, ts int64, v float64, opts storage.AOptions) error {
	if t.isV1 {
		return t.v1.Append(h, ts, v)
	}
	return t.v2.Append(h, st, ts, v, nil, nil, opts)
}

// appendHistogram appends a histogram or float histogram sample, as
// appendFloat.
func (t *Txn) appendHistogram(h *refcache.Handle, st, ts int64, hist *histogram.Histogram, fh *histogram.FloatHistogram, opts storage.AOptions) error {
	if t.isV1 {
		return t.v1.AppendHistogram(h, ts, hist, fh)
	}
	return t.v2.Append(h, st, ts, 0, hist, fh, opts)
}

// updateMetadata gives a series its metadata on the 1.0 appender, as
// Prometheus's handler up to v0.315 does after the series' exemplars; its
// error only means the series has no metadata, as there.
func (t *Txn) updateMetadata(h *refcache.Handle, m metadata.Metadata) {
	_ = t.v1.UpdateMetadata(h, m)
}

func (t *Txn) commit() error {
	if t.isV1 {
		return t.v1.Commit()
	}
	return t.v2.Commit()
}

func (t *Txn) rollback() error {
	if t.isV1 {
		return t.v1.Rollback()
	}
	return t.v2.Rollback()
}

func (t *Txn) stats() refcache.AppenderStats {
	if t.isV1 {
		return t.v1.Stats()
	}
	return t.v2.Stats()
}

// AppendExemplars appends es to the series of h in the TSDB's own exemplar
// storage, in the request's transaction: on the 2.0 appender through
// AppendExemplars, which takes them sorted by timestamp; on the 1.0
// appender one after the other through AppendExemplar, in the order given,
// as Prometheus's handler up to v0.315 appends them. It returns nil, a
// *storage.AppendPartialError that lists the exemplars refused by their
// index in es, or, on the 2.0 appender, another error if none was taken.
func (t *Txn) AppendExemplars(h *refcache.Handle, es []exemplar.Exemplar) error {
	if !t.isV1 {
		return t.v2.AppendExemplars(h, es)
	}
	var p partialErrors
	for i, e := range es {
		if err := t.v1.AppendExemplar(h, e); err != nil {
			p.add(i, err)
		}
	}
	return p.err()
}

// HasSeries returns nil if the TSDB holds the series of h, and otherwise
// the error, wrapping storage.ErrNotFound, that the head gives the
// exemplars of a series it does not hold.
func (t *Txn) HasSeries(h *refcache.Handle) error {
	if !t.isV1 {
		// The head's own check, with no exemplars.
		return t.v2.AppendExemplars(h, nil)
	}
	// The 1.0 head's AppendExemplar does not check with its exemplar
	// storage off; its GetRef sees the series of the open transaction.
	if g, ok := t.v1.Wrapped().(storage.GetRef); ok {
		if ref, _ := g.GetRef(h.Labels(), h.Hash()); ref == 0 {
			return fmt.Errorf("unknown series when trying to add exemplars: %w", storage.ErrNotFound)
		}
	}
	return nil
}

// partialErrors gathers the exemplars refused by an exemplar appender, by
// their index, into a *storage.AppendPartialError.
type partialErrors struct {
	idx  []int
	errs []error
}

func (p *partialErrors) add(i int, err error) {
	p.idx = append(p.idx, i)
	p.errs = append(p.errs, err)
}

// err returns nil if no error was added, else a *storage.AppendPartialError
// that lists them. Its ExemplarErrors are []error before Prometheus
// v0.316.0 and []storage.ExemplarError, which carry the index, from
// v0.316.0 on; reflection fills either, on this path of refused exemplars
// only.
func (p *partialErrors) err() error {
	if len(p.errs) == 0 {
		return nil
	}
	pe := &storage.AppendPartialError{}
	list := reflect.ValueOf(&pe.ExemplarErrors).Elem()
	elem := list.Type().Elem()
	for k, err := range p.errs {
		v := reflect.New(elem).Elem()
		if elem.Kind() == reflect.Interface {
			v.Set(reflect.ValueOf(err))
		} else {
			v.FieldByName("Index").SetInt(int64(p.idx[k]))
			v.FieldByName("Err").Set(reflect.ValueOf(&err).Elem())
		}
		list.Set(reflect.Append(list, v))
	}
	return pe
}

// exemplarErrors returns the errors listed by a *storage.AppendPartialError
// that err is or wraps, and whether it is one.
func exemplarErrors(err error, dst []error) ([]error, bool) {
	pErr, ok := errors.AsType[*storage.AppendPartialError](err)
	if !ok {
		return dst, false
	}
	for _, e := range pErr.ExemplarErrors {
		// An error before v0.316.0, a storage.ExemplarError, which is one,
		// from then on.
		var err error = e
		dst = append(dst, err)
	}
	return dst, true
}
