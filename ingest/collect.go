package ingest

import (
	"fmt"

	"github.com/prometheus/prometheus/model/metadata"

	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/ingest/refcache"
)

// collectBatch is how many series collect decodes and resolves at a time
// once it resolves them in batches: decode.MaxBatch, as many as refcache's
// LookupBatch resolves together. TestCollectBatches sets it to 1,
// collect's path of one series at a time, to compare the two.
var collectBatch = decode.MaxBatch

// guessCheck is how many series collect resolves one at a time between
// its reads of the transaction's counts (Txn.guessFailed): reading them
// after every series is a cost the path of a sender that keeps its order
// pays on every series (BenchmarkReceive, case=typical-5000).
const guessCheck = 16

// collect reads every series of the request, resolves it in the request's
// transaction and decides whether it is appended, as Prometheus's handler
// decides it, in its order: a 2.0 series whose references do not resolve,
// the handler's limits, the labels' validation (for a series not in the
// cache), a 2.0 series without samples (unless
// Options.AcceptExemplarOnlySeries and it has exemplars), the series limit. Nothing is
// appended: it returns the Decoder's error for a malformed request, which
// is then refused whole.
func (wk *worker) collect(c *requestCounts, v2 bool) error {
	h, d := wk.h, &wk.dec
	// The series are resolved one at a time while the cache's guesses
	// hold, as they do for a sender that keeps its order: each is found as
	// the guess of the one before, with no cache miss to overlap. Once one
	// is found other than by its guess (the sender resharded or
	// relabelled), which collect checks every guessCheck series, the rest
	// of the request is resolved a batch at a time,
	// their cache misses overlapping (refcache's LookupBatch:
	// BenchmarkReceive, case=resharded-50000), so that only the workers of
	// such requests hold the Series of a batch (decode.NextBatch). Series
	// with metadata or type-and-unit labels are resolved one by one.
	canBatch := collectBatch > 1 && (!v2 || !(h.metadata || h.typeUnit))
	st := collectState{active: -1}
	n := 1
	for {
		batch := d.NextBatch(n)
		if len(batch) == 0 {
			break
		}
		wk.checkLimits(batch)
		if st.batched {
			wk.lookupBatch(batch)
		}
		st.looked = 0
		for bi, s := range batch {
			wk.collectSeries(s, bi, &st, c, v2)
		}
		if canBatch && !st.batched && c.series%guessCheck == 0 && wk.tx.guessFailed() {
			st.batched, n = true, collectBatch
		}
	}
	return d.Err()
}

// collectState is what collect carries from one series to the next.
type collectState struct {
	newSeries int // admitted so far, for Options.MaxSeries
	active    int // the tracker's count, read once; -1 until read
	// listed counts the errors of skipped series so far, each of which
	// the response lists or counts before any later series' error. Past
	// maxReportedErrors of them, a series' error is errUnlisted: the
	// response only counts it, so it is not formatted (captured 2.0
	// requests hold thousands of series without samples).
	listed int
	// batched is whether the series are resolved by lookupBatch, and
	// looked the place among the batch's lookups of the next series
	// resolved.
	batched bool
	looked  int
}

// collectSeries is collect for the series s, the bi-th of its batch.
func (wk *worker) collectSeries(s *decode.Series, bi int, st *collectState, c *requestCounts, v2 bool) {
	h := wk.h
	c.series++
	samples, hists := s.Samples(), s.Histograms()
	wk.samples = append(wk.samples, samples...)
	wk.hists = append(wk.hists, hists...)
	r := record{}
	var hd refcache.Handle
	var meta metadata.Metadata
	skip := func(err error, list bool) {
		r.skip = true
		r.invalid = len(samples) + len(hists)
		if list && err != nil {
			wk.preErrs = append(wk.preErrs, err)
			st.listed++
		}
	}
	unlisted := st.listed >= maxReportedErrors
	// refuse skips the series with the error mk makes, or with
	// errUnlisted past maxReportedErrors, without calling mk.
	refuse := func(mk func() error) {
		if unlisted {
			skip(errUnlisted, true)
		} else {
			skip(mk(), true)
		}
	}
	limitErr := wk.limitErrs[bi]
	switch err := s.Err(); {
	case err != nil:
		// 2.0 label or metadata references that do not resolve, or a
		// label longer than the build holds: Prometheus skips the
		// series and answers 400 in the end.
		refuse(func() error { return fmt.Errorf("parsing series: %w", err) })
	case limitErr != nil:
		skip(limitErr, true)
	default:
		if st.batched {
			hd = wk.lookedHs[st.looked]
			if err := wk.lookedErr[st.looked]; err != nil {
				wk.lookupFailed(s, &r, err)
			}
			st.looked++
		} else {
			wk.lookup(s, &hd, &r, &meta, v2)
		}
		if r.skip {
			break
		}
		if !hd.Cached() {
			// Not a series the handler has appended to before:
			// validate its labels as Prometheus's handler does. A
			// cached series passed this when it was first appended,
			// and the cache confirms a hit by comparing every label.
			if err := validateLabels(hd.Labels()); err != nil {
				skip(err, v2)
				hd = refcache.Handle{}
				break
			}
		}
		if v2 && len(samples) == 0 && len(hists) == 0 && !(h.exOnly && hasExemplars(s)) {
			refuse(func() error {
				return fmt.Errorf("TimeSeries must contain at least one sample or histogram for series %v", seriesString(hd.Labels()))
			})
			r.invalid = 0
			hd = refcache.Handle{}
			break
		}
		if h.maxSer > 0 && !hd.Cached() && len(samples)+len(hists) > 0 {
			if st.active < 0 {
				st.active = h.tracker.Active()
			}
			if st.active+st.newSeries >= h.maxSer {
				refuse(func() error {
					return fmt.Errorf("%w: per-tenant series limit of %d exceeded, series %v refused", ErrSeriesLimit, h.maxSer, seriesString(hd.Labels()))
				})
				r.invalid = 0
				c.refused++
				c.refusedSamples += len(samples) + len(hists)
				hd = refcache.Handle{}
				break
			}
			st.newSeries++
		}
		if h.budget != nil && hd.Ref() == 0 && len(samples)+len(hists) > 0 {
			// A series the storage does not hold yet.
			size := 0
			if h.budget.bytesLimit > 0 {
				size = LabelBytes(hd.Labels())
			}
			if !h.budget.admits(c.budgetNew, c.budgetNewBytes, size) {
				refuse(func() error {
					return fmt.Errorf("%w: the storages hold the limit of %d series or %d bytes of labels, series %v refused", ErrSeriesBudget, h.budget.Limit(), h.budget.LabelBytesLimit(), seriesString(hd.Labels()))
				})
				r.invalid = 0
				c.budgetRefused++
				c.budgetRefusedSamples += len(samples) + len(hists)
				hd = refcache.Handle{}
				break
			}
			c.budgetNew++
			c.budgetNewBytes += size
		}
	}
	r.preAfter = len(wk.preErrs)
	if !r.skip {
		if h.ring != nil {
			// Thanos receive routes by the labels in request order.
			wk.replicas = h.ring.Replicas(s.ThanosHash(), wk.replicas[:0])
			for _, i := range wk.replicas {
				wk.owned[i]++
			}
		}
		for _, err := range s.ExemplarErrs() {
			// Skipped by the Decoder, as by Prometheus, which answers
			// 400.
			if unlisted {
				wk.preErrs = append(wk.preErrs, errUnlisted)
				continue
			}
			wk.preErrs = append(wk.preErrs, fmt.Errorf("parsing exemplar for series %v: %w", seriesString(hd.Labels()), err))
		}
		if es := s.Exemplars(); len(es) > 0 {
			wk.exs = append(wk.exs, es...)
		}
	}
	r.samplesEnd, r.histsEnd, r.exsEnd, r.preEnd = len(wk.samples), len(wk.hists), len(wk.exs), len(wk.preErrs)
	wk.recs = append(wk.recs, r)
	wk.handles = append(wk.handles, hd)
	if v2 && h.metadata {
		wk.metas = append(wk.metas, meta)
	}
}

// checkLimits sets wk.limitErrs[i] to the label limits' error of the
// series batch[i], nil for one without an error that passes them or with
// an error of its own (which collectSeries reports first).
func (wk *worker) checkLimits(batch []*decode.Series) {
	h := wk.h
	for i, s := range batch {
		wk.limitErrs[i] = nil
		if s.Err() == nil && h.limits.set {
			wk.limitErrs[i] = h.limits.check(s)
		}
	}
}

// lookupBatch resolves the series of batch without an error that pass the
// label limits (checkLimits) together (refcache's LookupBatch), into
// wk.lookedHs and wk.lookedErr in batch order: what collect's lookup would
// do for each in turn.
func (wk *worker) lookupBatch(batch []*decode.Series) {
	k := 0
	for i, s := range batch {
		if s.Err() != nil || wk.limitErrs[i] != nil {
			continue
		}
		wk.looked[k] = s
		k++
	}
	wk.tx.lookupBatch(wk.looked[:k], wk.lookedHs[:k], wk.lookedErr[:k])
	clear(wk.looked[:k])
}

// hasExemplars reports whether s carries an exemplar, valid or not.
func hasExemplars(s *decode.Series) bool {
	return len(s.ExemplarErrs()) > 0 || len(s.Exemplars()) > 0
}

// lookup resolves s into *hd in the request's transaction, with the labels
// and metadata of Options' features, setting *meta to the metadata the
// series is appended with; a series it cannot resolve is skipped in r.
func (wk *worker) lookup(s *decode.Series, hd *refcache.Handle, r *record, meta *metadata.Metadata, v2 bool) {
	h, a := wk.h, &wk.tx
	// Prometheus's handler reads the metadata before it validates the
	// labels, which its type-and-unit-labels feature rewrites; with
	// metadata-wal-records every append of the series carries it.
	typed := false
	if v2 && (h.metadata || h.typeUnit) {
		if h.metadata {
			*meta, _ = s.OwnedMetadata(&h.metaStrings)
		}
		if m, _ := s.Metadata(); h.typeUnit && needsTypeAndUnit(m) {
			wk.typed.reset(s, m)
			typed = true
		}
	}
	// Each Lookup is given a concrete type, whose calls the compiler
	// resolves: the series as a variable of interface type cost
	// allocations (TestAllocsPerRequest).
	var err error
	if typed {
		*hd, err = a.lookupTyped(&wk.typed)
	} else {
		*hd, err = a.lookup(s)
	}
	if err != nil {
		wk.lookupFailed(s, r, err)
	}
}

// lookupFailed skips s, whose lookup failed with err in r. Not reached:
// Lookup refuses only a series with Err, which collect skips before.
// Should that change, the series is skipped as such a series is.
func (wk *worker) lookupFailed(s *decode.Series, r *record, err error) {
	r.skip = true
	r.invalid = len(s.Samples()) + len(s.Histograms())
	wk.preErrs = append(wk.preErrs, fmt.Errorf("parsing series: %w", err))
}
