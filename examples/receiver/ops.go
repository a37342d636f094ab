package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/tsdb"
)

// The texts of the probes, in the words of Prometheus's own /-/healthy and
// /-/ready (web/web.go) with the receiver's name.
const (
	healthyText  = "ingestkit receiver is Healthy.\n"
	readyText    = "ingestkit receiver is Ready.\n"
	notReadyText = "Service Unavailable"
)

// opsHandler serves the receiver's probes while it starts, and its routes
// once they are set: /-/healthy answers 200 as long as the process serves
// HTTP; /-/ready answers 503 until [opsHandler.setReady] has been called,
// once the TSDB is open (its WAL replayed), and 200 after; every other path
// answers 503 until then, and goes to the routes after.
//
// An opsHandler is safe for concurrent use by multiple goroutines: setReady
// may be called while requests are served.
type opsHandler struct {
	next atomic.Pointer[http.Handler] // nil until ready
}

// setReady sends every request but the probes to h from now on.
func (o *opsHandler) setReady(h http.Handler) { o.next.Store(&h) }

func (o *opsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	next := o.next.Load()
	switch r.URL.Path {
	case "/-/healthy":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			fmt.Fprint(w, healthyText)
		}
		return
	case "/-/ready":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		if next == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, notReadyText)
			return
		}
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			fmt.Fprint(w, readyText)
		}
		return
	}
	if next == nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, notReadyText)
		return
	}
	(*next).ServeHTTP(w, r)
}

// tsdbConfig holds the TSDB's settings of the command line. Its zero value
// is Prometheus's defaults: a zero retention keeps tsdb.DefaultOptions'
// 15d, as Prometheus does when no retention is set.
type tsdbConfig struct {
	outOfOrderWindow model.Duration
	retention        model.Duration
	retentionSize    byteSize
	stripeSize       stripeSize
}

// defaultStripeSize is the receiver's head stripe size for each tenant's
// TSDB. Prometheus's 16,384 (Cortex's and Mimir's default too) allocates
// that many locks and two maps a stripe when a head opens, before its
// first series; with the exemplar storage allocated in full, that is what
// makes a small tenant costly (BenchmarkTenantCost, impl=prometheus
// against impl=ingestkit). Stripes spread the locks of series lookups and
// creations: with 1,024, two lookups of one tenant on different cores pick
// the same stripe one time in 1,024 rather than one in 16,384, and each
// stripe's maps hold sixteen times more of the tenant's series. A tenant
// of millions of series, written from many cores at once, may want
// Prometheus's size back.
const defaultStripeSize = 1024

// stripeSize is -tsdb.stripe-size: a power of 2, or 0 for Prometheus's.
type stripeSize int

func (s *stripeSize) String() string { return strconv.Itoa(int(*s)) }

func (s *stripeSize) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n&(n-1) != 0 || n > 1<<20 {
		return fmt.Errorf("receiver: -tsdb.stripe-size %q: want a power of 2 up to %d, or 0 for Prometheus's %d", v, 1<<20, tsdb.DefaultStripeSize)
	}
	*s = stripeSize(n)
	return nil
}

// tsdbFlags registers the TSDB's flags into c.
func tsdbFlags(fs *flag.FlagSet, c *tsdbConfig) {
	c.retention = model.Duration(time.Duration(tsdb.DefaultOptions().RetentionDuration) * time.Millisecond)
	fs.Var(&c.outOfOrderWindow, "tsdb.out-of-order-time-window", "how far behind the newest sample of a series a sample is still accepted (Prometheus's out_of_order_time_window; 0: none, as Prometheus); units ms, s, m, h, d, w, y")
	fs.Var(&c.retention, "tsdb.retention.time", "how long to keep blocks (Prometheus's retention time); units ms, s, m, h, d, w, y")
	c.stripeSize = defaultStripeSize
	fs.Var(&c.stripeSize, "tsdb.stripe-size", "stripes of each tenant's head, a power of 2: its locks and maps of series, allocated when it opens (0: Prometheus's 16384; see the README)")
	fs.Var(&c.retentionSize, "tsdb.retention.size", "the most bytes of blocks to keep, oldest deleted first (0: no limit, as Prometheus); units B, KB, MB, GB, TB, PB, EB, powers of 2 as Prometheus's")
}

// options applies c to opts.
func (c tsdbConfig) options(opts *tsdb.Options) {
	opts.OutOfOrderTimeWindow = time.Duration(c.outOfOrderWindow).Milliseconds()
	if c.retention > 0 {
		opts.RetentionDuration = time.Duration(c.retention).Milliseconds()
	}
	opts.MaxBytes = int64(c.retentionSize)
	if c.stripeSize > 0 {
		opts.StripeSize = int(c.stripeSize)
	}
}

// errByteSize is returned for a -tsdb.retention.size that is not a size.
var errByteSize = errors.New("receiver: not a size: want a number and a unit, such as 512MB")

// byteSize is a flag of a size in bytes written as Prometheus's
// storage.tsdb.retention.size: a number and a unit of powers of 2 (1KB is
// 1024 bytes); 0 needs no unit.
type byteSize int64

func (s byteSize) String() string { return strconv.FormatInt(int64(s), 10) + "B" }

// Set parses v. Sizes of 8 EiB or more do not fit and are an error.
func (s *byteSize) Set(v string) error {
	if v == "0" {
		*s = 0
		return nil
	}
	i := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if i <= 0 {
		return fmt.Errorf("%w: %q", errByteSize, v)
	}
	shift, ok := byteUnits[v[i:]]
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if !ok || err != nil || n > math.MaxInt64>>shift {
		return fmt.Errorf("%w: %q", errByteSize, v)
	}
	*s = byteSize(n << shift)
	return nil
}

// byteUnits are the units of a byteSize, as shifts.
var byteUnits = map[string]uint{"B": 0, "KB": 10, "MB": 20, "GB": 30, "TB": 40, "PB": 50, "EB": 60}

// openTSDB is openDB with the command line's TSDB settings, logging to
// logger (nil: nowhere).
func openTSDB(dir string, c tsdbConfig, maxExemplars int64, reg prometheus.Registerer, logger *slog.Logger) (db *tsdb.DB, cleanup func() error, err error) {
	opts := tsdb.DefaultOptions()
	c.options(opts)
	return openDBWith(dir, opts, maxExemplars, reg, logger)
}

// temporaryDataText is the line serve prints without -data-dir.
const temporaryDataText = "receiver: no -data-dir: the TSDB is in a temporary directory, removed on exit with everything written to it; set -data-dir to keep it\n"

// stderrLogger is the receiver's logger: text lines on stderr.
func stderrLogger() *slog.Logger { return slog.New(slog.NewTextHandler(os.Stderr, nil)) }
