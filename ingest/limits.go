package ingest

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/internal/labelset"
)

// maxReportedErrors bounds the errors a 400 response lists. Prometheus's
// handler lists every rejected sample with its series' labels, so that a
// 32 MiB request of out-of-order samples makes a response (and a string in
// memory) of hundreds of MiB; the handler lists the first ones and counts
// the rest.
const maxReportedErrors = 16

// labelLimits are the label limits of Options, and the build's own.
type labelLimits struct {
	maxLabels, maxName, maxValue int
	// set is whether an Options limit is set; without one, only the
	// build's limit is checked, on the series new to the cache.
	set bool
}

func newLabelLimits(opts Options) labelLimits {
	l := labelLimits{
		maxLabels: opts.MaxLabelsPerSeries,
		maxName:   min(opts.MaxLabelNameLength, labelset.MaxString),
		maxValue:  min(opts.MaxLabelValueLength, labelset.MaxString),
	}
	l.set = l.maxLabels > 0 || l.maxName > 0 || l.maxValue > 0
	if l.maxName <= 0 {
		l.maxName = labelset.MaxString
	}
	if l.maxValue <= 0 {
		l.maxValue = labelset.MaxString
	}
	return l
}

// check checks a series against the label limits without building its
// labels.
func (l *labelLimits) check(s *decode.Series) error {
	n, long, tooLong := 0, "", false
	s.RangeLabels(func(name, value string) {
		n++
		if !tooLong && (len(name) > l.maxName || len(value) > l.maxValue) {
			long, tooLong = name, true
		}
	})
	if l.maxLabels > 0 && n > l.maxLabels {
		return fmt.Errorf("%w: %d labels, limit %d", ErrTooManyLabels, n, l.maxLabels)
	}
	if tooLong {
		return fmt.Errorf("%w: label %.64q (name limit %d, value limit %d)", ErrLabelTooLong, long, l.maxName, l.maxValue)
	}
	return nil
}

// validateLabels checks a new series' labels as Prometheus's handler does,
// with its error messages.
func validateLabels(ls labels.Labels) error {
	if !ls.Has(model.MetricNameLabel) || !ls.IsValid(model.UTF8Validation) {
		return fmt.Errorf("invalid metric name or labels, got %v", seriesString(ls))
	}
	if dup, has := ls.HasDuplicateLabelNames(); has {
		return fmt.Errorf("invalid labels for series, labels %v, duplicated label %s", seriesString(ls), dup)
	}
	return nil
}

// maxErrorValue is the longest label value that error messages quote in
// full.
const maxErrorValue = 256

// seriesString is ls.String(), what Prometheus's handler puts in its
// errors, but with label values longer than maxErrorValue cut: a 10 MiB
// label value would otherwise be quoted, copied and sent back once for
// every sample of the series that is rejected.
func seriesString(ls labels.Labels) string {
	if LabelBytes(ls) <= 4*maxErrorValue { // ByteSize differs between labels builds
		return ls.String()
	}
	b := labels.NewScratchBuilder(ls.Len())
	ls.Range(func(l labels.Label) {
		if len(l.Value) > maxErrorValue {
			l.Value = l.Value[:maxErrorValue] + "...(" + strconv.Itoa(len(l.Value)) + " bytes)"
		}
		b.Add(l.Name, l.Value)
	})
	return b.Labels().String()
}

// errList collects the errors of a partial write, the first
// maxReportedErrors of them.
type errList struct {
	errs []error
	more int
}

// full reports whether the list holds maxReportedErrors and counts one more
// error that will not be listed; the caller then skips formatting it.
func (l *errList) full() bool {
	if len(l.errs) < maxReportedErrors {
		return false
	}
	l.more++
	return true
}

// errUnlisted stands in a worker's preErrs for an error that the response
// counts but does not list: maxReportedErrors errors come before it in the
// list (see worker.collect).
var errUnlisted = errors.New("error not listed")

func (l *errList) add(err error) {
	if err == errUnlisted {
		l.more++
		return
	}
	if !l.full() {
		l.errs = append(l.errs, err)
	}
}

func (l *errList) len() int { return len(l.errs) + l.more }

func (l *errList) err() error {
	err := errors.Join(l.errs...)
	if l.more > 0 {
		err = fmt.Errorf("%w\n(and %d more errors)", err, l.more)
	}
	return err
}

func (l *errList) reset() {
	clear(l.errs)
	l.errs, l.more = l.errs[:0], 0
}
