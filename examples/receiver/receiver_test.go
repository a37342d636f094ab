package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/ingest/hashring"
	"github.com/ingestkit/ingestkit/ingest/refcache"
)

func TestParseContentType(t *testing.T) {
	for _, ct := range []string{
		"", contentTypeV1, contentTypeV2,
		"application/x-protobuf;proto=prometheus.WriteRequest",
		" application/x-protobuf ",
		"application/x-protobuf; proto=io.prometheus.write.v2.Request",
		"application/x-protobuf;proto=io.prometheus.write.v2.Request;charset=utf-8",
		"application/x-protobuf;proto=foo",
		"application/x-protobuf;proto",
		"application/json", "text/plain;proto=prometheus.WriteRequest",
	} {
		got, err := parseContentType(ct)
		want, werr := remoteapi.ParseProtoMsg(cmpOr(ct, contentTypeV1))
		if got != want || (err == nil) != (werr == nil) {
			t.Errorf("parseContentType(%q) = %q, %v; remoteapi.ParseProtoMsg: %q, %v", ct, got, err, want, werr)
		}
	}
}

func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

func TestSeriesString(t *testing.T) {
	for _, c := range []struct {
		ls   labels.Labels
		want string
	}{
		{labels.EmptyLabels(), "{}"},
		{labels.FromStrings("__name__", "up", "job", "x"), `{__name__="up", job="x"}`},
		{labels.FromStrings("__name__", "up", "v", strings.Repeat("a", 256)), `{__name__="up", v="` + strings.Repeat("a", 256) + `"}`},
		{labels.FromStrings("__name__", "up", "v", strings.Repeat("a", 10<<20)), `{__name__="up", v="` + strings.Repeat("a", 256) + `...(10485760 bytes)"}`},
		// Cut only when the whole set is over 1 KiB.
		{labels.FromStrings("a", strings.Repeat("b", 300), "c", strings.Repeat("d", 257)), `{a="` + strings.Repeat("b", 300) + `", c="` + strings.Repeat("d", 257) + `"}`},
		{labels.FromStrings("a", strings.Repeat("b", 600), "c", strings.Repeat("d", 500), "e", "f"), `{a="` + strings.Repeat("b", 256) + `...(600 bytes)", c="` + strings.Repeat("d", 256) + `...(500 bytes)", e="f"}`},
	} {
		if got := seriesString(c.ls); got != c.want {
			t.Errorf("seriesString(%.80s) = %.400s, want %.400s", c.ls, got, c.want)
		}
		if len(c.ls.String()) <= 4*maxErrorValue && seriesString(c.ls) != c.ls.String() {
			t.Errorf("seriesString(%s) differs from Labels.String", c.ls)
		}
	}
}

// TestRingOwners checks that every series received is counted once per
// replica, on the endpoints the ring places it on.
func TestRingOwners(t *testing.T) {
	eps := []hashring.Endpoint{{Address: "r1:10901"}, {Address: "r2:10901"}, {Address: "r3:10901"}}
	ring, err := hashring.NewRing(eps, hashring.Options{Algorithm: hashring.AlgorithmKetama, ReplicationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	db := newBenchDB(t)
	r, err := NewReceiver(db, Options{Ring: ring, Tenant: "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	series := typicalSeries(300, "")
	want := map[string]int64{}
	for _, ls := range series {
		for _, i := range ring.Replicas(hashring.Hash("team-a", ls), nil) {
			want[ring.Endpoint(i).Address]++
		}
	}
	body, err := typicalRequest("ring", remoteapi.WriteV1MessageType, series).body(time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	br := newBenchRequest(remoteapi.WriteV1MessageType)
	br.serve(r, body)
	if br.w.code != http.StatusNoContent {
		t.Fatalf("status %d: %s", br.w.code, br.w.body.String())
	}
	got := r.Stats().Owned
	total := int64(0)
	for _, ep := range eps {
		if got[ep.Address] != want[ep.Address] {
			t.Errorf("Owned[%s] = %d, want %d", ep.Address, got[ep.Address], want[ep.Address])
		}
		total += got[ep.Address]
	}
	if total != 2*300 {
		t.Errorf("owners counted %d times, want %d (300 series, 2 replicas)", total, 600)
	}
}

// TestEndpoints checks /metrics and /api/v1/series_count after a request.
func TestEndpoints(t *testing.T) {
	db := newBenchDB(t)
	r, err := NewReceiver(db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newMux(r, db, prometheus.NewRegistry()))
	defer srv.Close()
	body, err := typicalRequest("endpoints", remoteapi.WriteV2MessageType, typicalSeries(40, "")).body(time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/write", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", contentTypeV2)
	req.Header.Set("Content-Encoding", "snappy")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("write: status %d", resp.StatusCode)
	}

	get := func(path string) string {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var sc seriesCountResponse
	if err := json.Unmarshal([]byte(get("/api/v1/series_count")), &sc); err != nil {
		t.Fatal(err)
	}
	if sc.HeadSeries != 40 || sc.ActiveSeries != 40 || sc.Samples != 40 || sc.Requests != 1 || sc.Rejected != 0 {
		t.Errorf("series_count = %+v, want 40 head, active series and samples, 1 request", sc)
	}
	metrics := get("/metrics")
	for _, want := range []string{
		"ingestkit_receiver_samples_total 40",
		"ingestkit_receiver_active_series 40",
		"ingestkit_receiver_new_series_total 40",
		"ingestkit_receiver_cache_misses_total 40",
		"ingestkit_receiver_cache_stores_total 40",
		"ingestkit_receiver_cache_hits_total 0",
		`ingestkit_receiver_request_duration_seconds_count{code="204"} 1`,
	} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestConcurrent serves requests from several goroutines at once, in both
// versions, each with its own series (one goroutine's samples of a series
// must arrive in order), and checks that everything was written once. Run
// it with -race.
func TestConcurrent(t *testing.T) {
	db := newBenchDB(t)
	r, err := NewReceiver(db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const workers, requests, series = 4, 20, 200
	base := time.Now().Add(-time.Hour).UnixMilli()
	errc := make(chan error, workers)
	for w := range workers {
		go func() {
			msg := remoteapi.WriteV1MessageType
			if w%2 == 1 {
				msg = remoteapi.WriteV2MessageType
			}
			req := typicalRequest("concurrent", msg, typicalSeries(series, "worker-"+strconv.Itoa(w)))
			br := newBenchRequest(msg)
			for i := range requests {
				body, err := req.body(base + int64(i)*1000)
				if err != nil {
					errc <- err
					return
				}
				br.serve(r, body)
				if br.w.code != http.StatusNoContent {
					errc <- fmt.Errorf("worker %d request %d: status %d: %s", w, i, br.w.code, br.w.body.String())
					return
				}
			}
			errc <- nil
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	s := r.Stats()
	if s.Samples != workers*requests*series || s.NewSeries != workers*series || s.ActiveSeries != workers*series || db.Head().NumSeries() != workers*series {
		t.Errorf("Stats() = %+v, head series %d; want %d samples, %d series", s, db.Head().NumSeries(), workers*requests*series, workers*series)
	}
}

// TestPurgeResetsInterner checks that a purge that drops series from the
// ref cache lets go of the interned strings, and that series appended
// before it are still found and appended to after it.
func TestPurgeResetsInterner(t *testing.T) {
	r, err := NewReceiver(newBenchDB(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := typicalRequest("purge", remoteapi.WriteV1MessageType, typicalSeries(50, ""))
	base := time.Now().Add(-time.Hour).UnixMilli()
	br := newBenchRequest(remoteapi.WriteV1MessageType)
	serve := func(k int64) {
		t.Helper()
		b, err := req.body(base + k*100)
		if err != nil {
			t.Fatal(err)
		}
		br.serve(r, b)
		if br.w.code != http.StatusNoContent {
			t.Fatalf("status %d: %s", br.w.code, br.w.body.String())
		}
	}
	serve(0)
	r.strings.Intern([]byte("held-until-a-purge")) // the default build interns nothing itself
	if cache, _ := r.Purge(time.Now().Add(-2 * time.Hour)); cache != 0 {
		t.Fatalf("Purge before every series' last sight dropped %d from the cache", cache)
	}
	if st := r.strings.Stats(); st.Strings == 0 {
		t.Fatalf("a purge that dropped nothing reset the interner")
	}
	cache, active := r.Purge(time.Now().Add(time.Hour))
	if cache != 50 || active != 50 {
		t.Fatalf("Purge after every series' last sight dropped %d from the cache and %d from the tracker, want 50 and 50", cache, active)
	}
	if st := r.strings.Stats(); st.Strings != 0 || st.Bytes != 0 {
		t.Fatalf("after a purge that dropped series, the interner holds %+v", st)
	}
	serve(1) // the same series again, after the reset
	if got := r.Stats().Samples; got != 100 {
		t.Fatalf("Stats().Samples = %d after two requests of 50 series, want 100", got)
	}
	// The second request found its series in the head (GetRef), not in
	// the purged cache, and stored them again.
	if got, want := r.Stats().Cache, (refcache.Stats{Len: 50, Misses: 100, Stores: 100, Purged: 50}); got != want {
		t.Fatalf("Stats().Cache = %+v, want %+v", got, want)
	}
}
