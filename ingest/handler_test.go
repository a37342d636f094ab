package ingest

import (
	"cmp"
	"net/http"
	"strings"
	"testing"
	"time"

	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/ingest/refcache"
	"github.com/ingestkit/ingestkit/internal/difftest"
	"github.com/ingestkit/ingestkit/internal/rwbench"
	"github.com/ingestkit/ingestkit/internal/workload"
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
		want, werr := remoteapi.ParseProtoMsg(cmp.Or(ct, contentTypeV1))
		if got != want || (err == nil) != (werr == nil) {
			t.Errorf("parseContentType(%q) = %q, %v; remoteapi.ParseProtoMsg: %q, %v", ct, got, err, want, werr)
		}
	}
}

// TestProtocolWords checks that the words of the protocol the
// differential tests send and compare with are the handler's.
func TestProtocolWords(t *testing.T) {
	for _, c := range []struct{ name, got, want string }{
		{"content type 1.0", difftest.ContentTypeV1, contentTypeV1},
		{"content type 2.0", difftest.ContentTypeV2, contentTypeV2},
		{"samples written", difftest.HeaderSamplesWritten, headerSamplesWritten},
		{"histograms written", difftest.HeaderHistogramsWritten, headerHistogramsWritten},
		{"exemplars written", difftest.HeaderExemplarsWritten, headerExemplarsWritten},
	} {
		if c.got != c.want {
			t.Errorf("difftest's %s = %q, the handler's %q", c.name, c.got, c.want)
		}
	}
	if difftest.MaxReportedErrors != maxReportedErrors {
		t.Errorf("difftest.MaxReportedErrors = %d, maxReportedErrors %d", difftest.MaxReportedErrors, maxReportedErrors)
	}
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

// TestPurgeResetsInterner checks that a purge that drops series from the
// ref cache lets go of the interned strings, and that series appended
// before it are still found and appended to after it.
func TestPurgeResetsInterner(t *testing.T) {
	r := NewWriteHandlerV2(nil, difftest.NewDB(t, 100_000, false), Options{TrackActiveSeries: true})
	req := workload.Typical("purge", remoteapi.WriteV1MessageType, workload.TypicalSeries(50, ""))
	base := time.Now().Add(-time.Hour).UnixMilli()
	br := rwbench.NewRequest(remoteapi.WriteV1MessageType)
	serve := func(k int64) {
		t.Helper()
		b, err := req.Body(base + k*100)
		if err != nil {
			t.Fatal(err)
		}
		br.Serve(r, b)
		if br.W.Code != http.StatusNoContent {
			t.Fatalf("status %d: %s", br.W.Code, br.W.Body.String())
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
