package thanos

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/pkg/errors"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/thanos-io/thanos/pkg/receive"
	"github.com/thanos-io/thanos/pkg/store/labelpb"
	"github.com/thanos-io/thanos/pkg/store/storepb/prompb"

	"github.com/ingestkit/ingestkit/ingest/refcache"
	iklabels "github.com/ingestkit/ingestkit/labels"
)

// Writer writes Thanos's remote-write series to a tenant's TSDB, as
// receive.Writer does and with its results, through ingestkit's blocks: each
// series' labels are viewed where they are in the request, as Thanos views
// them, and hashed only if the cache needs the hash (not for a series that
// is the guess of the one before it); the whole request is looked up in
// the tenant's refcache.Cache at once (refcache.Appender.LookupBatch),
// confirmed against the pairs, and asked of the head only for the series
// the cache does not hold; labels are validated (labelpb.ValidateLabels)
// only for those too, as a hit's pairs equal a set validated when it was
// first written; labels are built, in memory of their own, only for a
// series the head does not hold either; and the samples are appended in
// the order the head created their series (refcache.Appender.AppendOrder),
// which reads the head's memory in order whatever the order of the
// request.
//
// What a request does to the TSDB, and the error Write returns, are those
// of Thanos's Writer (v0.42.5) for the same request (TestWriterMatchesThanos):
// series whose labels fail labelpb.ValidateLabels are skipped and counted;
// every sample, histogram and exemplar is appended, and each rejected one
// counted by kind (out of order, duplicate, out of bounds, too old, and
// WriterOptions.TooFarInFutureTimeWindow's out of bounds for float samples,
// as receive.ReceiveAppender has it); a series' exemplars are appended only
// if its last append succeeded (or it had none and the TSDB held it), in
// request order, as Thanos does; the returned error lists the counts in
// Thanos's words and format. It is a *[WriteErrors], not Thanos's
// unexported type, which Thanos's handler classifies as its own (409 for a
// conflict, 503 for a TSDB not ready); a fork that moves this code into
// pkg/receive returns its own writeErrors there.
// Unlike v0.42.5, and like Thanos's main, exemplar labels are copied out of
// the request, so a caller may reuse the request's memory once Write
// returns. The per-sample debug lines of Thanos's Writer are not logged;
// the warnings that sum each kind of rejection up are.
//
// Each tenant gets a cache of its own, bound to the appendable the storage
// returns for it (see [TenantStorage]): a tenant that Thanos's MultiTSDB
// prunes and loads again is a new storage, and its cache starts empty.
//
// A Writer is safe for concurrent use by multiple goroutines; Write may be
// called for the same tenant by several at once.
type Writer struct {
	logger  log.Logger
	storage receive.TenantStorage
	opts    receive.WriterOptions
	intern  iklabels.Interner // nil unless opts.Intern
	caches  tenantCaches
}

// NewWriter returns a Writer over s, such as Thanos's *receive.MultiTSDB,
// with the options of receive.NewWriter (nil: the zero options).
func NewWriter(logger log.Logger, s receive.TenantStorage, opts *receive.WriterOptions) *Writer {
	if opts == nil {
		opts = &receive.WriterOptions{}
	}
	w := &Writer{logger: logger, storage: s, opts: *opts}
	if opts.Intern {
		// Thanos interns with go4.org/intern too.
		w.intern = &iklabels.Go4{}
	}
	w.caches.init()
	return w
}

// Cache returns tenant's cache, or nil; see [TenantStorage.Cache].
func (w *Writer) Cache(tenant string) *refcache.Cache { return w.caches.get(tenant) }

// Purge drops the series not looked up since keepFrom from every tenant's
// cache, and forgets the tenants left with none; see [TenantStorage.Purge].
func (w *Writer) Purge(keepFrom int64) int { return w.caches.purge(keepFrom) }

// writeState is what one Write uses, kept in a tenant's pool between
// requests: the appender over the tenant's cache, and per series looked
// up (every one of the request's) its view, its handle, its lookup or
// validation error, and whether its last append succeeded (or, with none,
// whether the TSDB holds it).
type writeState struct {
	app      *refcache.Appender
	views    []seriesView
	series   []refcache.SeriesLabels
	hs       []refcache.Handle
	errs     []error
	ok       []bool
	exLabels labels.ScratchBuilder
}

// Write appends wreq to tenantID's TSDB and returns the error Thanos's
// receive.Writer.Write returns for it; see [Writer].
func (w *Writer) Write(ctx context.Context, tenantID string, wreq []prompb.TimeSeries) error {
	tLogger := log.With(w.logger, "tenant", tenantID)
	s, err := w.storage.TenantAppendable(tenantID)
	if err != nil {
		return errors.Wrap(err, "get tenant appendable")
	}
	tn := w.caches.tenant(tenantID, s)
	ws, _ := tn.pool.Get().(*writeState)
	if ws == nil {
		ws = &writeState{}
	}
	defer tn.pool.Put(ws)
	db := tn.appendable(s)
	if ws.app == nil {
		ws.app = refcache.NewAppender(ctx, db, tn.cache, time.Now().UnixMilli())
	} else {
		ws.app.Reset(ctx, db, time.Now().UnixMilli())
	}
	if n, ok := ws.app.Wrapped().(notOpened); ok {
		if n.err == tsdb.ErrNotReady {
			return n.err
		}
		return errors.Wrap(n.err, "get appender")
	}
	app := ws.app

	var tracker errorTracker
	if len(ws.views) < len(wreq) {
		ws.views = make([]seriesView, len(wreq))
		for i := range ws.views {
			ws.views[i].intern = w.intern
		}
	}
	n := len(wreq)
	ws.series = slices.Grow(ws.series[:0], n)[:n]
	for i := range wreq {
		ws.views[i].reset(wreq[i].Labels)
		ws.series[i] = &ws.views[i]
	}
	ws.hs = slices.Grow(ws.hs[:0], n)[:n]
	ws.errs = slices.Grow(ws.errs[:0], n)[:n]
	ws.ok = slices.Grow(ws.ok[:0], n)[:n]
	app.LookupBatch(ws.series, ws.hs, ws.errs)
	// Labels are validated as Thanos validates them, but for a series found
	// in the cache: the cache holds only label sets validated before, and a
	// hit is confirmed by comparing every pair in order, so its pairs are
	// such a set. (A series of invalid labels is looked up all the same,
	// and dropped here.)
	for k := range n {
		if ws.errs[k] == nil && !ws.hs[k].Cached() {
			if err := labelpb.ValidateLabels(wreq[k].Labels); err != nil {
				tracker.addLabelsError(err, wreq[k].Labels, tLogger)
				ws.errs[k] = err
			}
		}
	}

	var tooFar model.Time
	if w.opts.TooFarInFutureTimeWindow > 0 {
		tooFar = model.Now().Add(time.Duration(w.opts.TooFarInFutureTimeWindow))
	}
	for _, k := range app.AppendOrder(ws.hs) {
		h, t := &ws.hs[k], &wreq[k]
		if ws.errs[k] != nil {
			// Labels that failed validation (counted above), or that the
			// lookup refused, which a seriesView never has it do.
			ws.ok[k] = false
			continue
		}
		// Thanos appends with the ref of the last append, which is 0
		// after an append that failed: ok is whether it is not.
		ok := h.Ref() != 0
		for _, s := range t.Samples {
			var err error
			if tooFar != 0 && tooFar.Before(model.Time(s.Timestamp)) {
				level.Warn(tLogger).Log("msg", "block metric too far in the future", "lset", h.Labels(), "timestamp", s.Timestamp, "bound", tooFar)
				err = storage.ErrOutOfBounds
			} else {
				err = app.Append(h, s.Timestamp, s.Value)
			}
			ok = err == nil
			tracker.addSampleError(err)
		}
		for _, hp := range t.Histograms {
			var (
				fh *histogram.FloatHistogram
				hh *histogram.Histogram
			)
			if hp.IsFloatHistogram() {
				fh = prompb.FloatHistogramProtoToFloatHistogram(hp)
			} else {
				hh = prompb.HistogramProtoToHistogram(hp)
			}
			err := app.AppendHistogram(h, hp.Timestamp, hh, fh)
			ok = err == nil
			tracker.addSampleError(err)
		}
		ws.ok[k] = ok
	}
	// Exemplars in request order, after every sample: an exemplar storage
	// keeps them in the order they are appended.
	for k := range n {
		t := &wreq[k]
		if len(t.Exemplars) == 0 || ws.errs[k] != nil {
			continue
		}
		if !ws.ok[k] && len(t.Samples)+len(t.Histograms) == 0 {
			// No sample: Thanos appends the exemplars if its GetRef finds
			// the series, which an earlier series of the request may have
			// created since the batch looked it up.
			h, err := app.Lookup(ws.series[k])
			ws.hs[k], ws.ok[k] = h, err == nil && h.Ref() != 0
		}
		if !ws.ok[k] {
			continue
		}
		for _, ex := range t.Exemplars {
			ws.exLabels.Reset()
			for _, l := range ex.Labels {
				ws.exLabels.Add(strings.Clone(l.Name), strings.Clone(l.Value))
			}
			err := app.AppendExemplar(&ws.hs[k], exemplar.Exemplar{
				Labels: ws.exLabels.Labels(), Value: ex.Value, Ts: ex.Timestamp, HasTs: true,
			})
			tracker.addExemplarError(err)
		}
	}
	errs := tracker.collect(tLogger)
	if err := app.Commit(); err != nil {
		errs.add(errors.Wrap(err, "commit samples"))
	}
	// Neither the head's labels nor the request's stay in the pool.
	clear(ws.hs)
	for i := range n {
		ws.views[i].pairs, ws.views[i].view = nil, labels.EmptyLabels()
	}
	return errs.errOrNil()
}

// bytesOf returns the bytes of s, without a copy; they must not be
// changed.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// errorTracker counts what a Write rejects, by kind, as Thanos's
// writeErrorTracker does.
type errorTracker struct {
	labelsOutOfOrder, labelsDuplicates, labelsEmpty                  int
	samplesOutOfOrder, samplesDuplicates, samplesOutOfBounds, tooOld int
	exemplarsOutOfOrder, exemplarsDuplicate, exemplarsLabelLength    int
}

func (a *errorTracker) addLabelsError(err error, ls []labelpb.ZLabel, logger log.Logger) {
	switch err {
	case labelpb.ErrOutOfOrderLabels:
		a.labelsOutOfOrder++
	case labelpb.ErrDuplicateLabels:
		a.labelsDuplicates++
	case labelpb.ErrEmptyLabels:
		a.labelsEmpty++
	default:
		level.Debug(logger).Log("msg", "Error validating labels", "err", err, "lset", labelpb.ZLabelsToPromLabels(ls))
	}
}

// addSampleError counts the error of a sample or histogram append.
func (a *errorTracker) addSampleError(err error) {
	switch {
	case err == nil:
	case errors.Is(err, storage.ErrOutOfOrderSample):
		a.samplesOutOfOrder++
	case errors.Is(err, storage.ErrDuplicateSampleForTimestamp):
		a.samplesDuplicates++
	case errors.Is(err, storage.ErrOutOfBounds):
		a.samplesOutOfBounds++
	case errors.Is(err, storage.ErrTooOldSample):
		a.tooOld++
	}
}

func (a *errorTracker) addExemplarError(err error) {
	switch {
	case err == nil:
	case errors.Is(err, storage.ErrOutOfOrderExemplar):
		a.exemplarsOutOfOrder++
	case errors.Is(err, storage.ErrDuplicateExemplar):
		a.exemplarsDuplicate++
	case errors.Is(err, storage.ErrExemplarLabelLength):
		a.exemplarsLabelLength++
	}
}

// collect returns the errors of the counts, in Thanos's words and order,
// logging a warning for each as Thanos does.
func (a *errorTracker) collect(logger log.Logger) WriteErrors {
	var errs WriteErrors
	if *a == (errorTracker{}) {
		return errs
	}
	for _, c := range []struct {
		n        int
		msg      string
		sentinel error
		what     string
	}{
		{a.labelsOutOfOrder, "Error on series with out-of-order labels", labelpb.ErrOutOfOrderLabels, "series"},
		{a.labelsDuplicates, "Error on series with duplicate labels", labelpb.ErrDuplicateLabels, "series"},
		{a.labelsEmpty, "Error on series with empty label name or value", labelpb.ErrEmptyLabels, "series"},
		{a.samplesOutOfOrder, "Error on ingesting out-of-order samples", storage.ErrOutOfOrderSample, "samples"},
		{a.samplesDuplicates, "Error on ingesting samples with different value but same timestamp", storage.ErrDuplicateSampleForTimestamp, "samples"},
		{a.samplesOutOfBounds, "Error on ingesting samples that are too old or are too far into the future", storage.ErrOutOfBounds, "samples"},
		{a.tooOld, "Error on ingesting samples that are outside of the allowed out-of-order time window", storage.ErrTooOldSample, "samples"},
		{a.exemplarsOutOfOrder, "Error on ingesting out-of-order exemplars", storage.ErrOutOfOrderExemplar, "exemplars"},
		{a.exemplarsDuplicate, "Error on ingesting duplicate exemplars", storage.ErrDuplicateExemplar, "exemplars"},
		{a.exemplarsLabelLength, "Error on ingesting exemplars with label length exceeding maximum limit", storage.ErrExemplarLabelLength, "exemplars"},
	} {
		if c.n > 0 {
			level.Warn(logger).Log("msg", c.msg, "numDropped", c.n)
			errs.add(errors.Wrapf(c.sentinel, "add %d %s", c.n, c.what))
		}
	}
	return errs
}

// WriteErrors are the errors of one [Writer.Write], which it returns when
// there is any. Its Error is that of Thanos's own (unexported) writeErrors:
// the distinct messages, sorted, joined by "; ", after "N errors: " when
// there are several. Its Cause classifies it for Thanos's handler as
// Thanos's does. Its Unwrap returns each error, so that errors.Is finds the
// storage and labelpb sentinels behind them, which Thanos's does not.
type WriteErrors struct {
	errs []error
}

func (e *WriteErrors) add(err error) { e.errs = append(e.errs, err) }

func (e *WriteErrors) errOrNil() error {
	if len(e.errs) == 0 {
		return nil
	}
	return &WriteErrors{errs: e.errs}
}

// Error returns the distinct messages of the errors, as Thanos's
// writeErrors does.
func (e *WriteErrors) Error() string {
	reasons := make([]string, 0, len(e.errs))
	for _, err := range e.errs {
		reasons = append(reasons, err.Error())
	}
	slices.Sort(reasons)
	reasons = slices.Compact(reasons)
	var buf bytes.Buffer
	if len(reasons) > 1 {
		fmt.Fprintf(&buf, "%d errors: ", len(reasons))
	}
	buf.WriteString(strings.Join(reasons, "; "))
	return buf.String()
}

// Unwrap returns the errors.
func (e *WriteErrors) Unwrap() []error { return e.errs }

// Cause returns the error that describes the write's failure best, as
// Thanos's writeErrors.Cause chooses it, for Thanos's handler, which asks
// errors.Cause (github.com/pkg/errors) of a local write's error: of the
// errors' causes, tsdb.ErrNotReady if there is one, else the first that
// Thanos's handler counts as a conflict (a storage sample or exemplar
// error, a labelpb labels error), which it answers 409, else the last
// other one. Thanos's returns its own unexported sentinels for the first
// two; its handler classifies the errors returned here the same.
func (e *WriteErrors) Cause() error {
	var conflict, other error
	for _, err := range e.errs {
		switch c := errors.Cause(err); {
		case c == tsdb.ErrNotReady:
			return c
		case isConflict(c):
			if conflict == nil {
				conflict = c
			}
		default:
			other = c
		}
	}
	if conflict != nil {
		return conflict
	}
	return other
}

// isConflict reports whether Thanos's handler counts err as a conflict.
func isConflict(err error) bool {
	switch err {
	case storage.ErrDuplicateSampleForTimestamp, storage.ErrOutOfOrderSample, storage.ErrOutOfBounds, storage.ErrTooOldSample,
		storage.ErrDuplicateExemplar, storage.ErrOutOfOrderExemplar, storage.ErrExemplarLabelLength,
		labelpb.ErrDuplicateLabels, labelpb.ErrEmptyLabels, labelpb.ErrOutOfOrderLabels:
		return true
	}
	return false
}
