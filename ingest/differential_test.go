package ingest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/exemplars"
	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
)

// TestDifferential sends the same requests (difftest.Cases) to Prometheus's
// remote.NewWriteHandler and to the WriteHandler, each over its own
// tsdb.DB, and compares status codes, the 2.0 written headers, error
// messages and everything the two TSDBs hold afterwards.
//
// It does so once for each exemplar store of the handler, the TSDB's own
// and an exemplars.Ring (then over a TSDB whose exemplar storage is off, as
// the receiver runs it), whose exemplars are compared with those of
// Prometheus's TSDB; and for every combination of the metadata-wal-records
// and type-and-unit-labels features, over TSDBs that keep metadata WAL
// records, whose records are compared too. The ring runs with the features
// all off and all on: they do not meet the exemplar path.
func TestDifferential(t *testing.T) {
	cases := difftest.Cases(t)
	all := difftest.AllFeatures
	for _, store := range []string{"tsdb", "ring"} {
		for i, f := range all {
			if store == "ring" && i != 0 && i != len(all)-1 {
				continue
			}
			t.Run("exemplars="+store+"/"+f.String(), func(t *testing.T) {
				for _, c := range cases {
					t.Run(c.Name, func(t *testing.T) { testDifferential(t, c, f, store) })
				}
			})
		}
	}
}

func testDifferential(t *testing.T, c difftest.Case, f difftest.Features, store string) {
	dbP := difftest.NewDB(t, 100_000, true)
	hP := difftest.Oracle(dbP, f)
	var dbK *tsdb.DB
	var exK storage.ExemplarQueryable
	opts := ingest.Options{AppendMetadata: f.AppendMetadata, EnableTypeAndUnitLabels: f.TypeAndUnitLabels}
	if store == "ring" {
		dbK = difftest.NewDB(t, 0, true)
		ring := exemplars.New(100_000, exemplars.Options{})
		exK, opts.Exemplars = ring, ingest.RingExemplars{Ring: ring}
	} else {
		dbK = difftest.NewDB(t, 100_000, true)
		exK = dbK
	}
	hK := ingest.NewWriteHandlerV2(nil, dbK, opts)
	wrote := false
	for i, s := range c.Steps {
		rP, rK := httptest.NewRecorder(), httptest.NewRecorder()
		hP.ServeHTTP(rP, s.Request())
		hK.ServeHTTP(rK, s.Request())
		if difftest.UnlimitedOracle(t, s, rK) {
			continue
		}
		if rK.Code != rP.Code {
			t.Fatalf("step %d: status %d, Prometheus %d\ningestkit:  %.500s\nprometheus: %.500s", i, rK.Code, rP.Code, rK.Body, rP.Body)
		}
		wrote = wrote || rK.Code == http.StatusNoContent || rK.Header().Get(difftest.HeaderSamplesWritten) > "0"
		for _, h := range append(difftest.WrittenHeaders, "Content-Type") {
			if gk, gp := rK.Header().Values(h), rP.Header().Values(h); strings.Join(gk, ",") != strings.Join(gp, ",") {
				t.Errorf("step %d: %s = %q, Prometheus %q", i, h, gk, gp)
			}
		}
		differs := slices.Contains(c.BodyDiffers, i)
		if !differs && !difftest.SameErrors(rK.Body.String(), rP.Body.String()) {
			t.Errorf("step %d: body\n%.1000s\nPrometheus:\n%.1000s", i, rK.Body, rP.Body)
		}
		if differs && (rK.Body.Len() == 0) != (rP.Body.Len() == 0) {
			t.Errorf("step %d: body %q, Prometheus %q", i, rK.Body, rP.Body)
		}
	}
	gotK, gotP := difftest.DumpStorage(t, dbK, exK), difftest.DumpDB(t, dbP)
	if wrote && gotK == "" {
		t.Errorf("a request succeeded but the TSDB is empty")
	}
	if gotK != gotP {
		t.Errorf("TSDB after the requests:\n%.3000s\nPrometheus's:\n%.3000s", gotK, gotP)
	}
	metaK, metaP := difftest.DumpMetadata(t, dbK), difftest.DumpMetadata(t, dbP)
	if metaK != metaP {
		t.Errorf("metadata WAL records:\n%s", difftest.LineDiff(metaK, metaP))
	}
	// That the features did something, or nothing.
	if c.Metadata && f.AppendMetadata != (metaK != "") {
		t.Errorf("metadata WAL records with %v:\n%.1000s", f, metaK)
	}
	if c.Metadata && f.TypeAndUnitLabels && !strings.Contains(gotK, "__type__=") {
		t.Errorf("TSDB with %v:\n%.1000s", f, gotK)
	}
}

// TestDifferentialExemplarEviction sends, in both versions, series with
// exemplars in an order other than their refs', with plain series between
// them, to TSDBs whose exemplar storage holds two exemplars: which ones it
// keeps depends on the order it was given them, request order in
// Prometheus's handler, which the WriteHandler keeps for the series with
// exemplars while it appends the others in AppendOrder.
func TestDifferentialExemplarEviction(t *testing.T) {
	T := time.Now().Add(-time.Hour).UnixMilli()
	withEx := func(i int, t int64) difftest.Series {
		s := difftest.FloatSeries(t, 1, "__name__", fmt.Sprintf("s%d", i))
		s.Exemplars = []exemplar.Exemplar{{Labels: labels.FromStrings("trace_id", fmt.Sprint(i, "-", t)), Value: 1, Ts: t, HasTs: true}}
		return s
	}
	plain := func(i int, t int64) difftest.Series {
		return difftest.FloatSeries(t, 1, "__name__", fmt.Sprintf("p%d", i))
	}
	first := []difftest.Series{withEx(0, T), plain(0, T), withEx(1, T), plain(1, T), withEx(2, T), plain(2, T)}
	second := []difftest.Series{plain(2, T+1000), withEx(2, T+1000), plain(1, T+1000), plain(0, T+1000), withEx(1, T+1000), withEx(0, T+1000)}
	for _, v := range []int{1, 2} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			step := difftest.V1Step
			if v == 2 {
				step = difftest.V2Step
			}
			dbP, dbK := difftest.NewDBWith(t, tsdb.DefaultOptions(), 2), difftest.NewDBWith(t, tsdb.DefaultOptions(), 2)
			hP, hK := difftest.Oracle(dbP, difftest.Features{}), ingest.NewWriteHandlerV2(nil, dbK, ingest.Options{})
			for i, s := range []difftest.Step{step(t, first), step(t, second)} {
				rP, rK := httptest.NewRecorder(), httptest.NewRecorder()
				hP.ServeHTTP(rP, s.Request())
				hK.ServeHTTP(rK, s.Request())
				if rK.Code != rP.Code || rK.Code != http.StatusNoContent {
					t.Fatalf("step %d: status %d, Prometheus %d, want 204: %s", i, rK.Code, rP.Code, rK.Body)
				}
			}
			if gotK, gotP := difftest.DumpDB(t, dbK), difftest.DumpDB(t, dbP); gotK != gotP {
				t.Errorf("TSDB:\n%s\nPrometheus's:\n%s", gotK, gotP)
			}
		})
	}
}
