package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/storage"

	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/ingest/refcache"
)

// maxAheadTime is how far in the future a sample or exemplar may be, as in
// Prometheus's write handler (storage/remote/write_handler.go).
const maxAheadTime = 10 * time.Minute

// errTooFarInFuture is what Prometheus's time-limit appender returns for a
// sample or exemplar more than maxAheadTime ahead of the receiver's clock.
var errTooFarInFuture = fmt.Errorf("%w: timestamp is too far in the future", storage.ErrOutOfBounds)

// errNoStorage is answered, with 500, by the WriteHandler of a tenant
// served other than through its TenantWriteHandler.
var errNoStorage = errors.New("ingest: a tenant's WriteHandler serves only through its TenantWriteHandler")

// maxRetained is the most series, samples, histograms or exemplars whose
// buffers a worker keeps from one request to the next, as the Decoder
// keeps its own (decode.MaxDecoderRetained); larger ones, which a larger
// request grew, go to the garbage collector.
const maxRetained = decode.MaxDecoderRetained

// trackBatch is the most series the worker holds for the tracker's
// UpdateBatch before it passes them on (BenchmarkReceive,
// case=typical-20000).
const trackBatch = 64

// worker is the state one request at a time uses, pooled across requests so
// that the decoder, the appenders and the request's buffers keep their
// grown memory.
type worker struct {
	h        *WriteHandler
	st       *binding // the storage of the request; nil: h.st
	dec      decode.Decoder
	tx       Txn
	ex       ExemplarAppender
	errs     errList
	typed    typedSeries // the current series with type and unit labels
	replicas []int
	owned    []int64 // per ring endpoint, for this request

	// The request's series, once collect has read them all: their
	// handles, what collect found out about each (the records), and
	// their samples, histograms and exemplars in flat buffers, each
	// series' between the previous record's ends and its own.
	handles []refcache.Handle
	recs    []record
	samples []decode.Sample
	hists   []decode.HistogramSample
	exs     []exemplar.Exemplar
	// preErrs holds the errors of each series that the request lists
	// before its appends' (recError) and after them (the 2.0 exemplars
	// whose references do not resolve), by record.
	preErrs []error
	// metas holds each series' metadata, by record, when the series of
	// the request are appended with it (2.0, Options.Metadata); empty
	// otherwise.
	metas []metadata.Metadata
	// order is appendOrder's, when it is not refcache's AppendOrder.
	order []int
	// The appends' results, by sample and histogram.
	sampleErrs []error
	histErrs   []error
	// exScratch is appendExemplars' buffer.
	exScratch []error

	// The float series written to since the last flushTracked, for the
	// tracker's UpdateBatch: their hashes and the labels of their handles,
	// in the first tracked elements. Arrays in the worker rather than slices
	// of their own, which would be two more allocations whenever the pool
	// makes a worker (BenchmarkReceive, allocs/op).
	trackHashes [trackBatch]uint64
	trackLabels [trackBatch]labels.Labels
	tracked     int

	// A batch of the Decoder (decode.NextBatch): the label limits' errors
	// by series of the batch (checkLimits), and, once collect resolves
	// batches together (lookupBatch), the series resolved (those without
	// an error) and their handles and errors by position among them.
	// Arrays for the reason above.
	limitErrs [decode.MaxBatch]error
	looked    [decode.MaxBatch]refcache.SeriesLabels
	lookedHs  [decode.MaxBatch]refcache.Handle
	lookedErr [decode.MaxBatch]error
}

// record is one series of the request as collect found it: whether it is
// appended, where its data ends in the worker's buffers, and how its
// appends went.
type record struct {
	// skip is set for a series that is not appended: its labels or
	// metadata did not decode, did not pass a limit or validation, or it
	// has no samples; its error, if the response lists one, is in preErrs.
	skip bool
	// Set by appendAll: whether its appends were made (not stopped).
	appended bool
	// Set by results: whether a sample was written.
	written bool
	// invalid is the samples the series counts as invalid (Stats).
	invalid int
	// samplesEnd, histsEnd and exsEnd are where its samples, histograms
	// and exemplars end in the worker's buffers, and preEnd where its
	// errors end in preErrs: those up to preAfter come before its
	// appends' in the response, the others after.
	samplesEnd, histsEnd, exsEnd int
	preAfter, preEnd             int
	// Set by appendAll: its exemplars written as Prometheus's handler
	// counts them, and the errors of its out-of-order exemplars that a
	// 2.0 response lists.
	exemplarsWritten int
	exErrs           []error
	exMore           int // out-of-order exemplars past the first maxReportedErrors
	// Set by results: the buckets of its last histogram written (-1 if
	// none), for the tracker.
	buckets int
	// A series' metadata, when it is appended with it, is in the worker's
	// metas rather than here: appendAll reads the records in the head's
	// order, not in the order collect wrote them, and a record that fits
	// fewer cache lines is fewer misses (BenchmarkReceive,
	// case=resharded-5000).
}

func (h *WriteHandler) newWorker() *worker {
	wk := &worker{h: h, ex: h.exStore.NewExemplarAppender()}
	wk.newDecoder()
	wk.typed.sb = labels.NewScratchBuilderWithSymbolTable(h.symbols, 0)
	if h.ring != nil {
		wk.owned = make([]int64, h.ring.Len())
	}
	return wk
}

// newDecoder gives the worker a new Decoder, and the garbage collector
// the memory the old one kept.
func (wk *worker) newDecoder() {
	wk.dec = decode.Decoder{}
	wk.dec.SetInterner(&wk.h.strings)
	wk.dec.SetSymbolTable(wk.h.symbols)
	wk.dec.SetMaxExpandedSize(wk.h.maxExpanded)
}

// requestCounts are what one request wrote and saw.
type requestCounts struct {
	remoteapi.WriteResponseStats
	series, invalid                     int
	refused, refusedSamples             int // by Options.MaxSeries
	budgetRefused, budgetRefusedSamples int // by Options.SeriesBudget
	budgetNew, budgetNewBytes           int // new series admitted by Options.SeriesBudget, and their label bytes
}

// write decodes and appends one uncompressed request. It returns what was
// written, and on failure the status to answer and the error, following the
// rules of Prometheus's handler:
//
//   - 1.0 has no partial write: a sample the TSDB rejects fails the request
//     (400 for out-of-order, out-of-bounds, duplicate, too old or an invalid
//     histogram; 500 otherwise) and nothing is written. A series with
//     invalid labels is skipped and the request succeeds. Exemplar errors
//     are ignored.
//   - 2.0 writes what is valid and answers 400 listing what was not:
//     series with invalid labels or no samples, rejected samples and
//     out-of-order exemplars; any other TSDB error is a 500 and nothing is
//     written. The counts are of what was written.
//   - A malformed body writes nothing and is a 400: the whole request is
//     decoded, and its series resolved, before the first append.
//
// A 2.0 series whose label or metadata references do not resolve in the
// symbols table is skipped, and an exemplar whose references do not
// resolve is dropped, with a 400 once the rest is written, as in
// Prometheus. Where it differs: a series over a label limit, or with a
// label longer than the labels build holds, is skipped with a 400 in both
// versions (Prometheus has no such limits, and panics on such a label),
// and error lists are cut at maxReportedErrors.
func (wk *worker) write(ctx context.Context, body []byte, msg remoteapi.WriteMessageType) (_ remoteapi.WriteResponseStats, code int, _ error) {
	h := wk.h
	d := &wk.dec
	if err := d.Reset(body, msg); err != nil {
		return remoteapi.WriteResponseStats{}, http.StatusBadRequest, err
	}
	defer wk.reset(msg)
	if h.ring != nil {
		d.SetTenant(h.tenant)
		clear(wk.owned)
	}
	now := time.Now()
	nowMs := now.UnixMilli()
	// The appender opens the transaction on the storage itself, which binds
	// the cache to it: refs of another storage are never used.
	a := &wk.tx
	b := wk.st
	if b == nil {
		b = &h.st
	}
	if b.v1 == nil && b.v2 == nil {
		// A tenant's WriteHandler served other than by its
		// TenantWriteHandler, which gives each request its storage.
		return remoteapi.WriteResponseStats{}, http.StatusInternalServerError, errNoStorage
	}
	a.open(ctx, h, b, nowMs)
	if ok, app := a.hasExemplarAppender(); !ok {
		_ = a.rollback()
		return remoteapi.WriteResponseStats{}, http.StatusInternalServerError, fmt.Errorf("remote write receiver requires a storage.ExemplarAppenderV2, got %T", app)
	}
	done := false
	defer func() {
		if !done {
			// A panic: the transaction must not stay open, or the head
			// keeps its isolation and never compacts.
			_ = a.rollback()
			wk.ex.Rollback()
		}
	}()
	wk.errs.reset()
	v2 := msg == remoteapi.WriteV2MessageType
	var c requestCounts
	if err := wk.collect(&c, v2); err != nil {
		// Malformed: Prometheus's Unmarshal fails and nothing is written.
		done = true
		_ = a.rollback()
		wk.ex.Rollback()
		return remoteapi.WriteResponseStats{}, http.StatusBadRequest, err
	}
	wk.appendAll(timestamp.FromTime(now.Add(maxAheadTime)), v2)
	code, err, commit := wk.results(&c, v2)
	done = true
	if !commit {
		_ = a.rollback()
		wk.ex.Rollback()
		return remoteapi.WriteResponseStats{}, code, err
	}
	if cerr := a.commit(); cerr != nil {
		wk.ex.Rollback()
		if !v2 {
			return remoteapi.WriteResponseStats{}, v1Status(cerr), cerr
		}
		return remoteapi.WriteResponseStats{}, http.StatusInternalServerError, cerr
	}
	wk.ex.Commit()
	wk.track(nowMs)
	st := &h.stats
	st.samples.Add(int64(c.Samples))
	st.histograms.Add(int64(c.Histograms))
	st.exemplars.Add(int64(c.Exemplars))
	st.series.Add(int64(c.series))
	st.newSeries.Add(int64(a.stats().NewSeries))
	st.invalidSamples.Add(int64(c.invalid))
	st.refusedSeries.Add(int64(c.refused))
	st.refusedSamples.Add(int64(c.refusedSamples))
	if h.budget != nil {
		h.budget.add(c.budgetNew, c.budgetNewBytes)
		st.budgetSeries.Add(int64(c.budgetRefused))
		st.budgetSamples.Add(int64(c.budgetRefusedSamples))
	}
	for i, n := range wk.owned {
		if n != 0 {
			st.owned[i].Add(n)
		}
	}
	return c.WriteResponseStats, code, err
}

// appendAll appends the series collect kept, in the order of appendOrder,
// refcache's AppendOrder where nothing else depends on the order: the
// head then reads its series in the order it allocated them, which a
// request in an order of its own would make it read in no order
// (BenchmarkReceive, case=resharded-5000). The head accepts or rejects a
// sample by the state of its series alone, so this gives every result
// that request order gives; each series' samples, histograms and
// exemplars keep their order, and so do series of the same ref. Every
// result is recorded by sample, histogram and series, for results to
// read in request order.
//
// A request that ends at an error (any error in 1.0, one other than a
// rejection in 2.0) is rolled back: once one series meets such an error,
// the series after it in request order are not appended, as Prometheus's
// handler stops there.
func (wk *worker) appendAll(maxTime int64, v2 bool) {
	a := &wk.tx
	wk.sampleErrs = slices.Grow(wk.sampleErrs[:0], len(wk.samples))[:len(wk.samples)]
	wk.histErrs = slices.Grow(wk.histErrs[:0], len(wk.hists))[:len(wk.hists)]
	clear(wk.sampleErrs)
	clear(wk.histErrs)
	exemplarsFirst := a.isV1 && !v2 // Prometheus's 1.0 handler up to v0.315 (Txn)
	stop := len(wk.recs)
	withMeta := len(wk.metas) > 0
	for _, i := range wk.appendOrder(v2) {
		r := &wk.recs[i]
		if r.skip || i > stop {
			continue
		}
		r.appended = true
		hd := &wk.handles[i]
		var opts storage.AOptions
		if withMeta {
			opts.Metadata = wk.metas[i]
		}
		var s0, h0, e0 int
		if i > 0 {
			p := &wk.recs[i-1]
			s0, h0, e0 = p.samplesEnd, p.histsEnd, p.exsEnd
		}
		failed := false
		for j := s0; j < r.samplesEnd && !failed; j++ {
			smp := &wk.samples[j]
			err := errTooFarInFuture
			if smp.Timestamp <= maxTime {
				err = a.appendFloat(hd, smp.StartTimestamp, smp.Timestamp, smp.Value, opts)
			}
			wk.sampleErrs[j] = err
			failed = endsFloat(err, v2)
		}
		if !failed && exemplarsFirst && e0 < r.exsEnd {
			r.exemplarsWritten = wk.appendExemplars(r, hd, wk.exs[e0:r.exsEnd], maxTime, v2)
		}
		for j := h0; j < r.histsEnd && !failed; j++ {
			err := appendHistogram(a, hd, maxTime, wk.hists[j], opts)
			wk.histErrs[j] = err
			failed = endsHistogram(err, v2)
		}
		if failed {
			// The request ends here, unless a series before it in request
			// order ends it before: those after it need not be appended.
			stop = min(stop, i)
			continue
		}
		if !exemplarsFirst && e0 < r.exsEnd {
			r.exemplarsWritten = wk.appendExemplars(r, hd, wk.exs[e0:r.exsEnd], maxTime, v2)
		}
		if a.isV1 && v2 && wk.h.metadata {
			// After the exemplars, as Prometheus's handler up to v0.315.
			a.updateMetadata(hd, opts.Metadata)
		}
	}
}

// appendOrder returns the order in which appendAll appends the request's
// series: refcache's AppendOrder, but for the series whose appends leave
// traces in the order they are made, which keep their request order
// relative to one another, as Prometheus's handler appends them:
//
//   - with AppendMetadata, a 2.0 request's metadata, whose WAL records the
//     head writes in the order of the appends: every series of the
//     request, then, is appended in request order (the differential case
//     "v2 resharded with metadata");
//   - exemplars, which an exemplar storage (the head's circular one, or an
//     ExemplarRing) keeps in the order it is given them and evicts oldest
//     first (TestDifferentialExemplarEviction).
//
// The series between two series with exemplars are appended in
// AppendOrder among themselves. The returned slice is valid until the
// next call.
func (wk *worker) appendOrder(v2 bool) []int {
	n := len(wk.recs)
	if v2 && wk.h.metadata {
		wk.order = wk.order[:0]
		for i := range n {
			wk.order = append(wk.order, i)
		}
		return wk.order
	}
	if len(wk.exs) == 0 {
		return wk.tx.appendOrder(wk.handles)
	}
	wk.order = wk.order[:0]
	start, e0 := 0, 0
	for i := range wk.recs {
		if e := wk.recs[i].exsEnd; e != e0 {
			// Series i has exemplars: the series since the last such one
			// go first, then it.
			e0 = e
			wk.orderRange(start, i)
			wk.order = append(wk.order, i)
			start = i + 1
		}
	}
	wk.orderRange(start, n)
	return wk.order
}

// orderRange adds the series from start to end, in AppendOrder, to
// wk.order.
func (wk *worker) orderRange(start, end int) {
	if end-start < 2 {
		for i := start; i < end; i++ {
			wk.order = append(wk.order, i)
		}
		return
	}
	for _, j := range wk.tx.appendOrder(wk.handles[start:end]) {
		wk.order = append(wk.order, start+j)
	}
}

// endsFloat reports whether err, the result of appending a float sample,
// ends the request: any error in 1.0, one other than a rejection in 2.0.
func endsFloat(err error, v2 bool) bool {
	if err == nil || isPartial(err) {
		return false
	}
	return !v2 || !isSampleRejection(err)
}

// endsHistogram is endsFloat for a histogram sample, which 2.0 also
// rejects for its own validation errors.
func endsHistogram(err error, v2 bool) bool {
	return endsFloat(err, v2) && (!v2 || !isHistogramValidationError(err))
}

func isPartial(err error) bool { return errors.Is(err, (*storage.AppendPartialError)(nil)) }

// results reads the appends' results in request order, as Prometheus's
// handler meets them: it counts what was written, lists the rejections of
// a 2.0 partial write, and returns the status and error that end the
// request at the first error that does. commit says whether what was
// appended is to be committed (true for success and for partial writes).
func (wk *worker) results(c *requestCounts, v2 bool) (code int, _ error, commit bool) {
	exemplarsFirst := wk.tx.isV1 && !v2
	var s0, h0, p0 int
	for i := range wk.recs {
		r := &wk.recs[i]
		hd := &wk.handles[i]
		for _, err := range wk.preErrs[p0:r.preAfter] {
			wk.errs.add(err)
		}
		c.invalid += r.invalid
		r.buckets = -1
		if r.appended {
			for _, err := range wk.sampleErrs[s0:r.samplesEnd] {
				w, code, err, ok := wk.sampleResult(c, hd, err, v2)
				if !ok {
					return code, err, false
				}
				r.written = r.written || w
			}
			if exemplarsFirst {
				c.Exemplars += r.exemplarsWritten
			}
			for j, err := range wk.histErrs[h0:r.histsEnd] {
				if err == nil || isPartial(err) {
					c.Histograms++
					r.written = true
					hs := &wk.hists[h0+j]
					if hs.H != nil {
						r.buckets = len(hs.H.PositiveBuckets) + len(hs.H.NegativeBuckets)
					} else {
						r.buckets = len(hs.FH.PositiveBuckets) + len(hs.FH.NegativeBuckets)
					}
					continue
				}
				if !v2 {
					return v1Status(err), err, false
				}
				if !isSampleRejection(err) && !isHistogramValidationError(err) {
					return http.StatusInternalServerError, err, false
				}
				if !wk.errs.full() {
					wk.errs.add(fmt.Errorf("%w for series %v", err, seriesString(hd.Labels())))
				}
			}
			for _, err := range wk.preErrs[r.preAfter:r.preEnd] {
				wk.errs.add(err)
			}
			if !exemplarsFirst {
				c.Exemplars += r.exemplarsWritten
			}
			for _, err := range r.exErrs {
				wk.errs.add(err)
			}
			// Past maxReportedErrors of r's own, so past the list's.
			wk.errs.more += r.exMore
		}
		s0, h0, p0 = r.samplesEnd, r.histsEnd, r.preEnd
	}
	if wk.errs.len() > 0 {
		return http.StatusBadRequest, wk.errs.err(), true
	}
	return 0, nil, true
}

// track passes the series written by a committed request to the tracker
// of active series, if the handler has one: a float series with the
// others, in batches of UpdateBatch; a histogram series, after the float
// ones before it, with its bucket count.
func (wk *worker) track(nowMs int64) {
	tr := wk.h.tracker
	if tr == nil {
		return
	}
	for i := range wk.recs {
		r := &wk.recs[i]
		if !r.written {
			continue
		}
		hd := &wk.handles[i]
		if r.buckets >= 0 {
			wk.flushTracked(nowMs)
			tr.UpdateHistogram(hd.Hash(), hd.Labels(), r.buckets, nowMs)
			continue
		}
		n := wk.tracked
		wk.trackHashes[n], wk.trackLabels[n] = hd.Hash(), hd.Labels()
		if wk.tracked = n + 1; wk.tracked == trackBatch {
			wk.flushTracked(nowMs)
		}
	}
	wk.flushTracked(nowMs)
}

// flushTracked passes the series that track holds to the tracker.
func (wk *worker) flushTracked(nowMs int64) {
	n := wk.tracked
	if n == 0 {
		return
	}
	wk.h.tracker.UpdateBatch(wk.trackHashes[:n], wk.trackLabels[:n], nowMs)
	// The labels are the TSDB's: not kept past the request.
	clear(wk.trackLabels[:n])
	wk.tracked = 0
}

// reset forgets the request: the decoder's buffer, and the records and
// buffers the worker keeps for the next request, up to maxRetained of
// each.
func (wk *worker) reset(msg remoteapi.WriteMessageType) {
	wk.dec.Reset(nil, msg) // let go of the pooled buffer
	clear(wk.recs)         // their exemplar errors
	clear(wk.handles)      // the labels they hold
	clear(wk.hists)
	clear(wk.exs)
	clear(wk.preErrs)
	clear(wk.metas)
	clear(wk.sampleErrs)
	clear(wk.histErrs)
	wk.handles, wk.recs, wk.samples, wk.hists, wk.exs = wk.handles[:0], wk.recs[:0], wk.samples[:0], wk.hists[:0], wk.exs[:0]
	wk.order, wk.metas = wk.order[:0], wk.metas[:0]
	wk.preErrs, wk.sampleErrs, wk.histErrs = wk.preErrs[:0], wk.sampleErrs[:0], wk.histErrs[:0]
	if cap(wk.handles) > maxRetained || cap(wk.recs) > maxRetained || cap(wk.order) > maxRetained {
		wk.handles, wk.recs, wk.order = nil, nil, nil
	}
	if cap(wk.metas) > maxRetained {
		wk.metas = nil
	}
	if cap(wk.samples) > maxRetained || cap(wk.sampleErrs) > maxRetained {
		wk.samples, wk.sampleErrs = nil, nil
	}
	if cap(wk.hists) > maxRetained || cap(wk.histErrs) > maxRetained {
		wk.hists, wk.histErrs = nil, nil
	}
	if cap(wk.exs) > maxRetained || cap(wk.preErrs) > maxRetained {
		wk.exs, wk.preErrs = nil, nil
	}
}

// sampleResult does with err, the result of appending a float sample of
// h, what Prometheus's handler does: it reports whether the sample was
// written, counting it; or adds the rejection to a 2.0 partial write; or,
// for any error in 1.0 and one other than a rejection in 2.0, returns ok
// false with the status and the error that end the request.
func (wk *worker) sampleResult(c *requestCounts, h *refcache.Handle, err error, v2 bool) (written bool, code int, _ error, ok bool) {
	if err == nil || isPartial(err) {
		c.Samples++
		return true, 0, nil, true
	}
	if !v2 {
		return false, v1Status(err), err, false
	}
	if !isSampleRejection(err) {
		return false, http.StatusInternalServerError, err, false
	}
	if !wk.errs.full() {
		wk.errs.add(fmt.Errorf("%w for series %v", err, seriesString(h.Labels())))
	}
	return false, 0, nil, true
}

// v1Status is the status Prometheus's 1.0 handler answers an append error
// with.
func v1Status(err error) int {
	if isSampleRejection(err) || isHistogramValidationError(err) {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// isSampleRejection reports the errors for which Prometheus's handler
// rejects a sample as a bad request.
func isSampleRejection(err error) bool {
	return errors.Is(err, storage.ErrOutOfOrderSample) ||
		errors.Is(err, storage.ErrOutOfBounds) ||
		errors.Is(err, storage.ErrDuplicateSampleForTimestamp) ||
		errors.Is(err, storage.ErrTooOldSample)
}

func isHistogramValidationError(err error) bool {
	var e histogram.Error
	return errors.As(err, &e)
}

// appendHistogram appends one native histogram sample as Prometheus's
// time-limit appender does: rejected if too far ahead, reduced to the
// largest exponential schema if its schema is a reserved larger one.
func appendHistogram(a *Txn, h *refcache.Handle, maxTime int64, hs decode.HistogramSample, opts storage.AOptions) error {
	if hs.Timestamp > maxTime {
		return errTooFarInFuture
	}
	if hs.H != nil && histogram.IsExponentialSchemaReserved(hs.H.Schema) && hs.H.Schema > histogram.ExponentialSchemaMax {
		if err := hs.H.ReduceResolution(histogram.ExponentialSchemaMax); err != nil {
			return err
		}
	}
	if hs.FH != nil && histogram.IsExponentialSchemaReserved(hs.FH.Schema) && hs.FH.Schema > histogram.ExponentialSchemaMax {
		if err := hs.FH.ReduceResolution(histogram.ExponentialSchemaMax); err != nil {
			return err
		}
	}
	return a.appendHistogram(h, hs.StartTimestamp, hs.Timestamp, hs.H, hs.FH, opts)
}

// appendExemplars stores the exemplars es of the series h, r's, and
// returns how many were written, as Prometheus's handler counts them: those
// too far ahead dropped, the rest given to the ExemplarAppender, sorted by
// timestamp on the 2.0 appender and in request order on the 1.0 one (Txn);
// an out-of-order exemplar is a bad request in 2.0, recorded in r, other
// errors only lose the exemplars. es is the worker's, reordered in place.
func (wk *worker) appendExemplars(r *record, h *refcache.Handle, es []exemplar.Exemplar, maxTime int64, v2 bool) int {
	valid := len(es)
	if wk.tx.isV1 {
		// Refused one by one by the handler's time limit.
		valid = 0
		for _, e := range es {
			if e.Ts <= maxTime {
				es[valid] = e
				valid++
			}
		}
	} else {
		slices.SortFunc(es, exemplar.Compare)
		// Sorted, so those too far ahead come last.
		for valid > 0 && es[valid-1].Ts > maxTime {
			valid--
		}
	}
	if valid == 0 {
		return 0
	}
	err := wk.ex.AppendExemplars(&wk.tx, h, es[:valid])
	if err == nil {
		return valid
	}
	var ok bool
	wk.exScratch, ok = exemplarErrors(err, wk.exScratch[:0])
	if !ok {
		return 0 // Prometheus logs it and counts none; so does the handler
	}
	for _, e := range wk.exScratch {
		switch {
		case !v2 || !errors.Is(e, storage.ErrOutOfOrderExemplar):
		case len(r.exErrs) < maxReportedErrors:
			r.exErrs = append(r.exErrs, fmt.Errorf("%w for series %v", e, seriesString(h.Labels())))
		default:
			r.exMore++
		}
	}
	n := max(0, valid-len(wk.exScratch))
	clear(wk.exScratch)
	return n
}
