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
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/exemplars"
	"github.com/ingestkit/ingestkit/ingest"
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
	maxExemplars    int64
	exemplarStore   string
	purgeInterval   time.Duration
	activeIdle      time.Duration
	syntheticSeries int

	// Operations: the TSDB's settings and the capture (ops.go,
	// capture.go).
	tsdb    tsdbConfig
	capture captureConfig
}

func main() {
	var c config
	flag.BoolVar(&c.demo, "demo", false, "start on loopback, drive the receiver and Prometheus's handler with the same traffic for -duration, print a comparison and exit")
	flag.DurationVar(&c.duration, "duration", 3*time.Second, "with -demo: how long to drive Prometheus's handler; the receiver then gets the same requests")
	flag.StringVar(&c.listen, "listen", "127.0.0.1:9201", "address to listen on (with -demo, default a free loopback port)")
	flag.StringVar(&c.dataDir, "data-dir", "", "TSDB directory (default: a fresh temporary directory, removed on exit)")
	flag.StringVar(&c.peers, "peers", "", "comma-separated hashring endpoints whose ownership of each series is reported (nothing is forwarded)")
	flag.IntVar(&c.replication, "replication-factor", 1, "hashring replication factor")
	flag.StringVar(&c.ringAlgorithm, "ring-algorithm", "hashmod", "hashring algorithm: hashmod or ketama")
	flag.StringVar(&c.tenant, "tenant", "default-tenant", "tenant the hashring hashes series with (Thanos's default tenant)")
	flag.IntVar(&c.maxLabels, "max-labels-per-series", 0, "reject series with more labels (0: no limit, as Prometheus)")
	flag.IntVar(&c.maxNameLength, "max-label-name-length", 0, "reject series with a longer label name (0: no limit)")
	flag.IntVar(&c.maxValueLength, "max-label-value-length", 0, "reject series with a longer label value (0: no limit)")
	flag.Int64Var(&c.maxExemplars, "max-exemplars", 100_000, "size of the exemplar storage")
	flag.StringVar(&c.exemplarStore, "exemplar-store", "tsdb", "where exemplars go: tsdb (the TSDB's own exemplar storage, written to its WAL and replayed at start) or ring (ingestkit's exemplars.Ring, in less memory, but in memory only: a restart loses every exemplar; its metrics are "+ringMetricsPrefix+"*)")
	flag.DurationVar(&c.purgeInterval, "purge-interval", time.Minute, "how often idle series are dropped from the ref cache and the active-series tracker (a purge that drops some from the cache also resets the interner of label strings)")
	flag.DurationVar(&c.activeIdle, "active-idle", 10*time.Minute, "a series not received for this long is no longer active")
	flag.IntVar(&c.syntheticSeries, "synthetic-series", 10_000, "with -demo: distinct series of the synthetic workload")
	// Operations: the TSDB's settings and the capture of requests for a
	// replay (ops.go, capture.go).
	tsdbFlags(flag.CommandLine, &c.tsdb)
	captureFlags(flag.CommandLine, &c.capture)
	flag.Parse()

	var err error
	if c.demo {
		listenSet := false
		flag.Visit(func(f *flag.Flag) { listenSet = listenSet || f.Name == "listen" })
		if !listenSet {
			c.listen = "127.0.0.1:0"
		}
		err = runDemo(context.Background(), os.Stdout, c)
	} else {
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
func openDB(dir string, maxExemplars int64, reg prometheus.Registerer) (db *tsdb.DB, cleanup func() error, err error) {
	return openDBWith(dir, tsdb.DefaultOptions(), maxExemplars, reg, nil)
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
func newRing(c config) (*ingest.Ring, error) {
	if c.peers == "" {
		return nil, nil
	}
	var eps []ingest.Endpoint
	for p := range strings.SplitSeq(c.peers, ",") {
		eps = append(eps, ingest.Endpoint{Address: strings.TrimSpace(p)})
	}
	return ingest.NewRing(eps, ingest.RingOptions{Algorithm: ingest.RingAlgorithm(c.ringAlgorithm), ReplicationFactor: c.replication})
}

// receiverOptions are the Receiver's options from the command line.
func receiverOptions(c config, ring *ingest.Ring, ex *exemplars.Ring, logger *slog.Logger) Options {
	var xa ExemplarStore
	if ex != nil {
		xa = RingExemplars{ex}
	}
	return Options{
		Exemplars:           xa,
		MaxLabelsPerSeries:  c.maxLabels,
		MaxLabelNameLength:  c.maxNameLength,
		MaxLabelValueLength: c.maxValueLength,
		Ring:                ring,
		Tenant:              c.tenant,
		Logger:              logger,
	}
}

// newMux returns the receiver's HTTP routes: the write endpoint, timed by a
// request-duration histogram, /metrics and /api/v1/series_count.
func newMux(r *Receiver, db *tsdb.DB, reg *prometheus.Registry) *http.ServeMux {
	reg.MustRegister(newCollector(r))
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:                           "ingestkit_receiver_request_duration_seconds",
		Help:                           "Time to answer a remote-write request.",
		Buckets:                        prometheus.DefBuckets,
		NativeHistogramBucketFactor:    1.1,
		NativeHistogramMaxBucketNumber: 100,
	}, []string{"code"})
	reg.MustRegister(duration)
	mux := http.NewServeMux()
	mux.Handle("/api/v1/write", promhttp.InstrumentHandlerDuration(duration, r))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/api/v1/series_count", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(seriesCount(r, db))
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

func seriesCount(r *Receiver, db *tsdb.DB) seriesCountResponse {
	s := r.Stats()
	h := db.Head()
	return seriesCountResponse{
		HeadSeries: h.NumSeries(), ActiveSeries: s.ActiveSeries, CachedSeries: s.CachedSeries,
		Samples: s.Samples, Histograms: s.Histograms, Exemplars: s.Exemplars,
		Requests: s.Requests, Rejected: s.Rejected, OwnedPerPeer: s.Owned,
		HeadMinTimeMs: h.MinTime(), HeadMaxTimeMs: h.MaxTime(), NewSeriesBuilt: s.NewSeries,
	}
}

// ringMetricsPrefix is the prefix of the exemplar ring's metrics, which
// would otherwise have the names that the TSDB's head registers for its
// own exemplar storage (see exemplars.CollectorOptions).
const ringMetricsPrefix = "ingestkit_exemplar_ring_"

// serve runs the receiver until ctx is done. Whatever fails, it closes the
// TSDB and removes the temporary directory it made, if any, before it
// returns.
func serve(ctx context.Context, out io.Writer, c config) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops purgeLoop whichever way serve returns
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ex, tsdbExemplars, err := exemplarStore(c)
	if err != nil {
		return err
	}
	if ex != nil {
		// The head registers Prometheus's exemplar metrics, for its own
		// storage, even when it is off: the ring's take another prefix.
		reg.MustRegister(exemplars.NewCollector(ex, exemplars.CollectorOptions{Prefix: ringMetricsPrefix}))
	}
	// Listen before the TSDB opens, so that the probes answer while it
	// replays its WAL: /-/ready says 503 until it is open (ops.go).
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	ops := &opsHandler{}
	srv := &http.Server{Handler: ops, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	defer srv.Close() // serving the probes, if serve fails before the Shutdown below
	logger := stderrLogger()
	db, cleanup, err := openTSDB(c.dataDir, c.tsdb, tsdbExemplars, reg, logger)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cleanup()) }()
	ring, err := newRing(c)
	if err != nil {
		return err
	}
	ropts := receiverOptions(c, ring, ex, logger)
	r, err := NewReceiver(db, ropts)
	if err != nil {
		return err
	}
	var h http.Handler = newMux(r, db, reg)
	if c.capture.dir != "" {
		cp, err := newCapturer(c.capture.dir, c.capture.max, cmp.Or(ropts.MaxBodySize, ingest.DefaultMaxBodySize), logger)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, cp.close()) }()
		reg.MustRegister(cp)
		h = cp.wrap(h)
	}
	go purgeLoop(ctx, r, c.purgeInterval, c.activeIdle)
	ops.setReady(h)
	fmt.Fprintf(out, "receiver: remote write on http://%s/api/v1/write, TSDB in %s\n", ln.Addr(), db.Dir())
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
	return srv.Shutdown(shutdownCtx)
}

// purgeLoop drops idle series from the ref cache and the tracker (see
// Receiver.Purge).
func purgeLoop(ctx context.Context, r *Receiver, every, idle time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.Purge(now.Add(-idle))
		}
	}
}
