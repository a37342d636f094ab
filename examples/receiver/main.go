package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/exemplars"
	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/ingest/hashring"
)

// config is the command line.
type config struct {
	demo            bool
	duration        time.Duration
	listen          string
	dataDir         string
	peers           string
	replication     int
	ringAlgorithm   string
	tenant          string
	maxLabels       int
	maxNameLength   int
	maxValueLength  int
	maxExpandedSize int64
	maxExemplars    int64
	exemplarStore   string
	purgeInterval   time.Duration
	activeIdle      time.Duration
	syntheticSeries int
	demoTenants     int // -tenants

	// The HTTP server's limits (see newServer).
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	idleTimeout       time.Duration
	maxInflightBytes  int64

	// The features of -enable-feature.
	metadataWAL, typeAndUnitLabels bool
	// exemplarOnlySeries is ingestkit's own feature, not Prometheus's: see
	// ingest.Options.AcceptExemplarOnlySeries.
	exemplarOnlySeries bool

	// Tenants (tenants.go); tenant is the default tenant.
	tenantHeader       string
	tenantIdle         time.Duration
	maxSeriesPerTenant int
	maxTenants         int
	// Prometheus's --auto-gomemlimit and --auto-gomemlimit.ratio.
	autoGoMemLimit  bool
	goMemLimitRatio float64
	// The budgets of all tenants together (budget.go).
	maxSeriesTotal, maxLabelBytesTotal, maxExemplarsTotal int64
	// The allowed tenants (allow.go): none set allows every tenant.
	tenantsAllowed, tenantsAllowedFile, tenantsAllowedPattern string
	// The authenticating proxy in front (proxy.go): none set trusts every
	// client.
	tenantProxyHeader, tenantProxyNetworks string

	// Operations: the TSDB's settings and the capture (ops.go,
	// capture.go).
	tsdb    tsdbConfig
	capture captureConfig
}

// Prometheus's feature flags (--enable-feature) that the receiver has.
const (
	featureMetadataWAL       = "metadata-wal-records"
	featureTypeAndUnitLabels = "type-and-unit-labels"
	// featureExemplarOnlySeries is the receiver's own: Prometheus has no
	// such flag (ingest.Options.AcceptExemplarOnlySeries).
	featureExemplarOnlySeries = "exemplar-only-series"
)

// setFeatures sets c's features from a comma-separated -enable-feature
// value, as Prometheus's --enable-feature reads it, except that an unknown
// name is an error rather than a warning.
func (c *config) setFeatures(v string) error {
	for f := range strings.SplitSeq(v, ",") {
		switch f = strings.TrimSpace(f); f {
		case "":
		case featureMetadataWAL:
			c.metadataWAL = true
		case featureTypeAndUnitLabels:
			c.typeAndUnitLabels = true
		case featureExemplarOnlySeries:
			c.exemplarOnlySeries = true
		default:
			return fmt.Errorf("unknown feature %q: want %s, %s or %s", f, featureMetadataWAL, featureTypeAndUnitLabels, featureExemplarOnlySeries)
		}
	}
	return nil
}

// Defaults of the HTTP server's limits.
const (
	// defaultReadTimeout is the remote_timeout of Prometheus's sender: a
	// request not read by then has been given up by its sender.
	defaultReadTimeout = 30 * time.Second
	// defaultIdleTimeout is how long Prometheus's own web server keeps an
	// idle connection (its -web.read-timeout, which serves as its idle
	// timeout).
	defaultIdleTimeout = 5 * time.Minute
	// defaultMaxInflightBytes holds 4 requests at the largest body and
	// decoded sizes (32 MiB each) at once, or some 450 of the 0.56 MiB
	// (compressed and decoded) of a Prometheus sender at its default batch
	// size (testdata/remote-write).
	defaultMaxInflightBytes = 256 << 20
)

func main() {
	var c config
	registerFlags(flag.CommandLine, &c)
	flag.Parse()

	var err error
	if c.demo {
		listenSet := false
		flag.Visit(func(f *flag.Flag) { listenSet = listenSet || f.Name == "listen" })
		if !listenSet {
			c.listen = "127.0.0.1:0"
		}
		err = runDemo(context.Background(), os.Stdout, c)
	} else if err = setMemoryLimit(c, stderrLogger()); err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = serve(ctx, os.Stdout, c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "receiver:", err)
		os.Exit(1)
	}
}

// openDB opens a TSDB in dir, or in a fresh temporary directory if dir is
// empty; cleanup closes it and removes that temporary directory. If it
// fails, or tsdb.Open panics (as a registry does on a metric registered
// twice), it removes the temporary directory before it returns or the
// panic goes on.
// metadataWAL turns on the TSDB's metadata WAL records, the storage half of
// Prometheus's metadata-wal-records feature.
func openDB(dir string, maxExemplars int64, metadataWAL bool, reg prometheus.Registerer) (db *tsdb.DB, cleanup func() error, err error) {
	opts := tsdb.DefaultOptions()
	opts.EnableMetadataWALRecords = metadataWAL
	return openDBWith(dir, opts, maxExemplars, reg, nil)
}

// openDBWith is openDB with opts, logging to logger (nil: nowhere).
func openDBWith(dir string, opts *tsdb.Options, maxExemplars int64, reg prometheus.Registerer, logger *slog.Logger) (db *tsdb.DB, cleanup func() error, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tmp := ""
	if dir == "" {
		if tmp, err = os.MkdirTemp("", "ingestkit-receiver-"); err != nil {
			return nil, nil, err
		}
		dir = tmp
		defer func() {
			if db == nil {
				os.RemoveAll(tmp)
			}
		}()
	}
	opts.EnableExemplarStorage = maxExemplars > 0
	opts.MaxExemplars = maxExemplars
	db, err = tsdb.Open(dir, logger, reg, opts, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the TSDB in %s: %w", dir, err)
	}
	return db, func() error {
		err := db.Close()
		if tmp != "" {
			err = errors.Join(err, os.RemoveAll(tmp))
		}
		return err
	}, nil
}

// exemplarStore returns the exemplar ring of -exemplar-store=ring, or nil,
// and the size of the TSDB's own exemplar storage: 0 (off) with the ring.
func exemplarStore(c config) (*exemplars.Ring, int64, error) {
	switch c.exemplarStore {
	case "ring":
		return exemplars.New(c.maxExemplars, exemplars.Options{}), 0, nil
	case "tsdb":
		return nil, c.maxExemplars, nil
	default:
		return nil, 0, fmt.Errorf("-exemplar-store %q: want ring or tsdb", c.exemplarStore)
	}
}

// newRing builds the hashring of -peers, or returns nil without peers.
func newRing(c config) (*hashring.Ring, error) {
	if c.peers == "" {
		return nil, nil
	}
	var eps []hashring.Endpoint
	for p := range strings.SplitSeq(c.peers, ",") {
		eps = append(eps, hashring.Endpoint{Address: strings.TrimSpace(p)})
	}
	return hashring.NewRing(eps, hashring.Options{Algorithm: hashring.Algorithm(c.ringAlgorithm), ReplicationFactor: c.replication})
}

// receiverOptions are the write handlers' options from the command line.
func receiverOptions(c config, ring *hashring.Ring, ex *exemplars.Ring) ingest.Options {
	var xa ingest.ExemplarStore
	if ex != nil {
		xa = ingest.RingExemplars{Ring: ex}
	}
	return ingest.Options{
		MaxInflightBytes:         c.maxInflightBytes,
		Exemplars:                xa,
		AppendMetadata:           c.metadataWAL,
		EnableTypeAndUnitLabels:  c.typeAndUnitLabels,
		AcceptExemplarOnlySeries: c.exemplarOnlySeries,
		MaxLabelsPerSeries:       c.maxLabels,
		MaxLabelNameLength:       c.maxNameLength,
		MaxLabelValueLength:      c.maxValueLength,
		MaxExpandedSize:          c.maxExpandedSize,
		Ring:                     ring,
		Tenant:                   c.tenant,
		MaxSeries:                c.maxSeriesPerTenant,
		TrackActiveSeries:        true, // the stats and metrics report active series
	}
}

// newMux returns the HTTP routes of a single write handler over db, as the demo
// runs it: see newRoutes.
func newMux(r *ingest.WriteHandler, db *tsdb.DB, reg *prometheus.Registry) *http.ServeMux {
	return newRoutes(r, []prometheus.Collector{ingest.NewCollector(r, ingest.CollectorOptions{Prefix: metricsPrefix})}, func() any { return seriesCount(r, db) }, reg)
}

// newRoutes returns the receiver's HTTP routes: the write endpoint, write,
// timed by a request-duration histogram, /metrics, which registers cs, and
// /api/v1/series_count, which shows what counts returns.
func newRoutes(write http.Handler, cs []prometheus.Collector, counts func() any, reg *prometheus.Registry) *http.ServeMux {
	reg.MustRegister(cs...)
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:                           metricsPrefix + "request_duration_seconds",
		Help:                           "Time to answer a remote-write request.",
		Buckets:                        prometheus.DefBuckets,
		NativeHistogramBucketFactor:    1.1,
		NativeHistogramMaxBucketNumber: 100,
	}, []string{"code"})
	reg.MustRegister(duration)
	mux := http.NewServeMux()
	mux.Handle("/api/v1/write", promhttp.InstrumentHandlerDuration(duration, write))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/api/v1/series_count", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(counts())
	})
	return mux
}

// seriesCountResponse is what /api/v1/series_count shows.
type seriesCountResponse struct {
	HeadSeries     uint64           `json:"head_series"`
	ActiveSeries   int              `json:"active_series"`
	CachedSeries   int              `json:"cached_series"`
	Samples        int64            `json:"samples_written"`
	Histograms     int64            `json:"histograms_written"`
	Exemplars      int64            `json:"exemplars_written"`
	Requests       int64            `json:"requests"`
	Rejected       int64            `json:"rejected_requests"`
	OwnedPerPeer   map[string]int64 `json:"series_owned_per_peer,omitempty"`
	HeadMinTimeMs  int64            `json:"head_min_time_ms"`
	HeadMaxTimeMs  int64            `json:"head_max_time_ms"`
	NewSeriesBuilt int64            `json:"new_series_built"`
}

// seriesCount returns the counts of r, nil if the tenant has no write
// handler yet, and of its TSDB db.
func seriesCount(r *ingest.WriteHandler, db *tsdb.DB) seriesCountResponse {
	var s ingest.Stats
	if r != nil {
		r.UpdateStats(&s)
	}
	h := db.Head()
	return seriesCountResponse{
		HeadSeries: h.NumSeries(), ActiveSeries: s.ActiveSeries, CachedSeries: s.Cache.Len,
		Samples: s.Samples, Histograms: s.Histograms, Exemplars: s.Exemplars,
		Requests: s.Requests, Rejected: s.Rejected, OwnedPerPeer: s.Owned,
		HeadMinTimeMs: h.MinTime(), HeadMaxTimeMs: h.MaxTime(), NewSeriesBuilt: s.NewSeries,
	}
}

// ringMetricsPrefix is the prefix of the exemplar ring's metrics, which
// would otherwise have the names that the TSDB's head registers for its
// own exemplar storage (see exemplars.CollectorOptions).
const ringMetricsPrefix = "ingestkit_exemplar_ring_"

// serve runs the receiver until ctx is done, with one TSDB per tenant in
// -data-dir/<tenant> (tenants.go). Whatever fails, it closes the tenants'
// TSDBs and removes the temporary directory it made, if any, before it
// returns.
func serve(ctx context.Context, out io.Writer, c config) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops purgeLoop whichever way serve returns
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	logger := stderrLogger()
	topts, err := tenantOptionsOf(c, logger)
	if err != nil {
		return err
	}
	// Listen before the tenants' TSDBs open, so that the probes answer
	// while they replay their WALs: /-/ready says 503 until the default
	// tenant is open (ops.go).
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	ops := &opsHandler{}
	srv := newServer(c, ops)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	defer srv.Close() // serving the probes, if serve fails before the Shutdown below
	dir := c.dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ingestkit-receiver-"); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, os.RemoveAll(dir)) }() // after tt.close
	}
	topts.Dir, topts.TSDB, topts.Registerer = dir, c.tsdb, reg
	tt, err := newTenants(topts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tt.close()) }()
	// Readiness waits for the default tenant's WAL replay, as Prometheus's
	// for its TSDB; the other tenants found in dir open meanwhile, in the
	// background, up to -max-tenants.
	if err := tt.openDefault(); err != nil {
		return err
	}
	existing, err := tt.existing()
	if err != nil {
		return err
	}
	go tt.openAll(existing)
	proxy, err := newTrustedProxy(c.tenantProxyHeader, c.tenantProxyNetworks, c.tenantHeader, logger)
	if err != nil {
		return err
	}
	var h http.Handler = newRoutes(proxy.wrap(tt), append(newTenantCollectors(tt), proxy.collectors()...), func() any { return tt.seriesCounts() }, reg)
	if c.capture.dir != "" {
		cp, err := newCapturer(c.capture.dir, c.capture.max, cmp.Or(topts.Receiver.MaxBodySize, decode.DefaultMaxBodySize), c.tenantHeader, logger)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, cp.close()) }()
		reg.MustRegister(cp)
		h = cp.wrap(h)
	}
	if topts.Allowed != nil {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		go topts.Allowed.watch(ctx, allowlistCheck, hup, logger)
	}
	go purgeLoop(ctx, tt, c.purgeInterval, c.activeIdle)
	go accountLoop(ctx, tt, logger)
	if c.tenantIdle > 0 {
		go tenantIdleLoop(ctx, tt, c.purgeInterval, c.tenantIdle, logger)
	}
	ops.setReady(h)
	fmt.Fprintf(out, "receiver: remote write on http://%s/api/v1/write, TSDB in %s, tenant header %s, default tenant %s\n",
		ln.Addr(), filepath.Join(dir, "<tenant>"), tt.opts.Header, tt.opts.Default)
	if c.dataDir == "" {
		fmt.Fprint(out, temporaryDataText)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		// Handlers still run: end them, since closing the tenants waits
		// for them.
		return errors.Join(err, srv.Close())
	}
	return nil
}

// newServer returns the HTTP server of h with the timeouts of the command
// line. The read timeout closes a connection whose request is not all in by
// then, which is what frees the body buffer of a client that announced more
// than it sends (the body reader's in-flight limit bounds how much such
// clients hold meanwhile).
func newServer(c config, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.readHeaderTimeout,
		ReadTimeout:       c.readTimeout,
		WriteTimeout:      c.writeTimeout,
		IdleTimeout:       c.idleTimeout,
	}
}

// purgeLoop drops idle series from the ref cache and the tracker (see
// ingest.WriteHandler.Purge), of one write handler or of every tenant's.
func purgeLoop(ctx context.Context, r interface{ Purge(time.Time) (int, int) }, every, idle time.Duration) {
	tick(ctx, every, func(now time.Time) { r.Purge(now.Add(-idle)) })
}

// tick calls f with the time of each tick, every every, until ctx is done.
func tick(ctx context.Context, every time.Duration, f func(now time.Time)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			f(now)
		}
	}
}

// The receiver's label limits, which Prometheus's handler does not have:
// what one series may make the process hold, far above what ordinary
// senders reach (Mimir's defaults are 30 labels and 2048 bytes of value,
// which some exporters pass; Prometheus and Thanos have none).
const (
	defaultMaxLabels      = 128
	defaultMaxValueLength = 64 << 10
)

// The receiver's budgets of all tenants together, which Prometheus has no
// need of (one TSDB) and Thanos and Mimir leave to per-tenant limits. With
// -max-tenants tenants of at most maxTenantCost each before their series
// (TestTenantCost) and -max-inflight-bytes of request bodies, they keep the
// process within 4 GiB of memory when every one of them is spent at once,
// under the soft memory limit of -auto-gomemlimit: internal/cmd/budgetfill
// is the experiment. -max-series-total counts series whatever their
// labels, and -max-label-bytes-total bounds those labels, which the head
// keeps once and its postings index and exemplar storage refer to or copy,
// so that the largest series the per-series label limits allow cannot take
// the process past its memory either. -max-exemplars-total is what 20
// tenants at the default -max-exemplars hold.
const (
	defaultMaxSeriesTotal     = 300_000
	defaultMaxLabelBytesTotal = 256 << 20
	defaultMaxExemplarsTotal  = 2_000_000
)

// setMemoryLimit sets the Go runtime's soft memory limit as Prometheus's
// --auto-gomemlimit does, if c asks for it: without one, the heap of a
// receiver at its budgets may grow to twice what it holds before the
// garbage collector runs (GOGC=100), past the memory the budgets are
// sized for.
func setMemoryLimit(c config, logger *slog.Logger) error {
	if !c.autoGoMemLimit {
		return nil
	}
	if !(c.goMemLimitRatio > 0 && c.goMemLimitRatio <= 1) {
		return fmt.Errorf("-auto-gomemlimit.ratio %v: want more than 0 and at most 1", c.goMemLimitRatio)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return nil // as automemlimit does: the environment's is kept
	}
	// automemlimit's providers, whose API is the same in every release
	// that the supported Prometheus releases require (its setter was
	// renamed in v1.0.0, which Prometheus v0.316.0 requires).
	total, err := memlimit.ApplyFallback(memlimit.FromCgroup, memlimit.FromSystem)()
	if err != nil || total == 0 {
		// As Prometheus: the receiver runs without a limit.
		logger.Warn("detecting the memory limit failed; running without GOMEMLIMIT", "err", err)
		return nil
	}
	limit := int64(float64(total) * c.goMemLimitRatio)
	debug.SetMemoryLimit(limit)
	logger.Info("GOMEMLIMIT set", "component", "automemlimit", "limit", limit, "detected", total, "ratio", c.goMemLimitRatio)
	return nil
}

// registerFlags registers the command line into fs, with c to hold it.
func registerFlags(fs *flag.FlagSet, c *config) {
	fs.BoolVar(&c.demo, "demo", false, "start on loopback, drive the receiver and Prometheus's handler with the same traffic for -duration, print a comparison and exit")
	fs.DurationVar(&c.duration, "duration", 3*time.Second, "with -demo: how long to drive Prometheus's handler; the receiver then gets the same requests")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:9201", "address to listen on (with -demo, default a free loopback port)")
	fs.StringVar(&c.dataDir, "data-dir", "", "directory of the TSDBs, one per tenant in <data-dir>/<tenant> (default: a fresh temporary directory, removed on exit)")
	fs.StringVar(&c.peers, "peers", "", "comma-separated hashring endpoints whose ownership of each series is reported (nothing is forwarded)")
	fs.IntVar(&c.replication, "replication-factor", 1, "hashring replication factor")
	fs.StringVar(&c.ringAlgorithm, "ring-algorithm", "hashmod", "hashring algorithm: hashmod or ketama")
	fs.StringVar(&c.tenant, "tenant", ingest.DefaultTenant, "default tenant: the tenant of a request without a tenant header (Thanos's default-tenant); the hashring hashes each series with its request's tenant")
	fs.IntVar(&c.maxLabels, "max-labels-per-series", defaultMaxLabels, "reject series with more labels (0: no limit, as Prometheus); the default is far above Mimir's 30, which ordinary senders rarely reach")
	fs.IntVar(&c.maxNameLength, "max-label-name-length", 0, "reject series with a longer label name (0: no limit)")
	fs.IntVar(&c.maxValueLength, "max-label-value-length", defaultMaxValueLength, "reject series with a longer label value (0: no limit, as Prometheus); the default is far above Mimir's 2048, which ordinary senders rarely reach")
	fs.Int64Var(&c.maxExpandedSize, "max-expanded-size", 0, "refuse, with a 400 before any append, a remote-write 2.0 request whose series' labels and metadata, symbols resolved, take more bytes (0: the 32 MiB decoded size limit, what a 1.0 request can carry; -1: no limit, as Prometheus)")
	fs.Int64Var(&c.maxExemplars, "max-exemplars", 100_000, "size of each tenant's exemplar storage: the TSDB's starts at 1024 in server mode and doubles up to this as exemplars arrive")
	fs.StringVar(&c.exemplarStore, "exemplar-store", "tsdb", "where exemplars go: tsdb (the TSDB's own exemplar storage, written to its WAL and replayed at start) or ring (ingestkit's exemplars.Ring, in less memory, but in memory only: a restart loses every exemplar; its metrics are "+ringMetricsPrefix+"*)")
	fs.DurationVar(&c.purgeInterval, "purge-interval", time.Minute, "how often idle series are dropped from the ref cache and the active-series tracker (a purge that drops some from the cache also resets the interner of label strings)")
	fs.DurationVar(&c.activeIdle, "active-idle", 10*time.Minute, "a series not received for this long is no longer active")
	fs.IntVar(&c.syntheticSeries, "synthetic-series", 10_000, "with -demo: distinct series of the synthetic workload")
	fs.IntVar(&c.demoTenants, "tenants", 1, "with -demo: spread the synthetic workload over this many tenants (the -tenant-header of each request; the captured requests go to the default tenant), behind the receiver's tenant router and, for Prometheus's handler, one remote.NewWriteHandler and TSDB per tenant, and compare every tenant's two TSDBs")
	fs.DurationVar(&c.readHeaderTimeout, "read-header-timeout", 10*time.Second, "longest time to read a request's headers (0: -read-timeout)")
	fs.DurationVar(&c.readTimeout, "read-timeout", defaultReadTimeout, "longest time to read a whole request, body included, after which the connection is closed (0: none); the default is the remote_timeout of Prometheus's sender")
	fs.DurationVar(&c.writeTimeout, "write-timeout", 0, "longest time from the end of a request's headers to the end of its response, processing included (0: none, as Prometheus)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", defaultIdleTimeout, "longest time a keep-alive connection waits for its next request (0: -read-timeout); the default is Prometheus's")
	fs.Int64Var(&c.maxInflightBytes, "max-inflight-bytes", defaultMaxInflightBytes, "most bytes of request bodies, compressed and decoded, held at once across all requests; a request beyond it is answered 503, which Prometheus's sender retries (a request needs up to 64 MiB; 0: no limit)")
	fs.Func("enable-feature", "comma-separated Prometheus features to enable, off by default as in Prometheus: "+featureMetadataWAL+" (attach each 2.0 series' metadata to its appends and keep it in the TSDB's WAL), "+featureTypeAndUnitLabels+" (add __type__ and __unit__ labels from each 2.0 series' metadata); and ingestkit's own "+featureExemplarOnlySeries+" (keep the exemplars of 2.0 series that carry no sample, as Prometheus's sender sends every exemplar: the 2.0 specification as written today and Prometheus's handler refuse such series, see prometheus/prometheus#17857, #19416 and prometheus/docs#3085)", c.setFeatures)

	// Tenants: one TSDB per tenant in -data-dir/<tenant>.
	fs.StringVar(&c.tenantHeader, "tenant-header", ingest.DefaultTenantHeader, "request header that names the tenant (Thanos's; X-Scope-OrgID for Mimir and Cortex); tenant IDs are validated as Mimir validates them: at most 150 bytes of [a-zA-Z0-9!-_.*'()], not . or ..")
	fs.DurationVar(&c.tenantIdle, "tenant-idle", time.Hour, "close the TSDB of a tenant that received nothing for this long, checked every -purge-interval, and drop its ref cache, tracker and interner; its next request opens it again (0: never)")
	fs.IntVar(&c.maxTenants, "max-tenants", 1000, "refuse, with a 503, the first request of a new tenant while this many are open: each costs a TSDB and its exemplar storage (0: no limit)")
	fs.StringVar(&c.tenantsAllowed, "tenants-allowed", "", "comma-separated tenants allowed to write; with none of the -tenants-allowed* flags every tenant is, otherwise a request of a tenant none of them names is answered 403 before its TSDB is opened or its directory made")
	fs.StringVar(&c.tenantsAllowedFile, "tenants-allowed-file", "", "file of tenants allowed to write, one a line (# comments), read again on SIGHUP and when it changes (checked every 10s); see -tenants-allowed")
	fs.StringVar(&c.tenantProxyHeader, "tenant-proxy-header", "", "request header in which an authenticating proxy in front states the tenant it authenticated; when set, a write request without one valid tenant ID in it is answered 401, one whose -tenant-header names another tenant 403, and one that names none is the proxy's tenant's. Set -tenant-proxy-networks too, so that clients cannot set it themselves")
	fs.StringVar(&c.tenantProxyNetworks, "tenant-proxy-networks", "", "comma-separated CIDR prefixes or addresses the authenticating proxy connects from; when set, a write request from any other address is answered 403")
	fs.StringVar(&c.tenantsAllowedPattern, "tenants-allowed-pattern", "", "regular expression (RE2, matched against the whole tenant ID) of tenants allowed to write; see -tenants-allowed")
	fs.Int64Var(&c.maxSeriesTotal, "max-series-total", defaultMaxSeriesTotal, "refuse, with a 400, the series new to their tenant's head while the heads of all tenants hold this many; the request's other series are written (0: no limit)")
	fs.BoolVar(&c.autoGoMemLimit, "auto-gomemlimit", true, "in server mode, set the Go runtime's soft memory limit (GOMEMLIMIT) to -auto-gomemlimit.ratio of the container's memory limit, or else of the machine's memory, as Prometheus's --auto-gomemlimit does; a GOMEMLIMIT in the environment is kept")
	fs.Float64Var(&c.goMemLimitRatio, "auto-gomemlimit.ratio", 0.9, "with -auto-gomemlimit, the ratio of the detected memory that GOMEMLIMIT is set to, in (0, 1]")
	fs.Int64Var(&c.maxLabelBytesTotal, "max-label-bytes-total", defaultMaxLabelBytesTotal, "refuse, with a 400, the series new to their tenant's head while the labels of the series of all tenants' heads take this many bytes (names and values); the request's other series are written (0: no limit)")
	fs.Int64Var(&c.maxExemplarsTotal, "max-exemplars-total", defaultMaxExemplarsTotal, "most slots of the exemplar storages (TSDB or ring) of all tenants together: a tenant's storage grows towards -max-exemplars only while they hold fewer (0: no limit)")
	fs.IntVar(&c.maxSeriesPerTenant, "max-series-per-tenant", 0, "refuse, with a 400, the new series of a tenant that has this many active series (see -active-idle); the request's other series are written (0: no limit)")

	// Operations: the TSDB's settings and the capture of requests for a
	// replay (ops.go, capture.go).
	tsdbFlags(fs, &c.tsdb)
	captureFlags(fs, &c.capture)
}
