package decode

import (
	"fmt"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"
	"google.golang.org/protobuf/encoding/protowire"

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
