//go:build slicelabels

package thanos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	pkgerrors "github.com/pkg/errors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/thanos-io/thanos/pkg/block/metadata"
	"github.com/thanos-io/thanos/pkg/receive"
	"github.com/thanos-io/thanos/pkg/store/labelpb"
	"github.com/thanos-io/thanos/pkg/store/storepb/prompb"

	"github.com/ingestkit/ingestkit/ingest/refcache"
)

// writerRequests are requests() and the cases that test the Writer's own
// paths: a sample too far in the future; exemplars of a series whose last
// sample is rejected (Thanos drops them); exemplars of a series with no
// sample, which the TSDB holds (Thanos appends them), and of one it does
// not; a series twice in a request, the second time with exemplars only;
// an exemplar whose labels are too long; labels out of order and repeated.
func writerRequests() []writeRequest {
	reqs := requests()
	future := time.Now().Add(2 * time.Hour).UnixMilli()
	noSamples := func(s prompb.TimeSeries) prompb.TimeSeries {
		s.Samples = nil
		return s
	}
	long := float("up", 3, 5000, 1, false)
	long.Exemplars = []prompb.Exemplar{{Labels: []labelpb.ZLabel{{Name: "trace_id", Value: strings.Repeat("x", 200)}}, Value: 1, Timestamp: 5000}}
	own := []prompb.TimeSeries{
		float("up", 0, future, 1, false),              // too far in the future
		float("up", 1, 1500, 1, true),                 // out of order: its exemplar is dropped
		noSamples(float("up", 2, 5000, 1, true)),      // held by the TSDB: its exemplar is kept
		noSamples(float("nowhere", 0, 5000, 1, true)), // not held: dropped
		float("twice", 0, 5000, 1, false),             // new, then
		noSamples(float("twice", 0, 5001, 1, true)),   // again, exemplar only: kept
		long, // exemplar labels too long
		{Labels: []labelpb.ZLabel{{Name: "b", Value: "1"}, {Name: "a", Value: "1"}}, Samples: []prompb.Sample{{Timestamp: 5000, Value: 1}}},
		{Labels: []labelpb.ZLabel{{Name: "a", Value: "1"}, {Name: "a", Value: "2"}}, Samples: []prompb.Sample{{Timestamp: 5000, Value: 1}}},
		float("up", 4, 5000, 1, true),
	}
	return append(reqs, writeRequest{"a", own})
}

// newMultiTSDB opens a Thanos MultiTSDB in a temporary directory, with
// exemplar storage, a retention of 6h, no bucket, and pruned tenants
// removed at once.
func newMultiTSDB(t testing.TB) *receive.MultiTSDB {
	t.Helper()
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	m := receive.NewMultiTSDB(root, log.NewNopLogger(), prometheus.NewRegistry(), &tsdb.Options{
		MinBlockDuration:      (2 * time.Hour).Milliseconds(),
		MaxBlockDuration:      (2 * time.Hour).Milliseconds(),
		RetentionDuration:     (6 * time.Hour).Milliseconds(),
		NoLockfile:            true,
		EnableExemplarStorage: true,
		MaxExemplars:          1000,
	}, labels.FromStrings("replica", "test"), "tenant_id", nil, false, false, metadata.NoneFunc, receive.WithGCImmediately())
	t.Cleanup(m.Close)
	return m
}

// tenantDB returns tenant's TSDB in s, a MultiTSDB or tenants.
func tenantDB(t *testing.T, s receive.TenantStorage, tenant string) *tsdb.DB {
	t.Helper()
	a, err := s.TenantAppendable(tenant)
	if err != nil {
		t.Fatal(err)
	}
	db := a.(*receive.ReadyStorage).Get()
	if db == nil {
		t.Fatalf("tenant %s has no TSDB", tenant)
	}
	return db
}

// class is how Thanos's handler classifies a local write's error: by its
// errors.Cause, which it counts as a conflict (409), as not ready (503), or
// as neither.
func class(err error) string {
	if err == nil {
		return "none"
	}
	switch c := pkgerrors.Cause(err); {
	case c.Error() == "conflict" || isConflict(c):
		return "conflict"
	case c.Error() == "target not ready" || c == tsdb.ErrNotReady:
		return "not ready"
	default:
		return "other: " + c.Error()
	}
}

// checkSameError requires got to read as want and to be classified alike
// by Thanos's handler; and, if unwraps, errors.Is to find in got every
// storage and labelpb sentinel its message names.
func checkSameError(t *testing.T, what string, got, want error, unwraps bool) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: Write = %v, want %v", what, got, want)
	}
	if g, w := class(got), class(want); g != w {
		t.Errorf("%s: the handler classifies the error as %s, Thanos's as %s", what, g, w)
	}
	for _, s := range []error{
		labelpb.ErrOutOfOrderLabels, labelpb.ErrDuplicateLabels, labelpb.ErrEmptyLabels,
		storage.ErrOutOfOrderSample, storage.ErrDuplicateSampleForTimestamp, storage.ErrOutOfBounds, storage.ErrTooOldSample,
		storage.ErrOutOfOrderExemplar, storage.ErrDuplicateExemplar, storage.ErrExemplarLabelLength,
	} {
		if unwraps && want != nil && strings.Contains(want.Error(), s.Error()) && !errors.Is(got, s) {
			t.Errorf("%s: errors.Is(%v) = false", what, s)
		}
	}
}

// TestWriterMatchesThanos sends the same requests to Thanos's
// receive.Writer and to a Writer, each over storage of its own, and
// requires the same error from every Write and the same TSDB contents
// (series, samples, histograms, exemplars) for every tenant; over
// tenants of the test's own (one not ready, one unknown) and over Thanos's
// MultiTSDB, where the tenants are then pruned, which closes and removes
// their TSDBs, and written again: the Writer's caches start empty then,
// and the contents still match. The Writer's request buffers are
// overwritten after each Write, as a handler that reuses them does: what
// the TSDB or the cache keeps must not alias them.
func TestWriterMatchesThanos(t *testing.T) {
	opts := &receive.WriterOptions{TooFarInFutureTimeWindow: int64(time.Hour)}
	ctx := context.Background()
	send := func(t *testing.T, thanos *receive.Writer, ik writer, reqs []writeRequest) {
		t.Helper()
		_, own := ik.(*Writer)
		for i, req := range reqs {
			wantSeries, wantBuf := decoded(t, req.series)
			gotSeries, gotBuf := decoded(t, req.series)
			want := thanos.Write(ctx, req.tenant, wantSeries)
			got := ik.Write(ctx, req.tenant, gotSeries)
			checkSameError(t, fmt.Sprintf("request %d (tenant %s)", i, req.tenant), got, want, own)
			bufs := [][]byte{gotBuf}
			if !own {
				// Thanos's Writer (v0.42.5) gives the head exemplar
				// labels that alias the request: overwritten in both,
				// they read X in both TSDBs.
				bufs = append(bufs, wantBuf)
			}
			for _, buf := range bufs {
				for j := range buf {
					buf[j] = 'X'
				}
			}
		}
	}
	compare := func(t *testing.T, thanosStorage, ikStorage receive.TenantStorage, names ...string) {
		t.Helper()
		for _, name := range names {
			got, want := dump(t, tenantDB(t, ikStorage, name)), dump(t, tenantDB(t, thanosStorage, name))
			if got != want {
				t.Errorf("tenant %s's TSDB through the Writer:\n%s\nwant, as through Thanos's:\n%s", name, got, want)
			}
			if !strings.Contains(got, "exemplars") || !strings.Contains(got, "latency") {
				t.Errorf("tenant %s's TSDB has no exemplars or histograms:\n%s", name, got)
			}
		}
	}

	for _, intern := range []bool{false, true} {
		t.Run(fmt.Sprintf("storage=tenants/intern=%v", intern), func(t *testing.T) {
			names := []string{"a", "b"}
			thanosStorage, ikStorage := openTenants(t, names, "not-ready"), openTenants(t, names, "not-ready")
			opts := &receive.WriterOptions{TooFarInFutureTimeWindow: opts.TooFarInFutureTimeWindow, Intern: intern}
			ik := NewWriter(log.NewNopLogger(), ikStorage, opts)
			send(t, receive.NewWriter(log.NewNopLogger(), thanosStorage, opts), ik, writerRequests())
			compare(t, thanosStorage, ikStorage, names...)
			if s := ik.Cache("a").Stats(); s.Len == 0 || s.Hits == 0 || s.Rebinds != 0 {
				t.Errorf("tenant a's cache %+v, want entries, hits and no rebinds", s)
			}
		})
	}

	// The Writer, and Thanos's Writer over a TenantStorage.
	for _, impl := range []string{"writer", "tenantstorage"} {
		t.Run("storage=multitsdb/impl="+impl, func(t *testing.T) {
			thanosStorage, ikStorage := newMultiTSDB(t), newMultiTSDB(t)
			thanos := receive.NewWriter(log.NewNopLogger(), thanosStorage, opts)
			var ik writer
			var cacheOf func(string) *refcache.Cache
			if impl == "writer" {
				w := NewWriter(log.NewNopLogger(), ikStorage, opts)
				ik, cacheOf = w, w.Cache
			} else {
				ts := NewTenantStorage(ikStorage)
				ik, cacheOf = receive.NewWriter(log.NewNopLogger(), ts, opts), ts.Cache
			}
			var reqs []writeRequest
			for _, r := range writerRequests() {
				if r.tenant == "a" || r.tenant == "b" {
					reqs = append(reqs, r)
				}
			}
			send(t, thanos, ik, reqs)
			compare(t, thanosStorage, ikStorage, "a", "b")
			cache := cacheOf("a")
			before := cache.Stats()

			// The samples are from 1970: every tenant is past its retention.
			for _, m := range []*receive.MultiTSDB{thanosStorage, ikStorage} {
				if err := m.Prune(ctx); err != nil {
					t.Fatal(err)
				}
				if n := len(m.TSDBLocalClients()); n != 0 {
					t.Fatalf("%d tenants left after the prune, want none", n)
				}
			}
			send(t, thanos, ik, reqs)
			compare(t, thanosStorage, ikStorage, "a", "b")
			after := cache.Stats()
			if after.Rebinds != before.Rebinds+1 {
				t.Errorf("tenant a's cache rebound %d times across the prune, want once: %+v", after.Rebinds-before.Rebinds, after)
			}
		})
	}
}

// writer is Thanos's Writer or a Writer.
type writer interface {
	Write(ctx context.Context, tenant string, series []prompb.TimeSeries) error
}
