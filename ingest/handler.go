package ingest

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/ingestkit/ingestkit/ingest/activeseries"
	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/ingest/hashring"
	"github.com/ingestkit/ingestkit/ingest/refcache"
	"github.com/ingestkit/ingestkit/internal/strtable"
)

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

// maxPooledRequest is the largest decoded request after which a worker
// keeps its Decoder. A Decoder keeps the memory of the largest request it
// has decoded, up to some 6 times its size for a series of many short
// labels (48 bytes a label), so a worker that served a larger request gets
// a new one before it goes back to the pool; the worker's own buffers,
// bounded by maxRetained, stay with it: growing them again at every large
// request would cost more than the request's appends (BenchmarkReceive,
// case=typical-20000). Prometheus's sender, at its default of 2000
// samples a request, sends requests of 0.2 to 0.5 MiB
// (testdata/remote-write).
const maxPooledRequest = 4 << 20

// Options are the settings of a [WriteHandler]. The zero value of each
// field means its documented default, which is what Prometheus's own
// handler does. An Options is a plain value that the constructors copy; it
// is not safe for concurrent use by multiple goroutines while one of them
// modifies it.
type Options struct {
	// AcceptedMessages are the protocol messages answered; a request of
	// another is refused with 415, as remote.NewWriteHandler does. Nil
	// means both, remote write 1.0 and 2.0.
	AcceptedMessages remoteapi.MessageTypes

	// MaxBodySize is the largest request body, still compressed; larger
	// ones are answered 413. Zero means 32 MiB
	// ([decode.DefaultMaxBodySize]), Prometheus's limit.
	MaxBodySize int64
	// MaxDecodedSize is the largest snappy-decoded body; larger ones are
	// answered 400, as Prometheus does. Zero means 32 MiB, Prometheus's
	// limit.
	MaxDecodedSize int64
	// MaxExpandedSize bounds the label bytes of a remote-write 2.0 request,
	// its symbol references resolved: the label names and values of its
	// series and their metadata's help and unit
	// ([decode.Decoder.SetMaxExpandedSize]). A 2.0 request names each
	// string once, so that a small body can expand to series of any size;
	// a larger request is refused whole with a 400
	// ([decode.ErrExpandedTooLarge]) before any of it is appended. Zero
	// means the decoded size limit (MaxDecodedSize, 32 MiB by default): a
	// 2.0 request may expand to what a 1.0 request of the largest body
	// carries inline, so that the body limits bound what a request writes
	// in both versions. Less than zero means no limit, as in Prometheus.
	MaxExpandedSize int64
	// MaxInflightBytes bounds the memory of the request bodies being read
	// or decoded at once, across all requests
	// (decode.BodyOptions.MaxInflightBytes); a request that would go past
	// it is answered 503 at once, which Prometheus's sender retries. A
	// request needs up to MaxBodySize+MaxDecodedSize of it. Zero means no
	// limit, as in Prometheus.
	MaxInflightBytes int64
	// BodyReader, if not nil, reads the request bodies instead of a
	// BodyReader of the handler's own, built with the three limits above:
	// handlers that share one, such as those of a process's tenants, share
	// its in-flight budget, so that MaxInflightBytes bounds the process and
	// not each handler.
	BodyReader *decode.BodyReader

	// MaxLabelsPerSeries, MaxLabelNameLength and MaxLabelValueLength
	// refuse, with a 400 that names the series, a series with more labels
	// or a longer label name or value ([ErrTooManyLabels],
	// [ErrLabelTooLong]); the other series of the request are written (a
	// partial write, in both protocol versions). Zero means no limit, as in
	// Prometheus, but for the longest label the labels build can hold
	// (16 MiB in the stringlabels build), which is refused the same way
	// where Prometheus's handler panics.
	MaxLabelsPerSeries  int
	MaxLabelNameLength  int
	MaxLabelValueLength int

	// MaxSeries limits the active series (those of the tracker) of the
	// handler's storage: a series that is not in the ref cache is refused
	// while the tracker counts MaxSeries active series, with a 400 that
	// names the limit ([ErrSeriesLimit]), as Mimir answers its per-tenant
	// series limit; the request's other series are written, in both
	// protocol versions. [Stats] counts the refused series and their
	// samples. Zero means no limit. Requests served at the same time count
	// the series of the others only once written, so that together they
	// may pass the limit by the new series of all but one.
	MaxSeries int
	// SeriesBudget, if not nil, bounds the series of this handler's
	// storage and of the others that share it: see [SeriesBudget]. A
	// series the storage does not hold is refused while it is spent
	// ([ErrSeriesBudget]); [Stats] counts the refused series and their
	// samples apart from MaxSeries'.
	SeriesBudget *SeriesBudget

	// ActiveSeries, if not nil, is the tracker of active series the
	// handler updates with every series written, and MaxSeries reads
	// ([Stats].ActiveSeries, the collector's active_series). Nil means
	// one of the handler's own, with activeseries' defaults, if
	// TrackActiveSeries or MaxSeries is set, and none otherwise: as
	// Prometheus's handler, which tracks none, the handler then spends
	// nothing on it (BenchmarkReceive, impl=ingestkit-tracked, measures
	// what tracking costs).
	ActiveSeries *activeseries.Tracker
	// TrackActiveSeries makes the handler keep a tracker of its own when
	// ActiveSeries is nil. A TenantWriteHandler's Options that set it
	// give each tenant its own.
	TrackActiveSeries bool

	// Ring, if not nil, is asked for the owners of every series, which
	// [Stats] counts per endpoint. The handler does not forward anything:
	// it reports where a Thanos receive hashring of these endpoints would
	// route each series.
	Ring *hashring.Ring
	// Tenant is the tenant the ring hashes series with.
	Tenant string

	// AppendMetadata attaches each 2.0 series' metadata (type, unit and
	// help) to its appends, as Prometheus's handler does with its
	// metadata-wal-records feature; the TSDB keeps it if opened with
	// tsdb.Options.EnableMetadataWALRecords, which that feature also sets.
	// 1.0 metadata, sent per metric family, is ignored either way, as by
	// Prometheus. The help and unit strings are interned until the next
	// [WriteHandler.Purge]. False (the default, as in Prometheus) appends
	// no metadata.
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
	// AcceptExemplarOnlySeries accepts a 2.0 series that carries
	// exemplars but no sample and no histogram. Prometheus's sender sends
	// each exemplar so (prometheus/prometheus#17857), while the 2.0
	// specification as written today requires a sample or a histogram in
	// every series, and Prometheus's handler refuses such a series ("must
	// contain at least one sample or histogram"): its sender's 2.0
	// exemplars are all lost. With this option a 2.0 series is refused
	// only when it carries no sample, no histogram and no exemplar, as
	// prometheus/prometheus#19416 (open) proposes and prometheus/docs#3085
	// (open) would specify. An exemplar-only series' exemplars are
	// appended to its series as a series with samples has them appended,
	// in the request's order: a series the storage does not hold at that
	// point (never written, or written only later in the same request)
	// gets the storage's answer for the exemplars of an unknown series,
	// which the handler logs and does not count, without an error to the
	// sender, as Prometheus's handler treats any exemplar the storage
	// fails to append. 1.0 series without samples are accepted either
	// way, as by Prometheus. False (the default) answers exactly as
	// Prometheus's handler.
	AcceptExemplarOnlySeries bool

	// Exemplars is where exemplars go. Nil means the TSDB's own circular
	// exemplar storage, in the request's transaction, as in Prometheus
	// (see [Txn.AppendExemplars]).
	Exemplars ExemplarStore

	// appenderV1 makes a handler over a storage with both appenders
	// append through storage.Appendable even where its
	// storage.AppenderV2 has AppendExemplars: the path of Prometheus
	// before v0.316.0, for the tests to run on any release.
	appenderV1 bool
}

// WriteHandler is an http.Handler for Prometheus remote write 1.0 and 2.0
// over one storage, such as a tsdb.DB, built from the blocks of this
// package's sub-packages: a [decode.BodyReader] that reads and
// snappy-decodes each body into a pooled buffer within limits, a
// [decode.Decoder] that walks the protobuf in place and hashes each
// series' labels from the pairs it gathered, a [refcache.Cache] and the
// request's appender ([Txn]) that find series the TSDB holds by that hash,
// an interner of the strings of new series, and optionally an
// [activeseries.Tracker] of active series and a [hashring.Ring] that
// reports owners.
//
// It answers every request as Prometheus's remote.NewWriteHandler of the
// release it is built with does (status, error kinds and texts, 2.0
// response headers, what is written), which the package's differential
// tests check on the same inputs, except where its options and
// [WriteHandler.ServeHTTP] say otherwise. A request is decoded whole, and
// every series of it resolved, before the first sample is appended: a
// malformed request, refused with 400, leaves the storage as it was, as
// Prometheus's handler, which unmarshals a request before it appends,
// leaves it.
//
// A WriteHandler is safe for concurrent use by multiple goroutines.
type WriteHandler struct {
	st       binding // the storage; set by the constructor, or per request by a TenantWriteHandler
	accepted remoteapi.MessageTypes
	body     *decode.BodyReader
	cache    *refcache.Cache
	tracker  *activeseries.Tracker
	ring     *hashring.Ring
	tenant   string
	exStore  ExemplarStore
	logger   *slog.Logger
	limits   labelLimits
	metadata bool // Options.AppendMetadata
	typeUnit bool // Options.EnableTypeAndUnitLabels
	exOnly   bool // Options.AcceptExemplarOnlySeries
	maxSer   int  // Options.MaxSeries
	budget   *SeriesBudget

	maxBody, maxDecoded, maxInflight int64 // for error messages
	maxExpanded                      int64 // Options.MaxExpandedSize, its default resolved

	strings strtable.Table
	symbols *labels.SymbolTable // for the dedupelabels build; shared by all decoders
	// metaStrings interns the help and unit strings of AppendMetadata,
	// apart from strings because they can change while a series stays:
	// Purge resets it every time, so that it holds those of one purge
	// interval.
	metaStrings strtable.Table

	workers sync.Pool // of *worker

	stats handlerCounters
}

// handlerCounters are a WriteHandler's running totals; all atomic.
type handlerCounters struct {
	requests, rejected                atomic.Int64
	samples, histograms, exemplars    atomic.Int64
	series, newSeries, invalidSamples atomic.Int64
	refusedSeries, refusedSamples     atomic.Int64   // by Options.MaxSeries
	budgetSeries, budgetSamples       atomic.Int64   // refused by Options.SeriesBudget
	owned                             []atomic.Int64 // per ring endpoint
}

// Stats are a WriteHandler's totals since it was made: a plain value, safe
// for concurrent use.
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
	// BudgetSeries and BudgetSamples are the new series refused by
	// Options.SeriesBudget, once per request, and their samples.
	BudgetSeries, BudgetSamples int64
	ActiveSeries                int // series seen since the last Purge that could drop them; 0 without a tracker (Options.ActiveSeries)
	// Cache is the ref cache's counts: its entries (Cache.Len), hits,
	// misses, stores and purges.
	Cache refcache.Stats
	// Owned counts the series of each ring endpoint, by address, once per
	// request and replica; nil without a ring.
	Owned map[string]int64
}

// NewWriteHandler returns a WriteHandler that appends to app through its
// storage.Appendable, as Prometheus's remote.NewWriteHandler does up to
// v0.315 and as Thanos and Cortex append: the drop-in for
// remote.NewWriteHandler(logger, reg, app, opts.AcceptedMessages, false,
// opts.EnableTypeAndUnitLabels, opts.AppendMetadata) of those releases.
// If app is also a storage.AppendableV2 whose appenders have
// AppendExemplars (a tsdb.DB from Prometheus v0.316.0 on), the handler
// appends through that instead and answers as v0.316.0's handler does
// (see [Txn]). app's dynamic type must be comparable (see
// [refcache.Cache]).
//
// The handler takes no registry: its counts are in [WriteHandler.Stats],
// which [NewCollector] exports.
func NewWriteHandler(logger *slog.Logger, app storage.Appendable, opts Options) *WriteHandler {
	h := newWriteHandler(logger, opts)
	h.st = bindV1(app, opts.appenderV1)
	return h
}

// NewWriteHandlerV2 returns a WriteHandler that appends to app through its
// storage.AppendableV2, as Prometheus's remote.NewWriteHandler does from
// v0.316.0 on: the drop-in for remote.NewWriteHandler(logger, reg, app,
// opts.AcceptedMessages, opts.EnableTypeAndUnitLabels,
// opts.AppendMetadata). Exemplars need the appenders' AppendExemplars
// (storage.ExemplarAppenderV2), without which every request is refused
// with 500, as there; but if app is also a storage.Appendable, as a
// tsdb.DB of every release is, and its storage.AppenderV2 has no
// AppendExemplars (Prometheus before v0.316.0), the handler appends
// through storage.Appendable, as [NewWriteHandler] does. app's dynamic
// type must be comparable (see [refcache.Cache]).
func NewWriteHandlerV2(logger *slog.Logger, app storage.AppendableV2, opts Options) *WriteHandler {
	h := newWriteHandler(logger, opts)
	h.st = bindV2(app, opts.appenderV1)
	return h
}

func newWriteHandler(logger *slog.Logger, opts Options) *WriteHandler {
	body := opts.BodyReader
	if body == nil {
		body = decode.NewBodyReader(decode.BodyOptions{
			MaxBodySize: opts.MaxBodySize, MaxDecodedSize: opts.MaxDecodedSize, MaxInflightBytes: opts.MaxInflightBytes,
		})
	}
	tracker := opts.ActiveSeries
	if tracker == nil && (opts.TrackActiveSeries || opts.MaxSeries > 0) {
		var err error
		if tracker, err = activeseries.New(activeseries.Options{}); err != nil {
			panic("ingest: " + err.Error()) // not reached: the zero options are valid
		}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &WriteHandler{
		accepted: opts.AcceptedMessages,
		body:     body,
		cache:    refcache.New(refcache.Options{}),
		tracker:  tracker,
		ring:     opts.Ring,
		tenant:   opts.Tenant,
		exStore:  opts.Exemplars,
		logger:   logger,
		limits:   newLabelLimits(opts),
		metadata: opts.AppendMetadata,
		typeUnit: opts.EnableTypeAndUnitLabels,
		exOnly:   opts.AcceptExemplarOnlySeries,
		maxSer:   opts.MaxSeries,
		budget:   opts.SeriesBudget,
		symbols:  labels.NewSymbolTable(),
	}
	if h.accepted == nil {
		h.accepted = remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType}
	}
	h.maxBody, h.maxDecoded = cmp.Or(opts.MaxBodySize, decode.DefaultMaxBodySize), cmp.Or(opts.MaxDecodedSize, decode.DefaultMaxDecodedSize)
	h.maxInflight = opts.MaxInflightBytes
	h.maxExpanded = cmp.Or(opts.MaxExpandedSize, h.maxDecoded)
	if h.exStore == nil {
		h.exStore = tsdbExemplars{}
	}
	if h.ring != nil {
		h.stats.owned = make([]atomic.Int64, h.ring.Len())
	}
	h.workers.New = func() any { return h.newWorker() }
	return h
}

// Stats returns the handler's totals.
func (h *WriteHandler) Stats() Stats {
	var s Stats
	h.UpdateStats(&s)
	return s
}

// UpdateStats fills s with the handler's totals, reusing s.Owned.
func (h *WriteHandler) UpdateStats(s *Stats) {
	c := &h.stats
	s.Requests, s.Rejected = c.requests.Load(), c.rejected.Load()
	s.Samples, s.Histograms, s.Exemplars = c.samples.Load(), c.histograms.Load(), c.exemplars.Load()
	s.Series, s.NewSeries, s.InvalidSamples = c.series.Load(), c.newSeries.Load(), c.invalidSamples.Load()
	s.RefusedSeries, s.RefusedSamples = c.refusedSeries.Load(), c.refusedSamples.Load()
	s.BudgetSeries, s.BudgetSamples = c.budgetSeries.Load(), c.budgetSamples.Load()
	s.ActiveSeries = 0
	if h.tracker != nil {
		s.ActiveSeries = h.tracker.Active()
	}
	h.cache.UpdateStats(&s.Cache)
	if h.ring != nil {
		if s.Owned == nil {
			s.Owned = make(map[string]int64, h.ring.Len())
		}
		for i := range c.owned {
			s.Owned[h.ring.Endpoint(i).Address] = c.owned[i].Load()
		}
	}
}

// Purge forgets the series of the ref cache and the active-series tracker
// (if the handler has one) not seen since keepFrom, and returns how many each forgot. A program
// calls it periodically.
//
// If the cache dropped series, Purge also resets the interner (which the
// slicelabels build uses for the labels of new series), so that the
// strings of series that went away are not held for the life of the
// process: strings that the TSDB's series hold stay valid, and series
// created after the reset intern their strings anew. It always resets the
// interner of the metadata's help and unit strings (Options.AppendMetadata),
// whose strings a series can change at every request: the TSDB keeps a
// series' latest metadata, the interner only those sent since the last
// Purge.
func (h *WriteHandler) Purge(keepFrom time.Time) (cache, active int) {
	ms := keepFrom.UnixMilli()
	cache = h.cache.Purge(ms)
	if h.tracker != nil {
		active = h.tracker.Purge(ms)
	}
	if cache > 0 {
		h.strings.Reset()
	}
	h.metaStrings.Reset()
	return cache, active
}

// ResetCache empties the ref cache, as a program does when it closes the
// storage but keeps the handler, to let the closed head's memory go (the
// cache holds the storage it serves; a handler given another storage
// empties it by itself).
func (h *WriteHandler) ResetCache() { h.cache.Reset() }

// ServeHTTP answers a remote-write request. The checks come in the order of
// Prometheus's handler, whose snappy middleware runs before its method and
// content-type checks: Content-Encoding (415), body size (413), body and
// snappy block (400), method (405), Content-Type and accepted messages
// (415), then the request itself. With Options.MaxInflightBytes, a body the
// budget cannot hold is answered 503 (Prometheus has no such limit). The
// body's buffer is released, and its bytes refunded to the budget, when
// ServeHTTP returns, also if it panics; a panic while the request is being
// appended rolls its transaction back before it goes on.
func (h *WriteHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h.serve(w, req, &h.st)
}

// serve is ServeHTTP with the request appended to the storage of b.
func (h *WriteHandler) serve(w http.ResponseWriter, req *http.Request, b *binding) {
	h.stats.requests.Add(1)
	if enc := req.Header.Get("Content-Encoding"); enc != "" && enc != "snappy" {
		h.fail(w, http.StatusUnsupportedMediaType, fmt.Errorf("%v encoding (compression) is not accepted by this server; only snappy is acceptable", enc))
		return
	}
	buf, err := h.body.ReadRequest(req)
	switch {
	case errors.Is(err, decode.ErrBodyTooLarge):
		// Prometheus's words.
		h.fail(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body exceeds the %v bytes limit", h.maxBody))
		return
	case errors.Is(err, decode.ErrDecodedTooLarge):
		h.fail(w, http.StatusBadRequest, fmt.Errorf("decoded size exceeds the %v bytes limit", h.maxDecoded))
		return
	case errors.Is(err, decode.ErrInflightLimit):
		// The receiver's memory, not the client, is at fault: a 5xx, which
		// Prometheus's sender retries with backoff (it drops a batch
		// answered 429 unless retry_on_http_429 is set).
		h.fail(w, http.StatusServiceUnavailable, fmt.Errorf("request bodies in flight exceed the %v bytes limit; retry later", h.maxInflight))
		return
	case err != nil:
		h.fail(w, http.StatusBadRequest, err)
		return
	}
	defer h.body.Release(buf)

	if req.Method != http.MethodPost {
		//lint:ignore ST1005 the text remote.NewWriteHandler answers, which the differential tests compare
		h.fail(w, http.StatusMethodNotAllowed, errors.New("Method not allowed"))
		return
	}
	msg, err := parseContentType(req.Header.Get("Content-Type"))
	if err != nil {
		h.fail(w, http.StatusUnsupportedMediaType, err)
		return
	}
	if !h.accepted.Contains(msg) {
		h.fail(w, http.StatusUnsupportedMediaType, fmt.Errorf("%v protobuf message is not accepted by this server; only accepts %v", msg, h.accepted.String()))
		return
	}

	wk := h.workers.Get().(*worker)
	wk.st = b
	stats, code, err := wk.write(req.Context(), buf.B, msg)
	wk.st = nil
	if len(buf.B) > maxPooledRequest {
		wk.newDecoder()
	}
	h.workers.Put(wk)
	if msg != remoteapi.WriteV1MessageType {
		hd := w.Header()
		hd.Set(headerSamplesWritten, strconv.Itoa(stats.Samples))
		hd.Set(headerHistogramsWritten, strconv.Itoa(stats.Histograms))
		hd.Set(headerExemplarsWritten, strconv.Itoa(stats.Exemplars))
	}
	if err != nil {
		h.fail(w, code, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *WriteHandler) fail(w http.ResponseWriter, code int, err error) {
	h.stats.rejected.Add(1)
	h.logger.Warn("remote-write request rejected", "code", code, "err", err)
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
