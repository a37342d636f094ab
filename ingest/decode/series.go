package decode

import (
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/ingestkit/ingestkit/internal/bytestr"
	"github.com/ingestkit/ingestkit/internal/labelset"
)

// Series is one time series of a request being decoded by a [Decoder]: a
// view of the request buffer and of the Decoder's reused state, valid until
// the Decoder's next Next, NextBatch or Reset (where the documentation of
// its methods says "next Next", read "next Next or NextBatch"). It is not
// safe for concurrent use by multiple goroutines.
type Series struct {
	v2   bool
	syms [][]byte         // the Decoder's symbols table (2.0)
	lb   labelset.Pending // the series' labels

	samples []Sample
	hists   []HistogramSample

	rawEx  [][]byte // the exemplar messages, checked by Next
	ex     []exemplar.Exemplar
	exDone bool // ex holds rawEx materialised
	sc     *seriesScratch

	// The 2.0 metadata fields, checked against syms by Next. The type and
	// the references are truncated from the wire's varints to 32 bits, as
	// the generated code does.
	metaType           int32
	metaHelp, metaUnit uint32

	// 2.0 references that do not resolve: bad for the series' labels or
	// metadata, badEx for exemplars, and the errors Next made of them.
	bad    *decodeError
	badEx  []*decodeError
	err    error
	exErrs []error

	tenant     string // set by Decoder.SetTenant
	withTenant bool
}

// MaxDecoderRetained is the most elements (symbols, labels, samples,
// histograms or exemplars) that a [Decoder] keeps a buffer for from one
// request to the next: 1.5 MiB of samples, 2.5 MiB of labels. Buffers that
// grew larger are dropped at the next [Decoder.Reset] and grown again when
// needed.
const MaxDecoderRetained = 1 << 16

// seriesScratch is what the Series of a Decoder share: state that a
// Series uses within one call and is done with when it returns (the
// labels of one exemplar, before they are built; one histogram message,
// before it is converted), one call at a time on the Decoder's goroutine,
// kept once so that each Series of a batch (NextBatch) need not hold its
// own.
type seriesScratch struct {
	exSet labelset.Set
	// Reused messages that the generated code decodes histograms into.
	h1 prompb.Histogram
	h2 writev2.Histogram
}

// setInterner and setSymbolTable are the Decoder's settings, for the
// label set of s.
func (s *Series) setInterner(in interface{ Intern(b []byte) string }) {
	s.lb.Set.SetInterner(in)
}

func (s *Series) setSymbolTable(t *labels.SymbolTable) {
	s.lb.Set.SetSymbolTable(t)
}

// trim is reset between requests: it also lets go of buffers that grew past
// maxRetained elements.
func (s *Series) trim(maxRetained int) {
	s.lb.Set.Trim(maxRetained)
	// reset keeps the strings of earlier series in the Set's buffers:
	// drop the views of the previous request.
	s.lb.Set.Release()
	if cap(s.samples) > maxRetained {
		s.samples = nil
	}
	if cap(s.lb.Pairs) > maxRetained {
		s.lb.Pairs = nil
	}
	clear(s.lb.Pairs[:cap(s.lb.Pairs)]) // drop the views of the previous request
	if cap(s.hists) > maxRetained {
		s.hists = nil
	}
	if cap(s.rawEx) > maxRetained {
		s.rawEx = nil
	}
	if cap(s.ex) > maxRetained {
		s.ex = nil
	}
	s.reset()
}

// reset makes s ready for the next series. It drops the references the
// previous one held, so that a Decoder does not keep histograms or the
// previous request alive.
func (s *Series) reset() {
	if s.withTenant {
		s.lb.Set.ResetTenant(s.tenant)
	} else {
		s.lb.Set.Reset()
	}
	s.lb.Gathered, s.lb.Sorted = false, false
	s.samples = s.samples[:0]
	clear(s.hists)
	s.hists = s.hists[:0]
	clear(s.rawEx)
	s.rawEx = s.rawEx[:0]
	clear(s.ex)
	s.ex = s.ex[:0]
	s.exDone = false
	s.metaType, s.metaHelp, s.metaUnit = 0, 0, 0
	s.bad, s.err = nil, nil
	clear(s.badEx)
	s.badEx = s.badEx[:0]
	clear(s.exErrs)
	s.exErrs = s.exErrs[:0]
}

// Err returns the error that makes the series unusable, or nil: in a 2.0
// request, a label or metadata reference outside the symbols table, or an
// odd number of label references (wrapping [ErrSymbolRef]). Prometheus's
// handler skips such a series, writes the others and answers 400 with the
// error; a caller does the same. A series with an error has no labels, so
// that one whose caller forgets to check matches nothing: [Series.Equal]
// is false for every label set, [Series.Hash] and [Series.ThanosHash] are
// 0, [Series.Labels] and [Series.ScratchLabels] are empty, RangeLabels
// calls nothing, Metadata reports none, and the appenders of package ingest/refcache
// refuse it with their ErrInvalidSeries. Its samples are decoded but belong to no known
// series.
func (s *Series) Err() error { return s.err }

// ExemplarErrs returns the errors of the series' 2.0 exemplars whose label
// references do not resolve (wrapping [ErrSymbolRef]), one per exemplar,
// in request order. [Series.Exemplars] leaves those exemplars out, as
// Prometheus's handler does before it answers 400. The slice is valid until
// the Decoder's next Next or Reset.
func (s *Series) ExemplarErrs() []error { return s.exErrs }

// Sample is one float sample. StartTimestamp is the 2.0 start_timestamp
// (0 when unset, and always 0 in 1.0, which has no such field). A Sample is
// a plain value, safe for concurrent use by multiple goroutines.
type Sample struct {
	StartTimestamp, Timestamp int64
	Value                     float64
}

// HistogramSample is one native histogram sample. Exactly one of H and FH is
// set: H for an integer histogram, FH for a float histogram, as Prometheus's
// handler chooses with IsFloatHistogram. StartTimestamp is as in [Sample].
// H and FH are fresh allocations that the caller owns and may keep (a TSDB
// head keeps them); their CustomValues and bucket slices are shared by
// nothing else. A HistogramSample is a plain value; the histogram it points
// to is not safe for concurrent use while anything modifies it.
type HistogramSample struct {
	StartTimestamp, Timestamp int64
	H                         *histogram.Histogram
	FH                        *histogram.FloatHistogram
}

// Hash returns [labels.Labels.Hash] of the series' labels, in the labels
// build in use: what Prometheus's ToLabels(...).Hash() returns. The labels
// that [Decoder.Next] gathered are hashed in one pass on the first call to
// it or to another accessor of the labels; labels that arrived out of order
// are sorted and hashed again then. For a series that repeats a
// label name, which Prometheus rejects, the repeated pairs are ordered by
// value, so the hash may differ from that of ToLabels, whose sort leaves
// their order unspecified.
//
// Hash returns 0 for a series with an error ([Series.Err]).
//
// Hash makes no allocation once the Decoder has decoded a series with as
// many labels.
func (s *Series) Hash() uint64 {
	if s.err != nil {
		return 0
	}
	return s.lb.LabelSet().Hash()
}

// tenantHash returns the routing hash of ThanosHash over the series'
// labels sorted by name, computed in the same pass as [Series.Hash]: the
// value hashring.Hash gives for the series' labels.Labels. It equals
// ThanosHash for a series whose labels arrived sorted, as remote write
// requires; the tests compare the two.
func (s *Series) tenantHash() uint64 {
	if s.err != nil {
		return 0
	}
	return s.lb.LabelSet().TenantHash()
}

// ThanosHash returns exactly the routing hash of Thanos receive for the
// tenant given to [Decoder.SetTenant]: labelpb.HashWithPrefix, xxhash over
// "tenant 0xff name 0xff value 0xff ..." of the series' labels in the order
// the request holds them (for 2.0, the order of its label references),
// computed in the same pass as [Series.Hash]. When the request holds them
// sorted by name, as remote write requires, it is also Thanos's hash of
// the series' labels.Labels (what hashring.Hash gives); a receiver places
// every series, sorted or not, where Thanos receive places it by routing
// with ThanosHash. It panics if the Decoder was given no tenant,
// and returns 0 for a series with an error ([Series.Err]).
//
// ThanosHash makes no allocation, as [Series.Hash].
func (s *Series) ThanosHash() uint64 {
	if !s.withTenant {
		panic("decode: Series.ThanosHash without Decoder.SetTenant")
	}
	if s.err != nil {
		return 0
	}
	return s.lb.LabelSet().ArrivalTenantHash()
}

// Equal reports whether the series' labels are exactly ls. A caller that
// found a series by [Series.Hash] confirms the hit with it, without building
// anything. It is false for every ls if the series has an error
// ([Series.Err]), even for the pairs decoded before the bad reference.
//
// Called before the other accessors of the labels, as a cache lookup that
// confirms its guess by the labels and takes the hash from the cache calls
// it, Equal compares the pairs without adding them to the series' label
// set, which only those accessors read: a guess that holds costs the
// comparison alone (BenchmarkReceive in package ingest, typical-500).
//
// Equal makes no allocation, as [Series.Hash].
func (s *Series) Equal(ls labels.Labels) bool { return s.err == nil && s.lb.Equal(ls) }

// Labels builds the series' labels, sorted by name, as Prometheus's ToLabels
// does. It is the only call that copies label bytes: once, or through the
// interner or symbol table the Decoder was given (see
// [Decoder.SetInterner]), so the result never aliases the request buffer.
//
// Labels returns empty labels, which a TSDB rejects, for a series with an
// error ([Series.Err]).
//
// Labels makes one allocation in the default stringlabels build.
func (s *Series) Labels() labels.Labels {
	if s.err != nil {
		return labels.EmptyLabels()
	}
	return s.lb.LabelSet().Labels()
}

// ScratchLabels returns the series' labels, sorted by name, built in a
// buffer that the Decoder reuses: they are valid only until the next
// ScratchLabels, [Series.Labels], [Decoder.Next] or [Decoder.Reset], and may
// alias the request buffer. It is for lookups that compare labels and keep
// nothing, such as storage.GetRef.
//
// ScratchLabels makes no allocation once the buffer has grown (in the
// dedupelabels build, strings new to the symbol table are copied into it, as
// for Labels). They are empty for a series with an error ([Series.Err]).
func (s *Series) ScratchLabels() labels.Labels {
	if s.err != nil {
		return labels.EmptyLabels()
	}
	return s.lb.LabelSet().Scratch()
}

// RangeLabels calls f for each label of the series, sorted by name. The
// strings alias the request buffer: they are valid until the Decoder's next
// Reset, and must be copied to be kept longer.
//
// RangeLabels calls nothing for a series with an error ([Series.Err]). It
// makes no allocation when the labels arrived sorted.
func (s *Series) RangeLabels(f func(name, value string)) {
	if s.err == nil {
		s.lb.LabelSet().Range(f)
	}
}

// Samples returns the series' float samples in request order. The slice is
// reused: it is valid until the Decoder's next Next or Reset.
//
// Samples makes no allocation; they were decoded by [Decoder.Next].
func (s *Series) Samples() []Sample { return s.samples }

// Histograms returns the series' native histogram samples in request order,
// each converted as by Prometheus's ToIntHistogram or ToFloatHistogram. The
// slice is reused and valid until the Decoder's next Next or Reset; the
// histograms it points to are the caller's to keep.
//
// Histograms makes no allocation; [Decoder.Next] decoded them, with the
// allocations Prometheus's own decoding makes for a histogram: the
// histogram, its span, bucket and custom-value slices, and two for the
// count and zero-count fields of the generated message (seven for an
// integer histogram with positive and negative buckets).
func (s *Series) Histograms() []HistogramSample { return s.hists }

// Exemplars returns the series' exemplars in request order (Prometheus's
// handler sorts them by timestamp before appending them), as Prometheus's
// ToExemplar converts them: labels built and sorted by name, copied as in
// [Series.Labels], and HasTs set when the timestamp is not 0. The slice is
// reused and valid until the Decoder's next Next or Reset; the Labels in it
// do not alias the request and may be kept.
//
// Exemplars makes one allocation per exemplar in the default stringlabels
// build (its labels) the first time it is called for a series, and none
// after; a series it is not called for costs no allocation, since
// [Decoder.Next] only checks the exemplar messages (TestDecodeExemplarsAllocs).
// The labels get an allocation each, as Prometheus's ToExemplar gives them,
// because the TSDB head keeps an exemplar's labels as they are in its
// circular exemplar storage until the exemplar is overwritten: labels cut
// from one allocation shared by several exemplars would keep all of them
// alive as long as any one is stored, and duplicates, which the head drops,
// share the allocation with those it keeps. Sharing one per series would
// save nothing on the requests Prometheus sends, which carry each exemplar
// in a series of its own.
func (s *Series) Exemplars() []exemplar.Exemplar {
	if s.exDone {
		return s.ex
	}
	s.exDone = true
	exSet := &s.sc.exSet
	for _, b := range s.rawEx {
		exSet.Reset()
		var e exemplar.Exemplar
		if s.v2 {
			if refs, value, ts, ok := fastExemplarV2(b, s.syms); ok {
				addRefs(exSet, refs, s.syms)
				e.Value, e.Ts = value, ts
			} else {
				e.Value, e.Ts, _ = parseExemplarV2(b, s.syms, exSet)
			}
		} else {
			e.Value, e.Ts, _ = parseExemplarV1(b, exSet)
		}
		// Next checked the message, so the error is nil.
		e.Labels = exSet.Labels()
		e.HasTs = e.Ts != 0
		s.ex = append(s.ex, e)
	}
	return s.ex
}

// Metadata returns the series' 2.0 metadata as Prometheus's ToMetadata
// converts it: the type mapped to a [model.MetricType] (unknown when
// unspecified or out of range), help and unit resolved in the symbols table.
// ok is true for every 2.0 series, including one without metadata, whose
// Metadata then has type unknown and empty help and unit; it is false for a
// 1.0 series (1.0 requests carry metadata per metric family, not per series)
// and for a series with an [Series.Err].
// Help and Unit alias the request buffer: they are valid until the Decoder's
// next Reset and must be copied to be kept longer.
//
// Metadata makes no allocation.
func (s *Series) Metadata() (m metadata.Metadata, ok bool) {
	if !s.v2 || s.bad != nil {
		return metadata.Metadata{}, false
	}
	// Next checked both references against the table.
	return metadata.Metadata{
		Type: metricType(writev2.Metadata_MetricType(s.metaType)),
		Unit: bytestr.String(s.syms[s.metaUnit]),
		Help: bytestr.String(s.syms[s.metaHelp]),
	}, true
}

// OwnedMetadata is [Series.Metadata] with Help and Unit that do not alias
// the request buffer, so that they may be kept: they come from in, or are
// copied if in is nil. An appender may keep the strings of
// storage.AppendV2Options' Metadata (the TSDB head does until the commit),
// so a caller that attaches the metadata to its appends uses this. The
// interner is the caller's choice, and need not be the Decoder's: help
// strings may change while a series' labels do not. in is an interner as for
// [Decoder.SetInterner], such as the Table of package
// github.com/ingestkit/ingestkit/labels.
//
// OwnedMetadata makes no allocation when in holds both strings already,
// nor for empty ones; with a nil in it makes one per non-empty string.
func (s *Series) OwnedMetadata(in interface{ Intern(b []byte) string }) (m metadata.Metadata, ok bool) {
	if !s.v2 || s.bad != nil {
		return metadata.Metadata{}, false
	}
	return metadata.Metadata{
		Type: metricType(writev2.Metadata_MetricType(s.metaType)),
		Unit: own(in, s.syms[s.metaUnit]),
		Help: own(in, s.syms[s.metaHelp]),
	}, true
}

// own returns b as a string that does not alias it, from in if not nil.
func own(in interface{ Intern(b []byte) string }, b []byte) string {
	switch {
	case len(b) == 0:
		return ""
	case in != nil:
		return in.Intern(b)
	}
	return string(b)
}

// metricType maps a 2.0 metric type as Prometheus's ToMetadata does.
func metricType(t writev2.Metadata_MetricType) model.MetricType {
	switch t {
	case writev2.Metadata_METRIC_TYPE_COUNTER:
		return model.MetricTypeCounter
	case writev2.Metadata_METRIC_TYPE_GAUGE:
		return model.MetricTypeGauge
	case writev2.Metadata_METRIC_TYPE_HISTOGRAM:
		return model.MetricTypeHistogram
	case writev2.Metadata_METRIC_TYPE_GAUGEHISTOGRAM:
		return model.MetricTypeGaugeHistogram
	case writev2.Metadata_METRIC_TYPE_SUMMARY:
		return model.MetricTypeSummary
	case writev2.Metadata_METRIC_TYPE_INFO:
		return model.MetricTypeInfo
	case writev2.Metadata_METRIC_TYPE_STATESET:
		return model.MetricTypeStateset
	default:
		return model.MetricTypeUnknown
	}
}
