package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/timestamp"
	"github.com/prometheus/prometheus/storage"

	"github.com/ingestkit/ingestkit/ingest/activeseries"
	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/ingest/hashring"
	"github.com/ingestkit/ingestkit/ingest/refcache"
	iklabels "github.com/ingestkit/ingestkit/labels"
)

// maxAheadTime is how far in the future a sample or exemplar may be, as in
// Prometheus's write handler (storage/remote/write_handler.go).
const maxAheadTime = 10 * time.Minute

// maxReportedErrors bounds the errors a 400 response lists. Prometheus's
// handler lists every rejected sample with its series' labels, so that a
// 32 MiB request of out-of-order samples makes a response (and a string in
// memory) of hundreds of MiB; the receiver lists the first ones and counts
// the rest.
const maxReportedErrors = 16

// maxPooledRequest is the largest decoded request after which a worker
// goes back to the pool. A Decoder keeps the memory of the largest request
// it has decoded, up to some 6 times its size for a series of many short
// labels (48 bytes a label), so a worker that served a larger request is
// left to the garbage collector. Prometheus's sender, at its default of
// 2000 samples a request, sends requests of 0.2 to 0.5 MiB
// (testdata/remote-write).
const maxPooledRequest = 4 << 20

// Content types of the two protocols, as Prometheus's client sends them
// (storage/remote/client.go); anything else goes through
// remoteapi.ParseProtoMsg, which gives the same result for these.
const (
	contentTypeV1 = "application/x-protobuf"
	contentTypeV2 = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
)

// The response headers of remote write 2.0 (client_golang/exp/api/remote).
const (
	headerSamplesWritten    = "X-Prometheus-Remote-Write-Samples-Written"
	headerHistogramsWritten = "X-Prometheus-Remote-Write-Histograms-Written"
	headerExemplarsWritten  = "X-Prometheus-Remote-Write-Exemplars-Written"
)

// errTooFarInFuture is what Prometheus's time-limit appender returns for a
// sample or exemplar more than maxAheadTime ahead of the receiver's clock.
var errTooFarInFuture = fmt.Errorf("%w: timestamp is too far in the future", storage.ErrOutOfBounds)

// Errors of the receiver's optional label limits ([Options]).
var (
	// errTooManyLabels is reported for a series with more labels than
	// Options.MaxLabelsPerSeries.
	errTooManyLabels = errors.New("receiver: series has more labels than the limit")
	// errLabelTooLong is reported for a label name or value longer than
	// Options.MaxLabelNameLength or Options.MaxLabelValueLength.
	errLabelTooLong = errors.New("receiver: label name or value longer than the limit")
	// errSeriesLimit is reported for a new series refused because the
	// tenant has Options.MaxSeries active series.
	errSeriesLimit = errors.New("receiver: per-tenant series limit exceeded")
)

// Options are the settings of a [Receiver]. The zero value of each field
// means its documented default, which is what Prometheus's own receiver
// does.
type Options struct {
	// MaxBodySize is the largest request body, still compressed; larger
	// ones are answered 413. Zero means 32 MiB, Prometheus's limit.
	MaxBodySize int64
	// MaxDecodedSize is the largest snappy-decoded body; larger ones are
	// answered 400, as Prometheus does. Zero means 32 MiB, Prometheus's
	// limit.
	MaxDecodedSize int64
	// MaxInflightBytes bounds the memory of the request bodies being read
	// or decoded at once, across all requests
	// (decode.BodyOptions.MaxInflightBytes); a request that would go past
	// it is answered 503 at once, which Prometheus's sender retries. A
	// request needs up to MaxBodySize+MaxDecodedSize of it. Zero means no
	// limit, as in Prometheus; the command sets one (-max-inflight-bytes).
	MaxInflightBytes int64
	// BodyReader, if not nil, reads the request bodies instead of a
	// BodyReader of the Receiver's own, and is built with the three limits
	// above: Receivers that share one, such as those of a process's
	// tenants, share its in-flight budget, so that MaxInflightBytes bounds
	// the process and not each tenant.
	BodyReader *decode.BodyReader

	// MaxLabelsPerSeries, MaxLabelNameLength and MaxLabelValueLength
	// reject, with a 400 that names the series, a series with more labels
	// or a longer label name or value; the other series of the request are
	// written (a partial write, in both protocol versions). Zero means no
	// limit, as in Prometheus, whose receiver accepts a 10 MiB label value
	// or 100k labels if the body fits its 32 MiB.
	MaxLabelsPerSeries  int
	MaxLabelNameLength  int
	MaxLabelValueLength int

	// MaxSeries limits the active series (those of the tracker) of the
	// Receiver, which serves one tenant: a series that is not in the ref
	// cache (not looked up since the cache's last purge) is refused while
	// the tracker counts MaxSeries active series, with a 400 that names
	// the limit, as Mimir answers its per-tenant series limit; the
	// request's other series are written, in both protocol versions.
	// [Stats] counts the refused series and their samples. Zero means no
	// limit. The check and the tracker's update are not one atomic step:
	// requests that add new series at the same time may pass the limit by
	// one series each, and a cached series none of whose samples was
	// written since the tracker's purge is let in as an active one.
	MaxSeries int

	// Ring, if not nil, is asked for the owners of every series, which
	// [Stats] counts per endpoint. The receiver does not forward anything:
	// it reports where a Thanos receive hashring of these endpoints would
	// route each series.
	Ring *hashring.Ring
	// Tenant is the tenant the ring hashes series with.
	Tenant string

	// AppendMetadata attaches each 2.0 series' metadata (type, unit and
	// help) to every sample and histogram appended to it, as Prometheus's
	// handler does with its metadata-wal-records feature; the TSDB keeps it
	// if opened with tsdb.Options.EnableMetadataWALRecords, which that
	// feature also sets. 1.0 metadata, sent per metric family, is ignored
	// either way, as by Prometheus. The help and unit strings are interned
	// until the next [Receiver.Purge]. False (the default, as in
	// Prometheus) appends no metadata.
	AppendMetadata bool
	// EnableTypeAndUnitLabels gives each 2.0 series whose metadata has a
	// type other than unknown or a unit the labels __type__ and __unit__
	// from its metadata, in place of any __type__ and __unit__ labels the
	// series has, as Prometheus's handler does with its
	// type-and-unit-labels feature; a series whose metadata has neither
	// keeps its labels. These are the series' labels from then on: what
	// is stored, validated, cached, hashed and tracked. The label limits
	// and the Ring see the labels as received. False (the default, as in
	// Prometheus) keeps every series' labels as received.
	EnableTypeAndUnitLabels bool

	// Exemplars is where exemplars go. Nil means the TSDB's own circular
	// exemplar storage, in the request's transaction, as in Prometheus
	// (see [Txn.AppendExemplars]).
	Exemplars ExemplarStore

	// appenderV1 makes a Receiver over a storage with both appenders
	// append through storage.Appendable even where its
	// storage.AppenderV2 has AppendExemplars: the path of Prometheus
	// before v0.316.0, for the tests to run on any release.
	appenderV1 bool

	// Logger receives one line per rejected request. Nil means none.
	Logger *slog.Logger
}

// ExemplarStore is where a [Receiver] puts exemplars: the TSDB's own
// storage unless [Options] give another, such as [RingExemplars]. It
// makes an [ExemplarAppender] for each of the Receiver's workers, which
// keeps it for the requests it serves one after the other. An
// ExemplarStore is used by many requests at once and must be safe for
// concurrent use by multiple goroutines.
type ExemplarStore interface {
	NewExemplarAppender() ExemplarAppender
}

// ExemplarAppender takes the exemplars of one request at a time, in the
// request's transaction: AppendExemplars is called for each series with
// exemplars, then Commit once the TSDB's transaction has committed, or
// Rollback if it was rolled back or its commit failed.
//
// AppendExemplars takes the exemplars of one series: h is the series,
// resolved in t, the request's transaction; es holds no exemplar too far in
// the future and is sorted by timestamp (exemplar.Compare) on the 2.0
// appender, in request order on the 1.0 one (see [Txn]). It returns what
// [Txn.AppendExemplars] returns: nil, a *storage.AppendPartialError listing
// the exemplars it rejected, or another error if it took none. What it
// takes is stored when Commit is called, and not if Rollback is, as the
// TSDB does with the exemplars of a transaction.
//
// An ExemplarAppender is not safe for concurrent use.
type ExemplarAppender interface {
	AppendExemplars(t *Txn, h *refcache.Handle, es []exemplar.Exemplar) error
	Commit()
	Rollback()
}

// tsdbExemplars is the TSDB's exemplar storage: the exemplars go into the
// request's transaction, as Prometheus's handler puts them, and the TSDB's
// own commit and rollback apply to them.
type tsdbExemplars struct{}

func (tsdbExemplars) NewExemplarAppender() ExemplarAppender { return tsdbExemplars{} }

func (tsdbExemplars) AppendExemplars(t *Txn, h *refcache.Handle, es []exemplar.Exemplar) error {
	return t.AppendExemplars(h, es)
}

func (tsdbExemplars) Commit()   {}
func (tsdbExemplars) Rollback() {}

// Receiver is an http.Handler for Prometheus remote write 1.0 and 2.0 over a
// storage.AppendableV2 such as a tsdb.DB (through its storage.Appendable
// before Prometheus v0.316.0: see [Txn]), built from ingestkit's blocks: an
// [decode.BodyReader] that reads and snappy-decodes each body into a pooled
// buffer within limits, an [decode.Decoder] that walks the protobuf in
// place and hashes each series' labels from the pairs it gathered, an
// [refcache.AppenderV2] that finds series the TSDB holds in an [refcache.Cache] by
// that hash (or by the pairs alone, for a series in the order of the last
// request), an [iklabels.Table] that interns the strings of new series (in
// the slicelabels build), an [activeseries.Tracker] of active series, and
// optionally a [hashring.Ring] that reports owners.
//
// It answers every request as Prometheus's remote.NewWriteHandler does
// (status, error kinds, 2.0 response headers, what is written), which
// TestDifferential checks on the same inputs, except where its doc comment
// says otherwise.
//
// A Receiver is safe for concurrent use by multiple goroutines.
type Receiver struct {
	db        storage.AppendableV2
	db1       storage.Appendable // db, if appended to through storage.Appendable (Txn)
	body      *decode.BodyReader
	cache     *refcache.Cache
	tracker   *activeseries.Tracker
	ring      *hashring.Ring
	tenant    string
	exemplars ExemplarStore
	logger    *slog.Logger
	limits    bool // any label limit set
	metadata  bool // Options.AppendMetadata
	typeUnit  bool // Options.EnableTypeAndUnitLabels
	maxLabels int
	maxName   int
	maxValue  int
	maxSeries int

	maxBody, maxDecoded, maxInflight int64 // for error messages

	strings iklabels.Table
	symbols *labels.SymbolTable // for the dedupelabels build; shared by all decoders
	// metaStrings interns the help and unit strings of AppendMetadata,
	// apart from strings because they can change while a series stays:
	// Purge resets it every time, so that it holds those of one purge
	// interval.
	metaStrings iklabels.Table

	workers sync.Pool // of *worker

	stats receiverCounters
}

// receiverCounters are the Receiver's running totals; all atomic.
type receiverCounters struct {
	requests, rejected                atomic.Int64
	samples, histograms, exemplars    atomic.Int64
	series, newSeries, invalidSamples atomic.Int64
	refusedSeries, refusedSamples     atomic.Int64   // by Options.MaxSeries
	owned                             []atomic.Int64 // per ring endpoint
}

// Stats are a Receiver's totals since it was made.
type Stats struct {
	Requests       int64 // requests answered
	Rejected       int64 // of those, answered with an error status
	Samples        int64 // float samples written
	Histograms     int64 // native histogram samples written
	Exemplars      int64 // exemplars written
	Series         int64 // series received, counted once per request
	NewSeries      int64 // series whose labels were built (not in the cache nor the TSDB)
	InvalidSamples int64 // samples of series rejected for their labels
	RefusedSeries  int64 // new series refused by Options.MaxSeries, once per request
	RefusedSamples int64 // their samples and histogram samples
	ActiveSeries   int   // series seen since the last Purge that could drop them
	// Cache is the ref cache's counts: its entries (Cache.Len), hits,
	// misses, stores and purges.
	Cache refcache.Stats
	// Owned counts the series of each ring endpoint, by address, once per
	// request and replica; nil without a ring.
	Owned map[string]int64
}

// newBodyReader returns a BodyReader with the limits of opts.
func newBodyReader(opts Options) *decode.BodyReader {
	return decode.NewBodyReader(decode.BodyOptions{
		MaxBodySize: opts.MaxBodySize, MaxDecodedSize: opts.MaxDecodedSize, MaxInflightBytes: opts.MaxInflightBytes,
	})
}

// NewReceiver returns a Receiver that writes to db.
func NewReceiver(db storage.AppendableV2, opts Options) (*Receiver, error) {
	tracker, err := activeseries.New(activeseries.Options{})
	if err != nil {
		return nil, err
	}
	body := opts.BodyReader
	if body == nil {
		body = newBodyReader(opts)
	}
	r := &Receiver{
		db:        db,
		body:      body,
		cache:     refcache.New(refcache.Options{}),
		tracker:   tracker,
		ring:      opts.Ring,
		tenant:    opts.Tenant,
		exemplars: opts.Exemplars,
		logger:    opts.Logger,
		maxLabels: opts.MaxLabelsPerSeries,
		maxName:   opts.MaxLabelNameLength,
		maxValue:  opts.MaxLabelValueLength,
		metadata:  opts.AppendMetadata,
		typeUnit:  opts.EnableTypeAndUnitLabels,
		maxSeries: opts.MaxSeries,
		symbols:   labels.NewSymbolTable(),
	}
	r.maxBody, r.maxDecoded = cmp.Or(opts.MaxBodySize, decode.DefaultMaxBodySize), cmp.Or(opts.MaxDecodedSize, decode.DefaultMaxDecodedSize)
	r.maxInflight = opts.MaxInflightBytes
	r.limits = r.maxLabels > 0 || r.maxName > 0 || r.maxValue > 0
	if r.exemplars == nil {
		r.exemplars = tsdbExemplars{}
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	if r.ring != nil {
		r.stats.owned = make([]atomic.Int64, r.ring.Len())
	}
	if opts.appenderV1 || appendsV1(db) {
		r.db1, _ = db.(storage.Appendable)
	}
	r.workers.New = func() any { return r.newWorker() }
	return r, nil
}

// Stats returns the Receiver's totals.
func (r *Receiver) Stats() Stats {
	var s Stats
	r.UpdateStats(&s)
	return s
}

// UpdateStats fills s with the Receiver's totals, reusing s.Owned.
func (r *Receiver) UpdateStats(s *Stats) {
	c := &r.stats
	s.Requests, s.Rejected = c.requests.Load(), c.rejected.Load()
	s.Samples, s.Histograms, s.Exemplars = c.samples.Load(), c.histograms.Load(), c.exemplars.Load()
	s.Series, s.NewSeries, s.InvalidSamples = c.series.Load(), c.newSeries.Load(), c.invalidSamples.Load()
	s.RefusedSeries, s.RefusedSamples = c.refusedSeries.Load(), c.refusedSamples.Load()
	s.ActiveSeries = r.tracker.Active()
	r.cache.UpdateStats(&s.Cache)
	if r.ring != nil {
		if s.Owned == nil {
			s.Owned = make(map[string]int64, r.ring.Len())
		}
		for i := range c.owned {
			s.Owned[r.ring.Endpoint(i).Address] = c.owned[i].Load()
		}
	}
}

// Purge forgets the series of the ref cache and the active-series tracker
// not seen since keepFrom. The program calls it periodically.
//
// If the cache dropped series, Purge also resets the interner (which the
// slicelabels build uses for the labels of new series), so that the strings
// of series that went away are not held for the life of the process, as
// iklabels.Table would hold them: strings that the TSDB's series hold stay
// valid, and series created after the reset intern their strings anew.
// It always resets the interner of the metadata's help and unit strings
// (Options.AppendMetadata), whose strings a series can change at every
// request: the TSDB keeps a series' latest metadata, the interner only
// those sent since the last Purge.
func (r *Receiver) Purge(keepFrom time.Time) (cache, active int) {
	ms := keepFrom.UnixMilli()
	cache, active = r.cache.Purge(ms), r.tracker.Purge(ms)
	if cache > 0 {
		r.strings.Reset()
	}
	r.metaStrings.Reset()
	return cache, active
}

// ServeHTTP answers a remote-write request. The checks come in the order of
// Prometheus's handler, whose snappy middleware runs before its method and
// content-type checks: Content-Encoding (415), body size (413), body and
// snappy block (400), method (405), Content-Type (415), then the request
// itself. With Options.MaxInflightBytes, a body the budget cannot hold is
// answered 503 (Prometheus has no such limit). The body's buffer is
// released, and its bytes refunded to the budget, when ServeHTTP returns,
// also if it panics.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.stats.requests.Add(1)
	if enc := req.Header.Get("Content-Encoding"); enc != "" && enc != "snappy" {
		r.fail(w, http.StatusUnsupportedMediaType, fmt.Errorf("%v encoding (compression) is not accepted by this server; only snappy is acceptable", enc))
		return
	}
	buf, err := r.body.ReadRequest(req)
	switch {
	case errors.Is(err, decode.ErrBodyTooLarge):
		// Prometheus's words.
		r.fail(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body exceeds the %v bytes limit", r.maxBody))
		return
	case errors.Is(err, decode.ErrDecodedTooLarge):
		r.fail(w, http.StatusBadRequest, fmt.Errorf("decoded size exceeds the %v bytes limit", r.maxDecoded))
		return
	case errors.Is(err, decode.ErrInflightLimit):
		// The receiver's memory, not the client, is at fault: a 5xx, which
		// Prometheus's sender retries with backoff (it drops a batch
		// answered 429 unless retry_on_http_429 is set).
		r.fail(w, http.StatusServiceUnavailable, fmt.Errorf("request bodies in flight exceed the %v bytes limit; retry later", r.maxInflight))
		return
	case err != nil:
		r.fail(w, http.StatusBadRequest, err)
		return
	}
	defer r.body.Release(buf)

	if req.Method != http.MethodPost {
		//lint:ignore ST1005 the text remote.NewWriteHandler answers, which TestDifferential compares
		r.fail(w, http.StatusMethodNotAllowed, errors.New("Method not allowed"))
		return
	}
	msg, err := parseContentType(req.Header.Get("Content-Type"))
	if err != nil {
		r.fail(w, http.StatusUnsupportedMediaType, err)
		return
	}

	wk := r.workers.Get().(*worker)
	stats, code, err := wk.write(req.Context(), buf.B, msg)
	if len(buf.B) <= maxPooledRequest {
		r.workers.Put(wk)
	}
	if msg != remoteapi.WriteV1MessageType {
		h := w.Header()
		h.Set(headerSamplesWritten, strconv.Itoa(stats.Samples))
		h.Set(headerHistogramsWritten, strconv.Itoa(stats.Histograms))
		h.Set(headerExemplarsWritten, strconv.Itoa(stats.Exemplars))
	}
	if err != nil {
		r.fail(w, code, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *Receiver) fail(w http.ResponseWriter, code int, err error) {
	r.stats.rejected.Add(1)
	r.logger.Warn("remote-write request rejected", "code", code, "err", err)
	http.Error(w, err.Error(), code)
}

// parseContentType returns the message type of a Content-Type, as
// remoteapi.ParseProtoMsg does (an empty one is 1.0), without its
// allocations for the two that Prometheus's client sends.
func parseContentType(ct string) (remoteapi.WriteMessageType, error) {
	switch ct {
	case "", contentTypeV1:
		return remoteapi.WriteV1MessageType, nil
	case contentTypeV2:
		return remoteapi.WriteV2MessageType, nil
	}
	return remoteapi.ParseProtoMsg(ct)
}

// worker is the state one request at a time uses, pooled across requests so
// that decoders and appenders keep their grown buffers.
type worker struct {
	r        *Receiver
	dec      decode.Decoder
	tx       Txn
	ex       ExemplarAppender
	errs     errList
	h        refcache.Handle // the current series'
	typed    typedSeries     // the current series with type and unit labels
	replicas []int
	owned    []int64 // per ring endpoint, for this request

	// The float series written to since the last flushTracked, for the
	// tracker's UpdateBatch: their hashes and the labels of their handles,
	// in the first tracked elements. Arrays in the worker rather than slices
	// of their own, which would be two more allocations whenever the pool
	// makes a worker (BenchmarkReceive, allocs/op).
	trackHashes [trackBatch]uint64
	trackLabels [trackBatch]labels.Labels
	tracked     int

	// The plain series of the request looked up and not yet appended
	// (appendSeries, appendKept): their handles, where each one's samples end in
	// keptSamples, and, while appendKept runs, each sample's error.
	kept        []refcache.Handle
	keptEnd     []int
	keptSamples []decode.Sample
	keptErrs    []error
	// exErrs is appendExemplars' buffer of an exemplar appender's errors.
	exErrs []error
	// lastRef is the ref of the plain series appended last at once, while
	// none is kept: until a series comes whose ref is lower, the request is
	// in the head's order, and its series are appended at once.
	lastRef storage.SeriesRef
}

// trackBatch is the most series the worker holds for the tracker's
// UpdateBatch before it passes them on (BenchmarkReceive,
// case=typical-20000).
const trackBatch = 64

func (r *Receiver) newWorker() *worker {
	wk := &worker{r: r, ex: r.exemplars.NewExemplarAppender()}
	wk.dec.SetInterner(&r.strings)
	wk.dec.SetSymbolTable(r.symbols)
	wk.typed.sb = labels.NewScratchBuilderWithSymbolTable(r.symbols, 0)
	if r.ring != nil {
		wk.owned = make([]int64, r.ring.Len())
	}
	return wk
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

func (l *errList) add(err error) {
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

// requestCounts are what one request wrote and saw.
type requestCounts struct {
	remoteapi.WriteResponseStats
	series, invalid         int
	refused, refusedSamples int // by Options.MaxSeries
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
//   - A malformed body writes nothing and is a 400.
//
// A 2.0 series whose label or metadata references do not resolve in the
// symbols table is skipped, and an exemplar whose references do not
// resolve is dropped, with a 400 once the rest is written, as in
// Prometheus. Where it differs: a series over a label limit is skipped with
// a 400 in both versions (Prometheus has no such limits), and error lists
// are cut at maxReportedErrors.
func (wk *worker) write(ctx context.Context, body []byte, msg remoteapi.WriteMessageType) (remoteapi.WriteResponseStats, int, error) {
	r := wk.r
	d := &wk.dec
	if err := d.Reset(body, msg); err != nil {
		return remoteapi.WriteResponseStats{}, http.StatusBadRequest, err
	}
	defer d.Reset(nil, msg) // let go of the pooled buffer
	if r.ring != nil {
		d.SetTenant(r.tenant)
		clear(wk.owned)
	}
	now := time.Now()
	nowMs := now.UnixMilli()
	// The appender opens the transaction on r.db itself, which binds the
	// cache to r.db: refs of another storage are never used.
	a := &wk.tx
	a.open(ctx, r, nowMs)
	if ok, app := a.hasExemplarAppender(); !ok {
		_ = a.rollback()
		return remoteapi.WriteResponseStats{}, http.StatusInternalServerError, fmt.Errorf("remote write receiver requires a storage.ExemplarAppenderV2, got %T", app)
	}
	wk.errs.reset()
	c, code, err, commit := wk.appendAll(timestamp.FromTime(now.Add(maxAheadTime)), nowMs, msg == remoteapi.WriteV2MessageType)
	if !commit {
		_ = a.rollback()
		wk.ex.Rollback()
		return remoteapi.WriteResponseStats{}, code, err
	}
	if cerr := a.commit(); cerr != nil {
		wk.ex.Rollback()
		if msg == remoteapi.WriteV1MessageType {
			return remoteapi.WriteResponseStats{}, v1Status(cerr), cerr
		}
		return remoteapi.WriteResponseStats{}, http.StatusInternalServerError, cerr
	}
	wk.ex.Commit()
	st := &r.stats
	st.samples.Add(int64(c.Samples))
	st.histograms.Add(int64(c.Histograms))
	st.exemplars.Add(int64(c.Exemplars))
	st.series.Add(int64(c.series))
	st.newSeries.Add(int64(a.stats().NewSeries))
	st.invalidSamples.Add(int64(c.invalid))
	st.refusedSeries.Add(int64(c.refused))
	st.refusedSamples.Add(int64(c.refusedSamples))
	for i, n := range wk.owned {
		if n != 0 {
			st.owned[i].Add(n)
		}
	}
	return c.WriteResponseStats, code, err
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

// appendAll appends every series of the request. For 1.0 an append error
// ends it; for 2.0 only a 5xx does, and a 400 comes back with the error
// list once every series is done. commit says whether what was appended is
// to be committed (true for success and for partial writes).
func (wk *worker) appendAll(maxTime, nowMs int64, v2 bool) (c requestCounts, code int, _ error, commit bool) {
	c, code, err, commit := wk.appendSeries(maxTime, nowMs, v2)
	wk.flushTracked(nowMs)
	return c, code, err, commit
}

// track records for the tracker that the float series of h was written to
// at nowMs. The tracker's updates of the series of a request are the same
// in a batch as one by one, but for the tracker's count in the meantime:
// the receiver flushes the batch before it reads the count (MaxSeries),
// and before a histogram update, which could be of a series in the batch.
func (wk *worker) track(h *refcache.Handle, nowMs int64) {
	n := wk.tracked
	wk.trackHashes[n], wk.trackLabels[n] = h.Hash(), h.Labels()
	if wk.tracked = n + 1; wk.tracked == trackBatch {
		wk.flushTracked(nowMs)
	}
}

// flushTracked passes the series that track holds to the tracker.
func (wk *worker) flushTracked(nowMs int64) {
	n := wk.tracked
	if n == 0 {
		return
	}
	wk.r.tracker.UpdateBatch(wk.trackHashes[:n], wk.trackLabels[:n], nowMs)
	// The labels are the TSDB's: not kept past the request.
	clear(wk.trackLabels[:n])
	wk.tracked = 0
}

// appendSeries is appendAll but for the tracker's updates of the last
// series it wrote to, which it leaves to flushTracked.
//
// A plain series (float samples only, no exemplars, no error, and no
// per-series options or limits in force: see keepable) is appended at once
// while the refs of those before it go up, the head's order, which
// AppendOrder would keep. From the first lower ref on, the plain series'
// handles and samples are kept, and appendKept appends them in the order
// of AppendOrder, at the end of the request or before any other series, so
// that request order holds between the kept series and the others
// (BenchmarkReceive, case=resharded-5000).
func (wk *worker) appendSeries(maxTime, nowMs int64, v2 bool) (c requestCounts, code int, _ error, commit bool) {
	r, d, a := wk.r, &wk.dec, &wk.tx
	defer wk.resetKept()
	// Per-series options, limits and metadata take the one-at-a-time path.
	keepable := !r.limits && r.maxSeries == 0 && !(v2 && (r.metadata || r.typeUnit))
	for d.Next() {
		s := d.Series()
		c.series++
		samples, hists := s.Samples(), s.Histograms()
		if keepable && len(samples) > 0 && len(hists) == 0 && s.Err() == nil &&
			len(s.ExemplarErrs()) == 0 && len(s.Exemplars()) == 0 {
			lookupErr, invalid := wk.lookupPlain(s)
			if lookupErr == nil && invalid == nil {
				if len(wk.kept) == 0 && (wk.h.Ref() == 0 || wk.h.Ref() >= wk.lastRef) {
					// In the head's order so far, where AppendOrder would
					// leave it: appended at once, as a request in the
					// order of the last one is (BenchmarkReceive,
					// case=typical-5000, status=conflict, where the first
					// series ends the request).
					if code, err, ok := wk.appendPlain(&c, &wk.h, samples, maxTime, nowMs, v2); !ok {
						return c, code, err, false
					}
					wk.lastRef = wk.h.Ref()
				} else {
					wk.kept = append(wk.kept, wk.h)
					wk.keptSamples = append(wk.keptSamples, samples...)
					wk.keptEnd = append(wk.keptEnd, len(wk.keptSamples))
				}
				if r.ring != nil {
					wk.replicas = r.ring.Replicas(s.ThanosHash(), wk.replicas[:0])
					for _, i := range wk.replicas {
						wk.owned[i]++
					}
				}
				continue
			} else if code, err, ok := wk.appendKept(&c, maxTime, nowMs, v2); !ok {
				return c, code, err, false
			} else if lookupErr != nil {
				// Skipped as below, once the kept series are appended.
				c.invalid += len(samples)
				wk.errs.add(fmt.Errorf("parsing series: %w", lookupErr))
				continue
			}
			c.invalid += len(samples)
			if v2 && !wk.errs.full() {
				wk.errs.add(invalid)
			}
			continue
		}
		if code, err, ok := wk.appendKept(&c, maxTime, nowMs, v2); !ok {
			return c, code, err, false
		}
		if err := s.Err(); err != nil {
			// 2.0 label or metadata references that do not resolve:
			// Prometheus skips the series and answers 400 in the end.
			c.invalid += len(samples) + len(hists)
			wk.errs.add(fmt.Errorf("parsing series: %w", err))
			continue
		}
		if r.limits {
			if err := r.checkLimits(s); err != nil {
				c.invalid += len(samples) + len(hists)
				wk.errs.add(err)
				continue
			}
		}
		// Prometheus's handler reads the metadata before it validates the
		// labels, which its type-and-unit-labels feature rewrites; with
		// metadata-wal-records every append of the series carries it.
		var opts storage.AOptions
		typed := false
		if v2 && (r.metadata || r.typeUnit) {
			if r.metadata {
				opts.Metadata, _ = s.OwnedMetadata(&r.metaStrings)
			}
			if m, _ := s.Metadata(); r.typeUnit && needsTypeAndUnit(m) {
				wk.typed.reset(s, m)
				typed = true
			}
		}
		// The handle lives in the worker: passed to the ExemplarAppender
		// interface, a local would escape to the heap. Each Lookup is
		// given a concrete type, whose calls the compiler resolves: the
		// series as a variable of interface type cost allocations
		// (TestAllocsPerRequest).
		var err error
		if typed {
			wk.h, err = a.lookupTyped(&wk.typed)
		} else {
			wk.h, err = a.lookup(s)
		}
		if err != nil {
			// Not reached: Lookup refuses only a series with Err, skipped
			// above. Should that change, skip the series the same way.
			c.invalid += len(samples) + len(hists)
			wk.errs.add(fmt.Errorf("parsing series: %w", err))
			continue
		}
		h := &wk.h
		if !h.Cached() {
			// Not a series the receiver has appended to before: validate
			// its labels as Prometheus's handler does. A cached series
			// passed this when it was first appended, and the cache confirms
			// a hit by comparing every label.
			if err := validateLabels(h.Labels()); err != nil {
				c.invalid += len(samples) + len(hists)
				if v2 && !wk.errs.full() {
					wk.errs.add(err)
				}
				continue
			}
		}
		if v2 && len(samples) == 0 && len(hists) == 0 {
			if !wk.errs.full() {
				wk.errs.add(fmt.Errorf("TimeSeries must contain at least one sample or histogram for series %v", seriesString(h.Labels())))
			}
			continue
		}
		if r.maxSeries > 0 && !h.Cached() && len(samples)+len(hists) > 0 && wk.activeSeries(nowMs) >= r.maxSeries {
			c.refused++
			c.refusedSamples += len(samples) + len(hists)
			if !wk.errs.full() {
				wk.errs.add(fmt.Errorf("%w: per-tenant series limit of %d exceeded, series %v refused", errSeriesLimit, r.maxSeries, seriesString(h.Labels())))
			}
			continue
		}

		written, code, err, ok := wk.appendFloats(&c, h, samples, maxTime, opts, v2)
		if !ok {
			return c, code, err, false
		}
		// Prometheus's 1.0 handler up to v0.315 appends a series'
		// exemplars before its histograms (Txn).
		exemplarsFirst := a.isV1 && !v2
		if es := s.Exemplars(); exemplarsFirst && len(es) > 0 {
			c.Exemplars += wk.appendExemplars(h, es, maxTime, v2)
		}
		buckets := -1
		for _, hs := range hists {
			err := appendHistogram(a, h, maxTime, hs, opts)
			if err == nil || errors.Is(err, (*storage.AppendPartialError)(nil)) {
				c.Histograms++
				written = true
				if hs.H != nil {
					buckets = len(hs.H.PositiveBuckets) + len(hs.H.NegativeBuckets)
				} else {
					buckets = len(hs.FH.PositiveBuckets) + len(hs.FH.NegativeBuckets)
				}
				continue
			}
			if !v2 {
				return c, v1Status(err), err, false
			}
			if !isSampleRejection(err) && !isHistogramValidationError(err) {
				return c, http.StatusInternalServerError, err, false
			}
			if !wk.errs.full() {
				wk.errs.add(fmt.Errorf("%w for series %v", err, seriesString(h.Labels())))
			}
		}
		if written {
			if buckets >= 0 {
				wk.flushTracked(nowMs)
				r.tracker.UpdateHistogram(h.Hash(), h.Labels(), buckets, nowMs)
			} else {
				wk.track(h, nowMs)
			}
		}
		if r.ring != nil {
			// Thanos receive routes by the labels in request order.
			wk.replicas = r.ring.Replicas(s.ThanosHash(), wk.replicas[:0])
			for _, i := range wk.replicas {
				wk.owned[i]++
			}
		}
		for _, err := range s.ExemplarErrs() {
			// Skipped by the Decoder, as by Prometheus, which answers 400.
			wk.errs.add(fmt.Errorf("parsing exemplar for series %v: %w", seriesString(h.Labels()), err))
		}
		if es := s.Exemplars(); !exemplarsFirst && len(es) > 0 {
			c.Exemplars += wk.appendExemplars(h, es, maxTime, v2)
		}
		if a.isV1 && v2 && r.metadata {
			// After the exemplars, as Prometheus's handler up to v0.315.
			a.updateMetadata(h, opts.Metadata)
		}
	}
	if err := d.Err(); err != nil {
		// Malformed: Prometheus's Unmarshal fails and nothing is written.
		return c, http.StatusBadRequest, err, false
	}
	if code, err, ok := wk.appendKept(&c, maxTime, nowMs, v2); !ok {
		return c, code, err, false
	}
	if wk.errs.len() > 0 {
		return c, http.StatusBadRequest, wk.errs.err(), true
	}
	return c, 0, nil, true
}

// lookupPlain looks up s, a plain series (float samples, no histograms,
// no exemplars, no error, no per-series options or limits in force), into
// wk.h, and validates its labels as appendSeries does. It returns the
// lookup's error, or the validation's in invalid.
func (wk *worker) lookupPlain(s *decode.Series) (lookupErr, invalid error) {
	var err error
	if wk.h, err = wk.tx.lookup(s); err != nil {
		// Not reached: Lookup refuses only a series with Err.
		return err, nil
	}
	if !wk.h.Cached() {
		// As in appendSeries: a cached series was validated when first
		// appended.
		return nil, validateLabels(wk.h.Labels())
	}
	return nil, nil
}

// appendPlain appends the float samples of h at once.
func (wk *worker) appendPlain(c *requestCounts, h *refcache.Handle, samples []decode.Sample, maxTime, nowMs int64, v2 bool) (code int, _ error, ok bool) {
	written, code, err, ok := wk.appendFloats(c, h, samples, maxTime, storage.AOptions{}, v2)
	if ok && written {
		wk.track(h, nowMs)
	}
	return code, err, ok
}

// appendFloats appends the float samples of h one after the other and does
// with each result what sampleResult does; written is whether any sample
// was written.
func (wk *worker) appendFloats(c *requestCounts, h *refcache.Handle, samples []decode.Sample, maxTime int64, opts storage.AOptions, v2 bool) (written bool, code int, _ error, ok bool) {
	for i := range samples {
		w, code, err, ok := wk.sampleResult(c, h, wk.appendFloat(h, &samples[i], maxTime, opts), v2)
		if !ok {
			return false, code, err, false
		}
		written = written || w
	}
	return written, 0, nil, true
}

// appendFloat appends smp to h, or returns errTooFarInFuture for a sample
// past maxTime, as Prometheus's handler does.
func (wk *worker) appendFloat(h *refcache.Handle, smp *decode.Sample, maxTime int64, opts storage.AOptions) error {
	if smp.Timestamp > maxTime {
		return errTooFarInFuture
	}
	return wk.tx.appendFloat(h, smp.StartTimestamp, smp.Timestamp, smp.Value, opts)
}

// sampleResult does with err, the result of appending a float sample of
// h, what Prometheus's handler does: it reports whether the sample was
// written, counting it; or adds the rejection to a 2.0 partial write; or,
// for any error in 1.0 and one other than a rejection in 2.0, returns ok
// false with the status and the error that end the request.
func (wk *worker) sampleResult(c *requestCounts, h *refcache.Handle, err error, v2 bool) (written bool, code int, _ error, ok bool) {
	if err == nil || errors.Is(err, (*storage.AppendPartialError)(nil)) {
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

// appendKept appends the samples of the kept series (appendSeries) in the
// order of AppendOrder, which keeps each series' samples in theirs, records
// every append's error by sample; then, in request order, does with each
// result what appendSeries does with a series' samples appended one after
// the other: counts, the errors of a 2.0 partial write, the first error
// that ends the request (any in 1.0, a 5xx in 2.0), and the tracker. ok is
// false when the request ends, with its status and error; the kept series
// are forgotten either way.
func (wk *worker) appendKept(c *requestCounts, maxTime, nowMs int64, v2 bool) (code int, _ error, ok bool) {
	if len(wk.kept) == 0 {
		return 0, nil, true
	}
	defer wk.resetKept()
	a := &wk.tx
	wk.keptErrs = slices.Grow(wk.keptErrs[:0], len(wk.keptSamples))[:len(wk.keptSamples)]
	// 1.0 ends at the first error in request order: once a sample of a
	// series fails as sampleResult counts a failure, the series after it
	// need not be appended (their errors are left nil, and the walk below
	// returns before it reaches them).
	stop := len(wk.kept)
	for _, i := range a.appendOrder(wk.kept) {
		if i > stop {
			continue
		}
		h := &wk.kept[i]
		start := 0
		if i > 0 {
			start = wk.keptEnd[i-1]
		}
		for j := start; j < wk.keptEnd[i]; j++ {
			err := wk.appendFloat(h, &wk.keptSamples[j], maxTime, storage.AOptions{})
			wk.keptErrs[j] = err
			if !v2 && err != nil && !errors.Is(err, (*storage.AppendPartialError)(nil)) {
				stop = i
			}
		}
	}
	start := 0
	for i := range wk.kept {
		h := &wk.kept[i]
		written := false
		for _, err := range wk.keptErrs[start:wk.keptEnd[i]] {
			w, code, err, ok := wk.sampleResult(c, h, err, v2)
			if !ok {
				return code, err, false
			}
			written = written || w
		}
		if written {
			wk.track(h, nowMs)
		}
		start = wk.keptEnd[i]
	}
	return 0, nil, true
}

// maxKeptRetained is the most kept series or samples whose buffers a
// worker keeps from one request to the next, as the Decoder keeps its own
// (decode.MaxDecoderRetained); larger ones, which a request of that many
// plain series grew, go to the garbage collector.
const maxKeptRetained = decode.MaxDecoderRetained

// resetKept forgets the kept series, and the labels their handles hold.
func (wk *worker) resetKept() {
	wk.lastRef = 0
	clear(wk.kept)
	clear(wk.keptErrs)
	wk.kept, wk.keptSamples, wk.keptEnd, wk.keptErrs = wk.kept[:0], wk.keptSamples[:0], wk.keptEnd[:0], wk.keptErrs[:0]
	if cap(wk.kept) > maxKeptRetained {
		wk.kept, wk.keptEnd = nil, nil
	}
	if cap(wk.keptSamples) > maxKeptRetained {
		wk.keptSamples = nil
	}
	if cap(wk.keptErrs) > maxKeptRetained {
		wk.keptErrs = nil
	}
}

// activeSeries returns the tracker's count of active series, with the
// series track holds.
func (wk *worker) activeSeries(nowMs int64) int {
	wk.flushTracked(nowMs)
	return wk.r.tracker.Active()
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

// appendExemplars stores a series' exemplars and returns how many were
// written, as Prometheus's handler counts them: those too far ahead
// dropped, the rest given to the ExemplarAppender, sorted by timestamp on
// the 2.0 appender and in request order on the 1.0 one (Txn); an
// out-of-order exemplar is a bad request in 2.0, other errors only lose the
// exemplars. es is the Decoder's, reordered in place.
func (wk *worker) appendExemplars(h *refcache.Handle, es []exemplar.Exemplar, maxTime int64, v2 bool) int {
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
	wk.exErrs, ok = exemplarErrors(err, wk.exErrs[:0])
	if !ok {
		return 0 // Prometheus logs it and counts none; so does the receiver
	}
	for _, e := range wk.exErrs {
		if v2 && errors.Is(e, storage.ErrOutOfOrderExemplar) && !wk.errs.full() {
			wk.errs.add(fmt.Errorf("%w for series %v", e, seriesString(h.Labels())))
		}
	}
	n := max(0, valid-len(wk.exErrs))
	clear(wk.exErrs)
	return n
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
	size := 0 // ByteSize differs between labels builds
	ls.Range(func(l labels.Label) { size += len(l.Name) + len(l.Value) })
	if size <= 4*maxErrorValue {
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

// checkLimits checks a series against the label limits without building
// its labels.
func (r *Receiver) checkLimits(s *decode.Series) error {
	n, long, tooLong := 0, "", false
	s.RangeLabels(func(name, value string) {
		n++
		if !tooLong && (r.maxName > 0 && len(name) > r.maxName || r.maxValue > 0 && len(value) > r.maxValue) {
			long, tooLong = name, true
		}
	})
	if r.maxLabels > 0 && n > r.maxLabels {
		return fmt.Errorf("%w: %d labels, limit %d", errTooManyLabels, n, r.maxLabels)
	}
	if tooLong {
		return fmt.Errorf("%w: label %.64q (name limit %d, value limit %d)", errLabelTooLong, long, r.maxName, r.maxValue)
	}
	return nil
}
