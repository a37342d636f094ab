package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
	"github.com/ingestkit/ingestkit/internal/workload"
)

// TestEndpoints checks /metrics and /api/v1/series_count after a request.
func TestEndpoints(t *testing.T) {
	db := newBenchDB(t)
	r := ingest.NewWriteHandlerV2(nil, db, ingest.Options{TrackActiveSeries: true}) // as receiverOptions
	srv := httptest.NewServer(newMux(r, db, prometheus.NewRegistry()))
	defer srv.Close()
	body, err := workload.Typical("endpoints", remoteapi.WriteV2MessageType, workload.TypicalSeries(40, "")).Body(time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/write", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", difftest.ContentTypeV2)
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
