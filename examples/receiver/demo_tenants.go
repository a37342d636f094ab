package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	config_util "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/promcompat"
	"github.com/ingestkit/ingestkit/internal/workload"
)

// maxDemoTenantLines is the most tenants the demo prints a line for.
const maxDemoTenantLines = 20

// demoTenant is the tenant header a demo request is sent with; the zero
// value sends none.
type demoTenant struct{ header, id string }

// demoTenantIDs returns the tenants of -tenants n: the default tenant
// (-tenant) first, then demo-tenant-1 to demo-tenant-<n-1>.
func demoTenantIDs(c config) []string {
	ids := []string{c.tenant}
	for k := 1; k < c.demoTenants; k++ {
		ids = append(ids, fmt.Sprintf("demo-tenant-%d", k))
	}
	return ids
}

// syntheticRequests returns the synthetic requests of a demo round, in
// order: requests of at most demoBatch distinct series, alternately 1.0
// and 2.0. With -tenants n above 1, tenant k of demoTenantIDs gets
// -synthetic-series/n of the series (the first ones one more), in requests
// of its own sent with its tenant header, and the tenants' requests are
// interleaved: the first of each tenant, then the second of each, and so
// on. With one tenant they have no tenant header.
func syntheticRequests(c config) []*request {
	ids := demoTenantIDs(c)
	n := len(ids)
	left := make([]int, n)
	for k := range left {
		left[k] = c.syntheticSeries / n
		if k < c.syntheticSeries%n {
			left[k]++
		}
	}
	var out []*request
	for i, more := 0, true; more; {
		more = false
		for k := range n {
			if left[k] == 0 {
				continue
			}
			size := min(demoBatch, left[k])
			left[k] -= size
			msg, wl := remoteapi.WriteV1MessageType, "synthetic-v1"
			if i%2 == 1 {
				msg, wl = remoteapi.WriteV2MessageType, "synthetic-v2"
			}
			name := fmt.Sprintf("synthetic-%d", i)
			if n > 1 {
				name += "@" + ids[k]
			}
			r := &request{Request: workload.Typical(name, msg, workload.TypicalSeries(size, fmt.Sprintf("%s-%d", wl, i)))}
			if n > 1 {
				r.tenant = demoTenant{c.tenantHeader, ids[k]}
			}
			out = append(out, r)
			i++
			more = true
		}
	}
	return out
}

// demoClientKey names one of the remote-write clients of drive.
type demoClientKey struct {
	msg    remoteapi.WriteMessageType
	tenant demoTenant
}

// newDemoClients returns a Prometheus remote-write client for each message
// type and tenant among bodies: a tenant header is a client's setting
// (Prometheus's remote_write headers), as one Prometheus sends one
// tenant's samples.
func newDemoClients(name string, u *url.URL, bodies []encoded) (map[demoClientKey]remote.WriteClient, error) {
	clients := map[demoClientKey]remote.WriteClient{}
	for _, b := range bodies {
		key := demoClientKey{b.msg, b.tenant}
		if clients[key] != nil {
			continue
		}
		cc := &remote.ClientConfig{
			URL:           &config_util.URL{URL: u},
			Timeout:       model.Duration(30 * time.Second),
			WriteProtoMsg: b.msg,
		}
		clientName := name + "-" + string(b.msg)
		if b.tenant.header != "" {
			cc.Headers = map[string]string{b.tenant.header: b.tenant.id}
			clientName += "-" + b.tenant.id
		}
		cl, err := remote.NewWriteClient(clientName, cc)
		if err != nil {
			return nil, err
		}
		clients[key] = cl
	}
	return clients, nil
}

// demoTenantRouter routes each request to the remote.NewWriteHandler of
// its tenant, named by the same header with the same default as the
// receiver's tenants router (requestTenant), for Prometheus's side of the
// demo. Every tenant's handler is made up front; a request for another
// tenant is answered 400. It is safe for concurrent use by multiple
// goroutines: m is not modified after it is made.
type demoTenantRouter struct {
	header, def string
	m           map[string]http.Handler
}

func (rt demoTenantRouter) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	id, err := ingest.RequestTenant(req, rt.header, rt.def)
	if err == nil && rt.m[id] == nil {
		err = fmt.Errorf("%w: %q is not a tenant of the demo", ingest.ErrInvalidTenant, id)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rt.m[id].ServeHTTP(w, req)
}

// runDemoTenants is runDemo with -tenants above 1: the receiver runs
// behind its tenant router, as serve runs it, and Prometheus's side is a
// demoTenantRouter over one remote.NewWriteHandler and TSDB per tenant.
// Both get the same requests, and every tenant's two TSDBs must hold the
// same series, samples and exemplars.
func runDemoTenants(ctx context.Context, out io.Writer, c config) (err error) {
	if c.maxTenants > 0 && c.demoTenants > c.maxTenants {
		return fmt.Errorf("-tenants %d is more than -max-tenants %d", c.demoTenants, c.maxTenants)
	}
	ids := demoTenantIDs(c)
	dirK, dirP := "", ""
	if c.dataDir != "" {
		dirK, dirP = filepath.Join(c.dataDir, "ingestkit"), filepath.Join(c.dataDir, "prometheus")
	} else {
		tmp, terr := os.MkdirTemp("", "ingestkit-receiver-demo-")
		if terr != nil {
			return terr
		}
		defer func() { err = errors.Join(err, os.RemoveAll(tmp)) }() // after the TSDBs are closed
		dirK, dirP = filepath.Join(tmp, "ingestkit"), filepath.Join(tmp, "prometheus")
	}
	// The TSDBs have Prometheus's defaults on both sides, whatever the
	// -tsdb.* flags say, so that the two sides compare.
	topts, err := tenantOptionsOf(c, nil)
	if err != nil {
		return err
	}
	topts.Dir = dirK
	// The exemplar storage too: full size from the start, as Prometheus's.
	topts.GrowExemplars = false
	tt, err := newTenants(topts)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, tt.close()) }()
	urlK, stopK, err := listen(c.listen, newRoutes(tt, newTenantCollectors(tt), func() any { return tt.seriesCounts() }, prometheus.NewRegistry()))
	if err != nil {
		return err
	}
	defer stopK()

	rt := demoTenantRouter{header: c.tenantHeader, def: c.tenant, m: map[string]http.Handler{}}
	dbsP := map[string]*tsdb.DB{}
	for _, id := range ids {
		if err := ingest.ValidTenantID(id); err != nil {
			return err
		}
		db, clean, oerr := openDB(filepath.Join(dirP, id), c.maxExemplars, c.metadataWAL, nil)
		if oerr != nil {
			return oerr
		}
		defer func() { err = errors.Join(err, clean()) }() // the named result, not a shadow
		dbsP[id] = db
		rt.m[id] = promcompat.NewWriteHandler(slog.New(slog.DiscardHandler), prometheus.NewRegistry(), db,
			remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType}, c.typeAndUnitLabels, c.metadataWAL)
	}
	promMux := http.NewServeMux()
	promMux.Handle("/api/v1/write", rt)
	urlP, stopP, err := listen("127.0.0.1:0", promMux)
	if err != nil {
		return err
	}
	defer stopP()
	fmt.Fprintf(out, "ingestkit receiver on %s (TSDBs %s)\nPrometheus remote.NewWriteHandler per tenant on %s (TSDBs %s)\n%d tenants (header %s): %s first, the default, which also gets the captured requests\n",
		urlK, filepath.Join(dirK, "<tenant>"), urlP, filepath.Join(dirP, "<tenant>"), len(ids), c.tenantHeader, c.tenant)

	bodies, err := demoBodies(c, out)
	if err != nil {
		return err
	}
	p, err := drive(ctx, out, "prometheus", urlP, bodies, c.duration)
	if err != nil {
		return err
	}
	k, err := drive(ctx, out, "ingestkit", urlK, bodies[:p.requests], 0)
	if err != nil {
		return err
	}
	sent := map[string]int{}
	for _, b := range bodies[:p.requests] {
		id := b.tenant.id
		if b.tenant.header == "" {
			id = c.tenant
		}
		sent[id]++
	}
	var differ, lines []string
	for _, id := range ids {
		tn, err := tt.acquire(id) // opens a tenant that got no request
		if err != nil {
			return err
		}
		var exK storage.ExemplarQueryable = tn.db
		if topts.RingExemplars > 0 {
			exK = tn.exRing
		}
		var tk, tp phaseResult
		tk.series, tp.series = tn.db.Head().NumSeries(), dbsP[id].Head().NumSeries()
		tk.stored, tk.storedExs, err = countStored(ctx, tn.db, exK)
		tt.release(tn)
		if err != nil {
			return err
		}
		if tp.stored, tp.storedExs, err = countStored(ctx, dbsP[id], dbsP[id]); err != nil {
			return err
		}
		if tk.series != tp.series || tk.stored != tp.stored || tk.storedExs != tp.storedExs {
			differ = append(differ, fmt.Sprintf("%s: ingestkit %d series, %d samples, %d exemplars; prometheus %d, %d, %d",
				id, tk.series, tk.stored, tk.storedExs, tp.series, tp.stored, tp.storedExs))
		}
		if sent[id] > 0 && tk.series == 0 {
			// Both sides lost the tenant's requests alike.
			differ = append(differ, fmt.Sprintf("%s: %d requests sent, no series in either TSDB", id, sent[id]))
		}
		lines = append(lines, fmt.Sprintf("  %-20s %6d requests  %7d series  %9d samples  %7d exemplars", id, sent[id], tk.series, tk.stored, tk.storedExs))
		k.series, k.stored, k.storedExs = k.series+tk.series, k.stored+tk.stored, k.storedExs+tk.storedExs
		p.series, p.stored, p.storedExs = p.series+tp.series, p.stored+tp.stored, p.storedExs+tp.storedExs
	}
	printTable(out, k, p)
	if k.failed != p.failed || k.rejected != p.rejected {
		return fmt.Errorf("the receivers answered differently: ingestkit %d rejected with 4xx, %d failed (%v); prometheus %d, %d (%v)",
			k.rejected, k.failed, k.firstErr, p.rejected, p.failed, p.firstErr)
	}
	if k.failed > 0 {
		return fmt.Errorf("requests failed: %v", k.firstErr)
	}
	if len(differ) > 0 {
		return fmt.Errorf("the two TSDBs of %d tenants differ: %v", len(differ), differ)
	}
	where := "the TSDBs' exemplar storage"
	if topts.RingExemplars > 0 {
		where = "ingestkit's exemplars.Ring of each tenant"
	}
	fmt.Fprintf(out, "\nFor each of the %d tenants, both TSDBs hold the same series, samples and exemplars (the receiver's in %s); in all %d series, %d samples and %d exemplars.\n",
		len(ids), where, k.series, k.stored, k.storedExs)
	if len(lines) <= maxDemoTenantLines {
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
	}
	if ring := topts.Receiver.Ring; ring != nil {
		owned := map[string]int64{}
		tt.each(func(tn *tenant) {
			if h := tt.handler(tn.id); h != nil {
				for a, n := range h.Stats().Owned {
					owned[a] += n
				}
			}
		})
		fmt.Fprintln(out, "\nHashring owners (series received by all tenants, per replica; not forwarded):")
		for i := range ring.Len() {
			a := ring.Endpoint(i).Address
			fmt.Fprintf(out, "  %-30s %d\n", a, owned[a])
		}
	}
	return nil
}
