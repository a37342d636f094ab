package difftest

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/record"
	"github.com/prometheus/prometheus/tsdb/wlog"
)

// DumpDB returns everything db holds, one line per series with its samples,
// and one per exemplar, sorted, for comparing two TSDBs.
func DumpDB(tb testing.TB, db *tsdb.DB) string {
	tb.Helper()
	return DumpStorage(tb, db, db)
}

// DumpStorage is DumpDB with the exemplars of exq (db's own or a ring).
func DumpStorage(tb testing.TB, db *tsdb.DB, exq storage.ExemplarQueryable) string {
	tb.Helper()
	ctx := context.Background()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		tb.Fatal(err)
	}
	defer q.Close()
	all := labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".*")
	ss := q.Select(ctx, true, nil, all)
	var lines []string
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		var b strings.Builder
		b.WriteString(s.Labels().String())
		it = s.Iterator(it)
		for typ := it.Next(); typ != chunkenc.ValNone; typ = it.Next() {
			switch typ {
			case chunkenc.ValFloat:
				t, v := it.At()
				fmt.Fprintf(&b, " %d:%g", t, v)
			case chunkenc.ValHistogram:
				t, h := it.AtHistogram(nil)
				h.CounterResetHint = histogram.UnknownCounterReset
				fmt.Fprintf(&b, " %d:%s", t, h.String())
			case chunkenc.ValFloatHistogram:
				t, h := it.AtFloatHistogram(nil)
				h.CounterResetHint = histogram.UnknownCounterReset
				fmt.Fprintf(&b, " %d:%s", t, h.String())
			}
		}
		if err := it.Err(); err != nil {
			tb.Fatal(err)
		}
		lines = append(lines, b.String())
	}
	if err := ss.Err(); err != nil {
		tb.Fatal(err)
	}
	eq, err := exq.ExemplarQuerier(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := eq.Select(math.MinInt64, math.MaxInt64, []*labels.Matcher{all})
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range res {
		for _, e := range r.Exemplars {
			lines = append(lines, fmt.Sprintf("exemplar %s %s %g %d", r.SeriesLabels, e.Labels, e.Value, e.Ts))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// DumpMetadata returns the metadata records of db's WAL in the order they
// were written, one line each with the labels of its series, for comparing
// the metadata two TSDBs hold: the head keeps a series' metadata only in
// memory and in these records, and writes one when it changes.
func DumpMetadata(tb testing.TB, db *tsdb.DB) string {
	tb.Helper()
	sr, err := wlog.NewSegmentsReader(filepath.Join(db.Dir(), "wal"))
	if err != nil {
		tb.Fatal(err)
	}
	defer sr.Close()
	dec := record.NewDecoder(labels.NewSymbolTable(), slog.New(slog.DiscardHandler))
	series := map[chunks.HeadSeriesRef]labels.Labels{}
	var lines []string
	r := wlog.NewReader(sr)
	for r.Next() {
		rec := r.Record()
		switch dec.Type(rec) {
		case record.Series:
			ss, err := dec.Series(rec, nil)
			if err != nil {
				tb.Fatal(err)
			}
			for _, s := range ss {
				series[s.Ref] = s.Labels
			}
		case record.Metadata:
			ms, err := dec.Metadata(rec, nil)
			if err != nil {
				tb.Fatal(err)
			}
			for _, m := range ms {
				ls, ok := series[m.Ref]
				if !ok {
					tb.Fatalf("metadata record of series ref %d, which has no series record", m.Ref)
				}
				lines = append(lines, fmt.Sprintf("metadata %s %s %q %q", ls, record.ToMetricType(m.Type), m.Unit, m.Help))
			}
		}
	}
	if err := r.Err(); err != nil {
		tb.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// LineDiff lists the lines only in k (ingestkit's) and only in p
// (Prometheus's).
func LineDiff(k, p string) string {
	kl, pl := strings.Split(k, "\n"), strings.Split(p, "\n")
	var b strings.Builder
	for _, l := range kl {
		if !slices.Contains(pl, l) {
			fmt.Fprintf(&b, "ingestkit only:  %.300s\n", l)
		}
	}
	for _, l := range pl {
		if !slices.Contains(kl, l) {
			fmt.Fprintf(&b, "prometheus only: %.300s\n", l)
		}
	}
	return b.String()
}
