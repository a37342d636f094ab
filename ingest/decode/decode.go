package decode

import (
	"fmt"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ingestkit/ingestkit/internal/bytestr"
	"github.com/ingestkit/ingestkit/internal/labelset"
)

// Decoder walks an uncompressed remote-write request, a 1.0
// prometheus.WriteRequest or a 2.0 io.prometheus.write.v2.Request, and yields
// its time series one at a time, without copying: label names and values,
// and 2.0 symbols, stay views of the request buffer until a caller asks for
// [labels.Labels]. Each series' [labels.Labels.Hash] is computed while its
// labels are decoded, so that a caller can find the series it already has by
// hash, confirm with [Series.Equal], and build labels only for new series.
//
// The results are those of Prometheus's own receiver, which unmarshals the
// request with the generated gogo-protobuf code and converts each part with
// ToLabels, ToIntHistogram, ToFloatHistogram, ToExemplar and ToMetadata;
// differential tests check this on random and captured requests. Unknown
// fields are skipped. Two things differ:
//
//   - A request is decoded as it is walked, so [Decoder.Next] may yield
//     series before it finds that a later part of the request is malformed.
//     A caller that must not act on a malformed request acts on the series
//     in a way it can undo (an appender rolls back when [Decoder.Err] is not
//     nil).
//   - The Decoder follows the protobuf encoding strictly where the generated
//     code is lenient, and reports [ErrMalformed] for: a varint whose tenth
//     byte overflows 64 bits (gogo drops the extra bits), a field number
//     beyond 2^31-1 (gogo truncates it to 32 bits), a group of unknown fields
//     whose end marker does not match its start, or that holds field number
//     0, or that nests deeper than protowire's limit, and a packed
//     labels_refs field whose last varint runs past the field's end (gogo
//     reads on into the next field). No encoder produces these.
//
// A 2.0 series whose label or metadata references do not resolve in the
// symbols table (or that has an odd number of label references) is yielded
// with [Series.Err] set, and the walk goes on, so that a caller can skip it
// and write the others as Prometheus's handler does; an exemplar whose
// references do not resolve is left out of [Series.Exemplars] and reported
// by [Series.ExemplarErrs].
//
// The zero value is ready to use. A Decoder is meant to be reused, one per
// goroutine: once it has decoded requests of a given shape, decoding another
// like them makes no allocation for float samples (see [Decoder.Next]). Its
// memory is that of the largest request it has seen, up to
// [MaxDecoderRetained] elements a buffer: a Reset after a larger one lets
// go of that buffer, so that one hostile request (a 2.0 request of empty
// symbols costs 24 bytes per 2-byte symbol while it is decoded) does not
// stay in the memory of a pooled Decoder.
// Under the purego build tag the views are copies, and the allocation counts
// documented here do not hold. A Decoder must not be copied after first use
// (go vet reports copies): a copy would share its reused buffers. It is not
// safe for concurrent use by multiple goroutines.
type Decoder struct {
	_    noCopy
	buf  []byte // the request, capacity clipped to its length for fail's offsets
	msg  remoteapi.WriteMessageType
	v2   bool
	long bool     // buf is long enough to hold a label the build cannot (checkLengths)
	rest []byte   // the top-level fields not read yet
	err  error    // the first error
	n    int      // the number of series yielded, for error messages
	syms [][]byte // 2.0: the symbols table, views of buf
	s    Series
	sc   seriesScratch // what every Series of the Decoder shares
	// win holds the series of NextBatch after the first, which is s; made
	// as a batch first needs them and kept, configured as s is. batch is
	// NextBatch's result.
	win   []*Series
	batch []*Series
	// The settings every series of the window gets (SetInterner,
	// SetSymbolTable).
	interner interface{ Intern(b []byte) string }
	symtab   *labels.SymbolTable
	// maxExpanded bounds expanded, the label bytes of the 2.0 series
	// yielded so far (SetMaxExpandedSize); 0 means no limit.
	maxExpanded, expanded int64
}

// SetMaxExpandedSize bounds the label bytes of a remote-write 2.0 request:
// the sum over its series of the lengths of their label names and values
// and of their metadata's help and unit, symbol references resolved. Next
// fails with [ErrExpandedTooLarge] at the series that goes past max, before
// yielding it. Zero or less means no limit, which is the default. A 1.0
// request carries its strings inline, so that the snappy-decoded size
// already bounds it; the limit is not applied to it. The limit holds for
// every request that Reset starts after it is set.
func (d *Decoder) SetMaxExpandedSize(max int64) { d.maxExpanded = max }

// SetInterner makes [Series.Labels] and the exemplar labels of
// [Series.Exemplars] take label strings from in where the labels build keeps
// strings apart (slicelabels). The default stringlabels build copies every
// label set into one string and the dedupelabels build keeps strings in its
// [labels.SymbolTable], so there the interner is not used. A nil in means no
// interner.
//
// The method set of in is that of the Interner of package
// github.com/ingestkit/ingestkit/labels, spelled out here so that this
// package need not import that one, and its interners (Table, Unique, Go4)
// satisfy it: in.Intern(b) returns a canonical string for b, does not retain
// b, and returns a string that does not alias b. An interner used by one Decoder is called from that Decoder's
// goroutine only; one shared by several Decoders must be safe for concurrent
// use by multiple goroutines.
func (d *Decoder) SetInterner(in interface{ Intern(b []byte) string }) {
	d.interner = in
	d.sc.exSet.SetInterner(in)
	d.s.setInterner(in)
	for _, s := range d.win {
		s.setInterner(in)
	}
}

// SetSymbolTable sets the symbol table that [Series.Labels] and
// [Series.Exemplars] use in the dedupelabels build, typically the one of the
// TSDB head the labels are for. Without one, the Decoder makes its own on
// first use, which then holds every distinct string the Decoder has built
// labels from for as long as the Decoder lives. Other builds ignore it.
func (d *Decoder) SetSymbolTable(t *labels.SymbolTable) {
	d.symtab = t
	d.sc.exSet.SetSymbolTable(t)
	d.s.setSymbolTable(t)
	for _, s := range d.win {
		s.setSymbolTable(t)
	}
}

// SetTenant makes the Decoder compute, for each series that the following
// calls to [Decoder.Next] yield, the routing hash of the Thanos receive
// hashring for tenant alongside the Prometheus hash: see
// [Series.ThanosHash]. It costs a second hash of every label pair. The
// tenant applies until the next SetTenant.
func (d *Decoder) SetTenant(tenant string) {
	d.s.tenant, d.s.withTenant = tenant, true
	for _, s := range d.win {
		s.tenant, s.withTenant = tenant, true
	}
}

// Reset starts decoding buf, an uncompressed request of type msg, which is
// [remoteapi.WriteV1MessageType] or [remoteapi.WriteV2MessageType] (the
// values of Prometheus's remote-write config ProtobufMessage); any other
// type is an error wrapping [ErrMessageType]. For a 2.0 request Reset reads
// the top-level fields once to index the symbols table, which may come
// anywhere among them; an error there (wrapping [ErrMalformed]) is returned
// and is also [Decoder.Err].
//
// The Decoder retains buf, and the strings and slices it hands out alias it,
// until the next Reset: the caller must not change buf until then. Reset(nil,
// msg) lets go of the previous buffer.
//
// Reset makes no allocation once the Decoder has seen a symbols table as
// large.
func (d *Decoder) Reset(buf []byte, msg remoteapi.WriteMessageType) error {
	d.buf = buf[:len(buf):len(buf)]
	d.rest = d.buf
	d.msg = msg
	d.err = nil
	d.n = 0
	d.expanded = 0
	if cap(d.syms) > MaxDecoderRetained {
		d.syms = nil
	} else {
		clear(d.syms) // drop the views of the previous request
		d.syms = d.syms[:0]
	}
	d.sc.exSet.Trim(MaxDecoderRetained)
	d.sc.exSet.Release()
	d.s.trim(MaxDecoderRetained)
	for _, s := range d.win {
		s.trim(maxBatchRetained)
	}
	clear(d.batch[:cap(d.batch)])
	d.batch = d.batch[:0]
	d.long = len(buf) > labelset.MaxString
	switch msg {
	case remoteapi.WriteV1MessageType:
		d.v2 = false
	case remoteapi.WriteV2MessageType:
		d.v2 = true
		if e := d.indexSymbols(); e != nil {
			d.fail(e)
		}
	default:
		d.buf, d.rest = nil, nil
		d.err = fmt.Errorf("decoding %q: %w", string(msg), ErrMessageType)
	}
	d.s.v2, d.s.syms = d.v2, d.syms
	for _, s := range d.win {
		s.v2, s.syms = d.v2, d.syms
	}
	return d.err
}

// Next advances to the next time series of the request and reports whether
// there is one. It returns false at the end of the request or on the first
// error, which [Decoder.Err] then returns.
//
// Next decodes the whole series: it gathers its labels (which the first
// accessor that needs them, such as [Series.Hash], adds to the series' hash
// in one pass), decodes its float samples into a reused slice and its native histograms,
// and checks its exemplars and metadata, so that every accessor of [Series]
// is infallible. It makes no allocation for a series of float samples once
// the Decoder has decoded a series with as many labels and samples;
// converting a native histogram makes the allocations of Prometheus's
// ToIntHistogram or ToFloatHistogram and of the generated code's Unmarshal
// (see [Series.Histograms]).
func (d *Decoder) Next() bool {
	v, ok := d.nextSeries()
	return ok && d.series(&d.s, v)
}

// MaxBatch is the most series [Decoder.NextBatch] yields at a time: as
// many as a batch lookup of package ingest/refcache resolves together.
const MaxBatch = 64

// maxBatchRetained is MaxDecoderRetained for each series of a batch after
// the first, so that a Decoder's batches keep at most twice what Next's
// series keeps from one request to the next.
const maxBatchRetained = MaxDecoderRetained / MaxBatch

// NextBatch advances over the next series of the request, up to n of them
// (at most [MaxBatch]; n < 1 is taken as 1), and returns them in request
// order: each as [Decoder.Next] would have yielded it, in a Series of its
// own, so that a caller can hold several at once (to resolve them together
// with the LookupBatch of package ingest/refcache, whose cache misses then
// overlap). It returns fewer than n at the end of the request or at the
// first error, which [Decoder.Err] then returns, and none past either.
//
// The slice and its Series are valid until the next call to NextBatch,
// Next or [Decoder.Reset]; the first Series is the one [Decoder.Series]
// returns. The Decoder makes each Series of a batch once, as its batches
// first grow to that size, and reuses them: each holds its own label set
// and buffers (what Series shares with the others of its Decoder, it
// shares). Their buffers are let go as Next's are, past a smaller size for
// all but the first (MaxDecoderRetained divided by MaxBatch).
func (d *Decoder) NextBatch(n int) []*Series {
	n = min(max(n, 1), MaxBatch)
	d.batch = d.batch[:0]
	for len(d.batch) < n {
		v, ok := d.nextSeries()
		if !ok {
			break
		}
		s := d.window(len(d.batch))
		if !d.series(s, v) {
			break
		}
		d.batch = append(d.batch, s)
	}
	return d.batch
}

// window returns the Series that holds the i-th series of a batch, made
// and configured as d.s the first time.
func (d *Decoder) window(i int) *Series {
	if i == 0 {
		return &d.s
	}
	for len(d.win) < i {
		s := &Series{v2: d.v2, syms: d.syms, tenant: d.s.tenant, withTenant: d.s.withTenant}
		s.setInterner(d.interner)
		s.setSymbolTable(d.symtab)
		d.win = append(d.win, s)
	}
	return d.win[i-1]
}

// nextSeries advances to the next time series of the request and returns
// its message, or false at the end of the request or on an error.
func (d *Decoder) nextSeries() ([]byte, bool) {
	if d.err != nil {
		return nil, false
	}
	seriesField, seriesTag := v1FieldTimeseries, tagV1Timeseries
	if d.v2 {
		seriesField, seriesTag = v2FieldTimeseries, tagV2Timeseries
	}
	for len(d.rest) > 0 {
		at := d.rest
		switch at[0] { // the fast paths of decode_fast.go
		case seriesTag:
			if v, n, ok := shortBytes(at[1:]); ok {
				d.rest = at[1+n:]
				return v, true
			}
		case tagV2Symbols: // 2.0 symbols, which Reset has indexed; in 1.0 an unknown field, skipped all the same
			if _, n, ok := shortBytes(at[1:]); ok {
				d.rest = at[1+n:]
				continue
			}
		}
		num, typ, n := protowire.ConsumeTag(at)
		if n < 0 {
			d.fail(parseError("field tag", at, n))
			return nil, false
		}
		b := at[n:]
		switch {
		case num == seriesField:
			if typ != protowire.BytesType {
				d.fail(wireTypeError("timeseries", at, typ))
				return nil, false
			}
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				d.fail(parseError("timeseries", at, n))
				return nil, false
			}
			d.rest = b[n:]
			return v, true
		case !d.v2 && num == v1FieldMetadata:
			// Prometheus's handler ignores 1.0 metadata, but its Unmarshal
			// rejects a malformed one; so does the Decoder.
			if typ != protowire.BytesType {
				d.fail(wireTypeError("metadata", at, typ))
				return nil, false
			}
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				d.fail(parseError("metadata", at, n))
				return nil, false
			}
			if e := checkMetricMetadata(v); e != nil {
				d.fail(e)
				return nil, false
			}
			d.rest = b[n:]
		default:
			// Unknown fields, and 2.0 symbols, which Reset has checked.
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				d.fail(parseError("unknown field", at, n))
				return nil, false
			}
			d.rest = b[n:]
		}
	}
	return nil, false
}

// series decodes the TimeSeries message v into s, and reports whether
// the request goes on (false after an error, which fails the Decoder).
func (d *Decoder) series(s *Series, v []byte) bool {
	s.sc = &d.sc
	s.reset()
	var e *decodeError
	if d.v2 {
		e = s.decodeV2(v)
	} else {
		e = s.decodeV1(v)
	}
	if e != nil {
		e.what = fmt.Sprintf("timeseries %d: %s", d.n, e.what)
		d.fail(e)
		return false
	}
	if d.long {
		d.checkLengths(s, v)
	}
	if d.v2 && d.maxExpanded > 0 && !d.expand(s, v) {
		return false
	}
	if s.bad != nil {
		s.bad.what = fmt.Sprintf("timeseries %d: %s", d.n, s.bad.what)
		s.err = d.format(s.bad)
	}
	for _, e := range s.badEx {
		e.what = fmt.Sprintf("timeseries %d: %s", d.n, e.what)
		s.exErrs = append(s.exErrs, d.format(e))
	}
	d.n++
	return true
}

// expand adds the label bytes of the 2.0 series v, decoded, to the
// request's, and fails the request if they go past the limit.
func (d *Decoder) expand(s *Series, v []byte) bool {
	n := 0
	for _, p := range s.lb.Pairs {
		n += len(p.Name) + len(p.Value)
	}
	if s.bad == nil {
		// Both references resolve (decodeV2 checked them, with or without
		// metadata), and Prometheus's ToMetadata reads both.
		n += len(s.syms[s.metaHelp]) + len(s.syms[s.metaUnit])
	}
	d.expanded += int64(n)
	if d.expanded <= d.maxExpanded {
		return true
	}
	d.fail(&decodeError{kind: ErrExpandedTooLarge, at: v, what: fmt.Sprintf("timeseries %d: %d bytes of labels and metadata so far, limit %d", d.n, d.expanded, d.maxExpanded)})
	return false
}

// checkLengths refuses a label of the series v, or of one of its
// exemplars, longer than labels.Labels of the build in use can hold
// (labelset.MaxString): the series gets an error, an exemplar is dropped
// with one, as for a reference that does not resolve. Only a request
// longer than labelset.MaxString can hold one, so that Next checks only
// those.
func (d *Decoder) checkLengths(s *Series, v []byte) {
	if s.bad == nil {
		for _, p := range s.lb.Pairs {
			if n := max(len(p.Name), len(p.Value)); n > labelset.MaxString {
				s.bad = &decodeError{kind: ErrLabelTooLong, at: v, what: fmt.Sprintf("label %.64q of %d bytes, more than %d", p.Name, n, labelset.MaxString)}
				break
			}
		}
	}
	kept := s.rawEx[:0]
	exSet := &d.sc.exSet
	for _, b := range s.rawEx {
		exSet.Reset()
		if d.v2 {
			_, _, _ = parseExemplarV2(b, s.syms, exSet)
		} else {
			_, _, _ = parseExemplarV1(b, exSet)
		}
		if n := exSet.MaxLen(); n > labelset.MaxString {
			s.badEx = append(s.badEx, &decodeError{kind: ErrLabelTooLong, at: b, what: fmt.Sprintf("exemplar label of %d bytes, more than %d", n, labelset.MaxString)})
			continue
		}
		kept = append(kept, b)
	}
	clear(s.rawEx[len(kept):])
	s.rawEx = kept
}

// Err returns the first error the Decoder met since the last
// [Decoder.Reset], or nil if it has not met one (in particular after
// [Decoder.Next] returned false at the clean end of a request). It wraps
// [ErrMalformed], [ErrSymbolRef] or [ErrMessageType].
func (d *Decoder) Err() error { return d.err }

// Series returns the current series, the one the last call to [Decoder.Next]
// advanced to; it must not be used after Next returned false. The Series and
// everything it returns that is not documented as copied are valid until the
// next call to Next, [Decoder.NextBatch] or [Decoder.Reset]: it is a view,
// owned by the Decoder.
func (d *Decoder) Series() *Series { return &d.s }

// fail records e as the Decoder's error, with the message type and the
// offset of e in the request.
func (d *Decoder) fail(e *decodeError) {
	d.err = d.format(e)
	d.rest = nil
}

// format makes the error of e, with the message type and the offset of e in
// the request.
func (d *Decoder) format(e *decodeError) error {
	off := len(d.buf) - cap(e.at) // every view of buf ends where buf does
	if e.cause != nil {
		return fmt.Errorf("decoding %s: %w: %s at byte %d: %w", d.msg, e.kind, e.what, off, e.cause)
	}
	return fmt.Errorf("decoding %s: %w: %s at byte %d", d.msg, e.kind, e.what, off)
}

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

// noCopy makes go vet's copylocks check report copies of the struct that
// holds it. See https://golang.org/issues/8005#issuecomment-190753527.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// decodeError is what went wrong inside a request, before the Decoder adds
// the message type and the offset to make the error it reports. Built only
// on the error path.
type decodeError struct {
	kind  error  // ErrMalformed or ErrSymbolRef
	at    []byte // the bytes from where it went wrong on, a view of buf
	what  string // what was being decoded, and how it failed
	cause error  // the underlying error, if any
}

// parseError reports a protowire parse error code n met at at.
func parseError(what string, at []byte, n int) *decodeError {
	return &decodeError{kind: ErrMalformed, at: at, what: what, cause: protowire.ParseError(n)}
}

// wireTypeError reports a known field of the wrong wire type.
func wireTypeError(what string, at []byte, typ protowire.Type) *decodeError {
	return &decodeError{kind: ErrMalformed, at: at, what: fmt.Sprintf("%s: wrong wire type %d", what, typ)}
}

// symbolError reports a reference that does not resolve.
func symbolError(what string, at []byte, ref uint32, size int) *decodeError {
	return &decodeError{kind: ErrSymbolRef, at: at, what: fmt.Sprintf("%s: reference %d, table size %d", what, ref, size)}
}

// consumeField reads a tag and the field value after it: v is the value's
// bytes for the length-delimited type, x the value of the others, n the
// length of tag and value. It does not check typ against the field, which is
// the caller's job; n < 0 is a protowire error code.
func consumeField(b []byte) (num protowire.Number, typ protowire.Type, v []byte, x uint64, n int) {
	num, typ, n = protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, nil, 0, n
	}
	var m int
	switch typ {
	case protowire.VarintType:
		x, m = protowire.ConsumeVarint(b[n:])
	case protowire.Fixed64Type:
		x, m = protowire.ConsumeFixed64(b[n:])
	case protowire.BytesType:
		v, m = protowire.ConsumeBytes(b[n:])
	case protowire.Fixed32Type:
		var y uint32
		y, m = protowire.ConsumeFixed32(b[n:])
		x = uint64(y)
	default:
		m = protowire.ConsumeFieldValue(num, typ, b[n:])
	}
	if m < 0 {
		return 0, 0, nil, 0, m
	}
	return num, typ, v, x, n + m
}
