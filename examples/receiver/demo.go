package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/promcompat"
)

// Demo workload shape.
const (
	demoBatch     = 2000          // series per synthetic request, Prometheus's default max_samples_per_send
	demoRoundStep = int64(1000)   // ms between rounds: each round sends every series once
	demoReqStep   = int64(10)     // ms between the requests of a round, so that series sent in both versions stay in order
	demoMaxBytes  = 32 << 20      // bodies encoded ahead of the run, at most
	demoBack      = 2 * time.Hour // the first round's age; rounds must stay in the past
)

// encoded is one request ready to send.
type encoded struct {
	msg        remoteapi.WriteMessageType
	body       []byte
	samples    int // float and histogram samples
	exemplars  int
	fromTarget string
	// exemplarOnly counts the series with exemplars and no sample, which
	// remote write 2.0 rejects.
	exemplarOnly int
	tenant       demoTenant // with -tenants: the tenant header to send
}

// phaseResult is what driving one receiver measured.
type phaseResult struct {
	name              string
	requests, failed  int // failed: not a 2xx nor a 400
	rejected          int // answered 400: partial writes
	samples           int
	exemplars         int
	elapsed           time.Duration
	mallocs, bytes    uint64
	series            uint64
	stored, storedExs int
	firstErr          error
	// byVersion splits requests, rejected, samples and exemplars by
	// protocol version: [0] is 1.0, [1] is 2.0.
	byVersion [2]versionResult
}

// versionResult is what the requests of one protocol version got.
type versionResult struct {
	requests, rejected, samples, exemplars int
	// exemplarOnly counts the series with exemplars and no sample of
	// the rejected requests.
	exemplarOnly int
}

// versionIndex returns the index of msg in phaseResult.byVersion.
func versionIndex(msg remoteapi.WriteMessageType) int {
	if msg == remoteapi.WriteV2MessageType {
		return 1
	}
	return 0
}

// runDemo runs the -demo mode: see the command's documentation.
func runDemo(ctx context.Context, out io.Writer, c config) (err error) {
	if c.exemplarOnlySeries {
		// The demo checks that the receiver's TSDB ends as Prometheus's
		// handler leaves its own, which the feature departs from.
		return fmt.Errorf("-enable-feature=%s departs from Prometheus's handler, which -demo compares the receiver with: use it in server mode", featureExemplarOnlySeries)
	}
	if c.tenantsAllowed != "" || c.tenantsAllowedFile != "" || c.tenantsAllowedPattern != "" {
		return errors.New("-tenants-allowed, -tenants-allowed-file and -tenants-allowed-pattern are for server mode: -demo makes its own tenants")
	}
	if c.demoTenants > 1 {
		return runDemoTenants(ctx, out, c)
	}
	dirK, dirP := "", ""
	if c.dataDir != "" {
		dirK, dirP = filepath.Join(c.dataDir, "ingestkit"), filepath.Join(c.dataDir, "prometheus")
	}
	ex, tsdbExemplars, err := exemplarStore(c)
	if err != nil {
		return err
	}
	dbK, cleanK, err := openDB(dirK, tsdbExemplars, c.metadataWAL, nil)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cleanK()) }()
	dbP, cleanP, err := openDB(dirP, c.maxExemplars, c.metadataWAL, nil)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cleanP()) }()

	ring, err := newRing(c)
	if err != nil {
		return err
	}
	rcv := ingest.NewWriteHandlerV2(nil, dbK, receiverOptions(c, ring, ex))
	urlK, stopK, err := listen(c.listen, newMux(rcv, dbK, prometheus.NewRegistry()))
	if err != nil {
		return err
	}
	defer stopK()
	promHandler := promcompat.NewWriteHandler(slog.New(slog.DiscardHandler), prometheus.NewRegistry(), dbP,
		remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType}, c.typeAndUnitLabels, c.metadataWAL)
	promMux := http.NewServeMux()
	promMux.Handle("/api/v1/write", promHandler)
	urlP, stopP, err := listen("127.0.0.1:0", promMux)
	if err != nil {
		return err
	}
	defer stopP()
	fmt.Fprintf(out, "ingestkit receiver on %s (TSDB %s)\nPrometheus remote.NewWriteHandler on %s (TSDB %s)\n", urlK, dbK.Dir(), urlP, dbP.Dir())

	bodies, err := demoBodies(c, out)
	if err != nil {
		return err
	}
	// Prometheus's handler, the slower, goes first for -duration; the
	// receiver then gets exactly the same requests.
	p, err := drive(ctx, out, "prometheus", urlP, bodies, c.duration)
	if err != nil {
		return err
	}
	k, err := drive(ctx, out, "ingestkit", urlK, bodies[:p.requests], 0)
	if err != nil {
		return err
	}
	var exK storage.ExemplarQueryable = dbK
	if ex != nil {
		exK = ex
	}
	for _, x := range []struct {
		r  *phaseResult
		db *tsdb.DB
		ex storage.ExemplarQueryable
	}{{&k, dbK, exK}, {&p, dbP, dbP}} {
		x.r.series = x.db.Head().NumSeries()
		if x.r.stored, x.r.storedExs, err = countStored(ctx, x.db, x.ex); err != nil {
			return err
		}
	}
	printTable(out, k, p)
	if k.failed != p.failed || k.rejected != p.rejected {
		return fmt.Errorf("the receivers answered differently: ingestkit %d rejected with 4xx, %d failed (%v); prometheus %d, %d (%v)",
			k.rejected, k.failed, k.firstErr, p.rejected, p.failed, p.firstErr)
	}
	if k.byVersion != p.byVersion {
		return fmt.Errorf("the receivers answered differently per protocol version: ingestkit %+v; prometheus %+v", k.byVersion, p.byVersion)
	}
	if k.failed > 0 {
		return fmt.Errorf("requests failed: %v", k.firstErr)
	}
	if k.stored != p.stored || k.series != p.series || k.storedExs != p.storedExs {
		return fmt.Errorf("the two TSDBs differ: ingestkit %d series, %d samples, %d exemplars; prometheus %d, %d, %d",
			k.series, k.stored, k.storedExs, p.series, p.stored, p.storedExs)
	}
	where := "the TSDB's exemplar storage"
	if ex != nil {
		where = "ingestkit's exemplars.Ring"
	}
	fmt.Fprintf(out, "\nBoth TSDBs hold the same %d series and %d samples, and the same %d exemplars (the receiver's in %s).\n", k.series, k.stored, k.storedExs, where)
	if ring != nil {
		s := rcv.Stats()
		fmt.Fprintln(out, "\nHashring owners (series received, per replica; not forwarded):")
		for i := range ring.Len() {
			a := ring.Endpoint(i).Address
			fmt.Fprintf(out, "  %-30s %d\n", a, s.Owned[a])
		}
	}
	return nil
}

// listen serves h on addr and returns its write URL.
func listen(addr string, h http.Handler) (u *url.URL, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // returns ErrServerClosed on stop
	u, err = url.Parse("http://" + ln.Addr().String() + "/api/v1/write")
	return u, func() { _ = srv.Close() }, err
}

// demoBodies encodes the rounds of the workload ahead of the run, so that
// encoding costs neither receiver time nor allocations: every round sends
// the captured requests (1.0 and 2.0) and the synthetic series (half in
// 1.0, half in 2.0), all with the round's timestamps.
func demoBodies(c config, out io.Writer) ([]encoded, error) {
	var reqs []*request
	for _, v := range []int{1, 2} {
		cr, err := capturedRequests(v)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, cr...)
	}
	captured := len(reqs)
	reqs = append(reqs, syntheticRequests(c)...)
	base := time.Now().Add(-demoBack).UnixMilli()
	maxRounds := int(demoBack.Milliseconds() / demoRoundStep)
	var (
		bodies []encoded
		total  int
	)
	for round := 0; round < maxRounds && total < demoMaxBytes; round++ {
		for j, r := range reqs {
			b, err := r.Body(base + int64(round)*demoRoundStep + int64(j)*demoReqStep)
			if err != nil {
				return nil, err
			}
			s, h, e := r.Counts()
			bodies = append(bodies, encoded{msg: r.Msg, body: b, samples: s + h, exemplars: e, fromTarget: r.Name, exemplarOnly: r.ExemplarOnly(), tenant: r.tenant})
			total += len(b)
		}
	}
	fmt.Fprintf(out, "workload: %d requests a round (%d captured, %d synthetic of %d series); %d requests (%.0f MiB) encoded ahead\n",
		len(reqs), captured, len(reqs)-captured, c.syntheticSeries, len(bodies), float64(total)/(1<<20))
	return bodies, nil
}

// drive sends bodies in order with Prometheus's remote-write client, one
// client per message type and tenant header (newDemoClients), until budget
// has passed (0: all of them).
func drive(ctx context.Context, out io.Writer, name string, u *url.URL, bodies []encoded, budget time.Duration) (phaseResult, error) {
	res := phaseResult{name: name}
	clients, err := newDemoClients(name, u, bodies)
	if err != nil {
		return res, err
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	nextReport := start.Add(500 * time.Millisecond)
	for _, b := range bodies {
		if budget > 0 && time.Since(start) > budget {
			break
		}
		rs, err := clients[demoClientKey{b.msg, b.tenant}].Store(ctx, b.body, 0)
		res.requests++
		v := &res.byVersion[versionIndex(b.msg)]
		v.requests++
		switch {
		case err == nil:
			res.samples += b.samples
			res.exemplars += b.exemplars
			v.samples += b.samples
			v.exemplars += b.exemplars
		case strings.Contains(err.Error(), "HTTP status 400 "):
			// A partial write: Prometheus's own sender sends the
			// exemplars of a 2.0 request in series of their own, without
			// samples, which the 2.0 receivers reject. The 2.0 response
			// headers say what was written.
			res.rejected++
			res.samples += rs.Samples + rs.Histograms
			res.exemplars += rs.Exemplars
			v.rejected++
			v.samples += rs.Samples + rs.Histograms
			v.exemplars += rs.Exemplars
			v.exemplarOnly += b.exemplarOnly
			if b.msg == remoteapi.WriteV1MessageType {
				res.failed++ // 1.0 requests of the workload are all valid
			}
		default:
			res.failed++
		}
		if res.failed > 0 && res.firstErr == nil {
			res.firstErr = fmt.Errorf("%s: %w", b.fromTarget, err)
		}
		if now := time.Now(); now.After(nextReport) {
			el := now.Sub(start)
			fmt.Fprintf(out, "  %-10s %5.1fs  %6d requests  %9d samples  %9.0f samples/s\n", name, el.Seconds(), res.requests, res.samples, float64(res.samples)/el.Seconds())
			nextReport = now.Add(500 * time.Millisecond)
		}
	}
	res.elapsed = time.Since(start)
	runtime.ReadMemStats(&after)
	fmt.Fprintf(out, "  %-10s %5.1fs  %6d requests  %9d samples  %9.0f samples/s  done\n", name, res.elapsed.Seconds(), res.requests, res.samples, float64(res.samples)/res.elapsed.Seconds())
	res.mallocs, res.bytes = after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc
	return res, nil
}

// countStored counts every sample in db and every exemplar in ex.
func countStored(ctx context.Context, db *tsdb.DB, ex storage.ExemplarQueryable) (samples, exemplars int, err error) {
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		return 0, 0, err
	}
	defer q.Close()
	all := labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+")
	ss := q.Select(ctx, false, nil, all)
	var it chunkenc.Iterator
	for ss.Next() {
		it = ss.At().Iterator(it)
		for it.Next() != chunkenc.ValNone {
			samples++
		}
		if err := it.Err(); err != nil {
			return 0, 0, err
		}
	}
	if err := ss.Err(); err != nil {
		return 0, 0, err
	}
	eq, err := ex.ExemplarQuerier(ctx)
	if err != nil {
		return 0, 0, err
	}
	res, err := eq.Select(math.MinInt64, math.MaxInt64, []*labels.Matcher{all})
	if err != nil {
		return 0, 0, err
	}
	for _, r := range res {
		exemplars += len(r.Exemplars)
	}
	return samples, exemplars, nil
}

// printTable prints the comparison: per receiver, the requests of each
// protocol version and what they wrote, then the time and allocations of
// the whole run, and a line on the 400s.
func printTable(out io.Writer, rs ...phaseResult) {
	fmt.Fprintln(out, "\nSame requests, same Prometheus remote-write client, identical TSDBs. Per protocol version: requests sent, those answered 400 (a partial")
	fmt.Fprintln(out, "write: the request's valid series are written, the others listed in the error), and the samples and exemplars written:")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "receiver\tversion\trequests\tpartial (400)\tsamples\texemplars\t")
	for _, r := range rs {
		for i, v := range r.byVersion {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t\n", r.name, [2]string{"1.0", "2.0"}[i], v.requests, v.rejected, v.samples, v.exemplars)
		}
	}
	_ = tw.Flush()
	fmt.Fprintln(out, "\nThe whole run (allocations are the whole process's: client, HTTP and receiver):")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "receiver\trequests\tsamples\texemplars\tseries\tseconds\tsamples/s\tallocs/sample\tbytes/sample\t")
	for _, r := range rs {
		n := float64(max(r.samples, 1))
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.2f\t%.0f\t%.2f\t%.0f\t\n", r.name, r.requests, r.samples, r.exemplars, r.series,
			r.elapsed.Seconds(), float64(r.samples)/r.elapsed.Seconds(), float64(r.mallocs)/n, float64(r.bytes)/n)
	}
	_ = tw.Flush()
	if len(rs) > 0 && rs[0].rejected > 0 {
		fmt.Fprintln(out, "\n"+rejectedLine(rs[0]))
	}
}

// rejectedLine says what the 400s of r are.
func rejectedLine(r phaseResult) string {
	v2 := r.byVersion[1]
	return fmt.Sprintf("The 400s, %d of %d requests (%.0f%%), are %d 2.0 requests as Prometheus's own sender sent them (testdata/remote-write): %d of their series carry exemplars and no sample, which remote write 2.0 rejects; Prometheus's handler answers them with the same 400, and neither writes those exemplars.",
		r.rejected, r.requests, 100*float64(r.rejected)/float64(max(r.requests, 1)), v2.rejected, v2.exemplarOnly)
}
