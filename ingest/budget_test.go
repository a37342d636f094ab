package ingest_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/ingestkit/ingestkit/ingest"
)

// TestSeriesBudget shares a budget of 10 series between the handlers of
// two TSDBs. The first writes 6 new series; of the second's 6 new series,
// 4 are written and 2 refused with a 400 that names the budget, every
// other series of the request written. Once the budget is spent, a known
// series is still written and a new one refused, in both protocol
// versions; when the owner reports fewer series held (SetHeld), new series
// are written again. Each handler's Stats count what the budget refused.
func TestSeriesBudget(t *testing.T) {
	ts := time.Now().Add(-time.Minute).UnixMilli()
	budget := ingest.NewSeriesBudget(10)
	dbA, dbB := openRefusedDB(t, nil), openRefusedDB(t, nil)
	hA := ingest.NewWriteHandlerV2(nil, dbA, ingest.Options{SeriesBudget: budget})
	hB := ingest.NewWriteHandlerV2(nil, dbB, ingest.Options{SeriesBudget: budget})
	names := func(prefix string, n int) []string {
		var s []string
		for i := range n {
			s = append(s, fmt.Sprintf("%s_%d", prefix, i))
		}
		return s
	}
	post := func(h http.Handler, v2 bool, ts int64, names ...string) (int, string) {
		t.Helper()
		body, ct := refusedBody(t, v2, ts, false, names...)
		w := postRefused(h, body, ct)
		return w.Code, w.Body.String()
	}

	if code, body := post(hA, false, ts, names("a", 6)...); code != http.StatusNoContent {
		t.Fatalf("6 new series of 10: %d %q, want 204", code, body)
	}
	if held := budget.Held(); held != 6 {
		t.Errorf("held %d after 6 new series, want 6", held)
	}
	code, body := post(hB, true, ts, names("b", 6)...)
	if code != http.StatusBadRequest || strings.Count(body, "series budget") != 2 || !strings.Contains(body, "b_4") || !strings.Contains(body, "b_5") {
		t.Fatalf("6 new series with 4 left: %d %q, want 400 refusing b_4 and b_5 for the budget", code, body)
	}
	if n := dbB.Head().NumSeries(); n != 4 {
		t.Errorf("the second TSDB holds %d series, want 4", n)
	}

	// Spent: a known series is written, a new one refused, in 1.0 too.
	for _, v2 := range []bool{false, true} {
		ts += 1000
		code, body := post(hA, v2, ts, "a_0", "a_new", "a_1")
		if code != http.StatusBadRequest || !strings.Contains(body, "a_new") || strings.Count(body, "series budget") != 1 {
			t.Errorf("v2=%v, known and new series with the budget spent: %d %q, want 400 refusing a_new", v2, code, body)
		}
	}
	if n := dbA.Head().NumSeries(); n != 6 {
		t.Errorf("the first TSDB holds %d series, want its 6", n)
	}
	for _, s := range []string{"a_0", "a_1"} {
		if got := countSamples(t, dbA, s); got != 3 {
			t.Errorf("series %s has %d samples, want 3: a known series is never refused", s, got)
		}
	}
	if st := hA.Stats(); st.BudgetSeries != 2 || st.BudgetSamples != 2 || st.RefusedSeries != 0 {
		t.Errorf("first handler's stats: %d series, %d samples refused by the budget, %d by MaxSeries; want 2, 2, 0", st.BudgetSeries, st.BudgetSamples, st.RefusedSeries)
	}
	if st := hB.Stats(); st.BudgetSeries != 2 || st.BudgetSamples != 2 {
		t.Errorf("second handler's stats: %d series, %d samples refused by the budget; want 2, 2", st.BudgetSeries, st.BudgetSamples)
	}

	// The owner counts fewer series held, as after a head compaction.
	budget.SetHeld(9)
	ts += 1000
	if code, body := post(hA, false, ts, "a_new"); code != http.StatusNoContent {
		t.Errorf("a new series with room for one: %d %q, want 204", code, body)
	}
}

// countSamples is the number of float samples of the series named name
// in db.
func countSamples(t *testing.T, db *tsdb.DB, name string) int {
	t.Helper()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, "__name__", name))
	n := 0
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != chunkenc.ValNone {
			n++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSeriesBytesBudget bounds the label bytes of the series new to two
// TSDBs at 100 with room for 1,000 series: of ten new series of 11 bytes
// of labels each ({__name__="s_N"}), nine are written and the tenth
// refused with a 400 that names the budget; a known series is still
// written; when the owner reports fewer bytes held, a new series is
// written again, into the other TSDB, and one whose labels alone pass the
// limit never is.
func TestSeriesBytesBudget(t *testing.T) {
	ts := time.Now().Add(-time.Minute).UnixMilli()
	budget := ingest.NewSeriesBytesBudget(1000, 100)
	dbA, dbB := openRefusedDB(t, nil), openRefusedDB(t, nil)
	hA := ingest.NewWriteHandlerV2(nil, dbA, ingest.Options{SeriesBudget: budget})
	hB := ingest.NewWriteHandlerV2(nil, dbB, ingest.Options{SeriesBudget: budget})
	post := func(h http.Handler, v2 bool, ts int64, names ...string) (int, string) {
		t.Helper()
		body, ct := refusedBody(t, v2, ts, false, names...)
		w := postRefused(h, body, ct)
		return w.Code, w.Body.String()
	}
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprintf("s_%d", i))
	}
	if n := ingest.LabelBytes(labels.FromStrings("__name__", "s_0")); n != 11 {
		t.Fatalf("LabelBytes = %d, want 11", n)
	}
	code, body := post(hA, true, ts, names...)
	if code != http.StatusBadRequest || strings.Count(body, "series budget") != 1 || !strings.Contains(body, "s_9") || !strings.Contains(body, "100 bytes of labels") {
		t.Fatalf("ten series of 11 bytes with 100 left: %d %q, want 400 refusing s_9 for the budget's bytes", code, body)
	}
	if n := dbA.Head().NumSeries(); n != 9 {
		t.Errorf("the TSDB holds %d series, want 9", n)
	}
	if held, bytes := budget.Held(), budget.HeldLabelBytes(); held != 9 || bytes != 99 {
		t.Errorf("held %d series of %d bytes, want 9 of 99", held, bytes)
	}
	ts += 1000
	if code, body := post(hA, false, ts, "s_0", "s_1"); code != http.StatusNoContent {
		t.Errorf("known series with the budget spent: %d %q, want 204", code, body)
	}
	budget.SetHeldLabelBytes(0)
	if code, body := post(hB, false, ts, "s_9"); code != http.StatusNoContent {
		t.Errorf("a new series after the owner reported none held: %d %q, want 204", code, body)
	}
	if code, _ := post(hB, false, ts, strings.Repeat("x", 100)); code != http.StatusBadRequest {
		t.Errorf("a series of 108 bytes of labels in a budget of 100: %d, want 400", code)
	}
	if st := hB.Stats(); st.BudgetSeries != 1 {
		t.Errorf("second handler's stats: %d series refused by the budget, want 1", st.BudgetSeries)
	}
}
