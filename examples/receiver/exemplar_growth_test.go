package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/internal/difftest"
)

// exemplarsStep is one series with n exemplars, from ts on, one a
// millisecond.
func exemplarsStep(t *testing.T, ts int64, from, n int) difftest.Step {
	t.Helper()
	s := difftest.FloatSeries(ts+int64(n), 1, "__name__", "with_exemplars", "job", "tenants")
	for i := range n {
		s.Exemplars = append(s.Exemplars, exemplar.Exemplar{Labels: labels.FromStrings("trace_id", fmt.Sprint(from+i)), Value: 1, Ts: ts + int64(i), HasTs: true})
	}
	return difftest.V1Step(t, []difftest.Series{s})
}

// countExemplars is the number of exemplars q holds: a TSDB or an
// exemplars.Ring.
func countExemplars(t *testing.T, q storage.ExemplarQueryable) int {
	t.Helper()
	eq, err := q.ExemplarQuerier(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := eq.Select(math.MinInt64, math.MaxInt64, []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+")})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range res {
		n += len(r.Exemplars)
	}
	return n
}

// heldExemplars is the number of exemplars tenant id holds, in its ring
// if it has one, else in its TSDB.
func heldExemplars(t *testing.T, tt *tenants, id string) int {
	t.Helper()
	tt.mu.RLock()
	tn := tt.m[id]
	tt.mu.RUnlock()
	if tn.exRing == nil {
		return countExemplars(t, tn.db)
	}
	return countExemplars(t, tn.exRing)
}

// TestTenantExemplarsGrow checks the growth of a tenant's exemplar
// storage, the TSDB's and an exemplars.Ring: it opens at
// initialExemplars, keeps what it is sent up to that, doubles once half of
// it was written, keeps growing as exemplars arrive up to the limit and no
// further. A tenant closed and opened again replays its exemplars into TSDB
// storage of the size it grew to; its ring, in memory only, starts small
// and empty again. A tenant that writes no exemplar keeps its small
// storage.
func TestTenantExemplarsGrow(t *testing.T) {
	const max = 4 * initialExemplars
	for _, store := range []string{"tsdb", "ring"} {
		t.Run("store="+store, func(t *testing.T) {
			dir := t.TempDir()
			opts := tenantOptions{Dir: dir, MaxExemplars: max, GrowExemplars: true}
			if store == "ring" {
				opts.MaxExemplars, opts.RingExemplars = -1, max
			}
			tt := newTestTenants(t, opts)
			ts := time.Now().Add(-time.Minute).UnixMilli()
			mustSend(t, tt, "quiet", seriesOf(t, ts, 1, "x"), http.StatusNoContent)

			sent := 0
			send := func(n int) {
				t.Helper()
				mustSend(t, tt, "busy", exemplarsStep(t, ts+int64(sent), sent, n), http.StatusNoContent)
				sent += n
				if err := tt.growExemplars(); err != nil {
					t.Fatal(err)
				}
			}
			size := func(id string) int64 {
				tt.mu.RLock()
				defer tt.mu.RUnlock()
				return tt.m[id].exSize
			}
			send(initialExemplars/2 - 1)
			if got := size("busy"); got != initialExemplars {
				t.Fatalf("after %d exemplars the storage holds %d, want %d", sent, got, initialExemplars)
			}
			send(1)
			if got := size("busy"); got != 2*initialExemplars {
				t.Fatalf("after %d exemplars the storage holds %d, want %d", sent, got, 2*initialExemplars)
			}
			for range 4 {
				send(initialExemplars)
			}
			if got := size("busy"); got != max {
				t.Fatalf("after %d exemplars the storage holds %d, want the limit %d", sent, got, max)
			}
			if got := heldExemplars(t, tt, "busy"); got != min(sent, max) {
				t.Errorf("the storage holds %d exemplars of %d sent, want %d", got, sent, min(sent, max))
			}
			if got := size("quiet"); got != initialExemplars {
				t.Errorf("a tenant without exemplars has storage of %d, want %d", got, initialExemplars)
			}

			if n, err := tt.closeIdle(time.Now().Add(time.Hour)); err != nil || n != 2 {
				t.Fatalf("closeIdle = %d, %v; want both tenants closed", n, err)
			}
			wantSize, wantHeld := int64(max), min(sent, max)
			if store == "ring" {
				wantSize, wantHeld = initialExemplars, 0
				if _, err := os.Stat(filepath.Join(dir, "busy", exemplarSizeFile)); err == nil {
					t.Errorf("a ring's size was written to %s", exemplarSizeFile)
				}
			} else if b, err := os.ReadFile(filepath.Join(dir, "busy", exemplarSizeFile)); err != nil || string(b) != fmt.Sprintln(max) {
				t.Fatalf("%s holds %q, %v; want %d", exemplarSizeFile, b, err, max)
			}
			mustSend(t, tt, "busy", seriesOf(t, ts+int64(2*sent), 1, "x"), http.StatusNoContent)
			if got := size("busy"); got != wantSize {
				t.Errorf("reopened, the storage holds %d, want %d", got, wantSize)
			}
			if got := heldExemplars(t, tt, "busy"); got != wantHeld {
				t.Errorf("reopened, the storage holds %d exemplars, want %d", got, wantHeld)
			}
		})
	}
}

// TestTenantExemplarsTotal grows a tenant's exemplar storage under
// MaxExemplarsTotal: with two tenants open at initialExemplars each and a
// total of 2.5 times that, the busy tenant grows by the half left, not to
// twice its size, and then no more.
func TestTenantExemplarsTotal(t *testing.T) {
	tt := newTestTenants(t, tenantOptions{MaxExemplars: 8 * initialExemplars, MaxExemplarsTotal: 5 * initialExemplars / 2, GrowExemplars: true})
	ts := time.Now().Add(-time.Minute).UnixMilli()
	mustSend(t, tt, "quiet", seriesOf(t, ts, 1, "x"), http.StatusNoContent)
	for i := range 3 {
		mustSend(t, tt, "busy", exemplarsStep(t, ts+int64(i*initialExemplars), i*initialExemplars, initialExemplars), http.StatusNoContent)
		if err := tt.growExemplars(); err != nil {
			t.Fatal(err)
		}
	}
	tt.mu.RLock()
	got := tt.m["busy"].exSize
	tt.mu.RUnlock()
	if want := int64(3 * initialExemplars / 2); got != want {
		t.Errorf("busy tenant's storage %d, want %d: the total left room for %d more", got, want, initialExemplars/2)
	}
}

// headBytes is the label bytes of the series db's head holds, summed from
// a querier over it.
func headBytes(t *testing.T, db *tsdb.DB) int64 {
	t.Helper()
	q, err := tsdb.NewBlockQuerier(tsdb.NewRangeHead(db.Head(), math.MinInt64, math.MaxInt64), math.MinInt64, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, "__name__", ".+"))
	var n int64
	for ss.Next() {
		n += int64(ingest.LabelBytes(ss.At().Labels()))
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCountHeldLabelBytes checks the label bytes countHeld reports to the
// series budget against those of the series the tenants' heads hold: after
// the first series, after more (counted from where it stopped), after a
// head truncation dropped some, and after a tenant closed and opened
// again, its head replayed from the WAL.
func TestCountHeldLabelBytes(t *testing.T) {
	budget := ingest.NewSeriesBytesBudget(math.MaxInt64, 1<<30)
	tt := newTestTenants(t, tenantOptions{Receiver: ingest.Options{SeriesBudget: budget}})
	ts := time.Now().Add(-2 * time.Hour).UnixMilli()
	check := func(when string) {
		t.Helper()
		tt.countHeld()
		var want int64
		for _, id := range tt.openTenants() {
			want += headBytes(t, tt.tenantDB(id))
		}
		if got := budget.HeldLabelBytes(); got != want || want == 0 {
			t.Errorf("%s: %d label bytes counted, the heads hold %d", when, got, want)
		}
	}
	mustSend(t, tt, "a", seriesOf(t, ts, 1, "old_1", "old_22", "old_333"), http.StatusNoContent)
	mustSend(t, tt, "b", seriesOf(t, ts, 1, "b_1"), http.StatusNoContent)
	check("first series")
	mustSend(t, tt, "a", seriesOf(t, ts+time.Hour.Milliseconds(), 1, "new_4444", "new_55555"), http.StatusNoContent)
	check("more series")

	db := tt.tenantDB("a")
	if err := db.Head().Truncate(ts + time.Hour.Milliseconds()/2); err != nil {
		t.Fatal(err)
	}
	if n := db.Head().NumSeries(); n != 2 {
		t.Fatalf("the truncated head holds %d series, want the 2 new ones", n)
	}
	check("truncated")

	if n, err := tt.closeIdle(time.Now().Add(time.Hour)); err != nil || n != 2 {
		t.Fatalf("closeIdle = %d, %v; want both tenants closed", n, err)
	}
	mustSend(t, tt, "a", seriesOf(t, ts+time.Hour.Milliseconds()+1, 2, "new_4444"), http.StatusNoContent)
	check("reopened")
}

// TestMaxLabelBytesTotalFlag runs tenants with the options of
// -max-label-bytes-total 100 and no series limit: a request of ten series
// of 25 bytes of labels each ({__name__="s_N", job="tenants"}) writes four
// and is answered 400 for the rest.
func TestMaxLabelBytesTotalFlag(t *testing.T) {
	opts := costOptions(t, "ingestkit", t.TempDir(), "-max-label-bytes-total", "100")
	tt, err := newTenants(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tt.close() })
	var names []string
	for i := range 10 {
		names = append(names, fmt.Sprint("s_", i))
	}
	rec := mustSend(t, tt, "a", seriesOf(t, time.Now().UnixMilli(), 1, names...), http.StatusBadRequest)
	if !strings.Contains(rec.Body.String(), "100 bytes of labels") {
		t.Errorf("body %q does not name the limit", rec.Body)
	}
	if n := tt.tenantDB("a").Head().NumSeries(); n != 4 {
		t.Errorf("the head holds %d series, want 4", n)
	}
}
