// Command hashdemo demonstrates the labels block on a real Prometheus TSDB
// head: a toy receiver that hashes each incoming series straight from its
// request bytes with an [iklabels.HashedBuilder], finds it in a hash-keyed ref
// cache, confirms the hit with [iklabels.HashedBuilder.Equal] and appends by
// series ref, so that a label set is built (its bytes copied once) only for a
// series the receiver has not seen before.
//
// It runs the head in memory (chunks under a temporary directory, no WAL),
// prints what it did, and checks that every hash it computed equals
// Prometheus's own [labels.Labels.Hash] of the head's label set, in
// whichever labels build it was compiled with (default stringlabels, or
// -tags slicelabels / -tags dedupelabels).
//
// Run it with:
//
//	go run ./examples/hashdemo
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	iklabels "github.com/ingestkit/ingestkit/labels"
)

const (
	numSeries   = 300 // distinct series per request
	numRequests = 5   // every request carries every series once
	baseTime    = int64(1_700_000_000_000)
	interval    = int64(15_000) // ms between requests, a typical scrape interval
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hashdemo:", err)
		os.Exit(1)
	}
}

// pair is one label as it sits in a decoded request: bytes, not strings.
type pair struct{ name, value []byte }

// cached is what the toy receiver remembers about a series it has appended.
type cached struct {
	ref storage.SeriesRef
	ls  labels.Labels
}

// run drives the receiver against a fresh head and writes its report to w.
func run(w io.Writer) (err error) {
	dir, err := os.MkdirTemp("", "hashdemo")
	if err != nil {
		return fmt.Errorf("creating chunk dir: %w", err)
	}
	defer os.RemoveAll(dir)

	opts := tsdb.DefaultHeadOptions()
	opts.ChunkDirRoot = dir
	head, err := tsdb.NewHead(nil, nil, nil, nil, opts, nil)
	if err != nil {
		return fmt.Errorf("creating head: %w", err)
	}
	defer func() {
		if cerr := head.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing head: %w", cerr)
		}
	}()
	if err := head.Init(0); err != nil {
		return fmt.Errorf("initialising head: %w", err)
	}

	series := synthSeries(numSeries)
	cache := make(map[uint64]cached, len(series))
	var (
		b                             iklabels.HashedBuilder
		table                         iklabels.Table
		samples, hits, hashes, builds int
	)
	b.SetInterner(&table)                     // used by the slicelabels build
	b.SetSymbolTable(labels.NewSymbolTable()) // used by the dedupelabels build

	for req := range numRequests {
		ts := baseTime + int64(req)*interval
		app := head.AppenderV2(context.Background())
		for i, s := range series {
			h := hashOf(&b, s)
			hashes++

			var (
				ref storage.SeriesRef
				ls  labels.Labels
			)
			if c, ok := cache[h]; ok && b.Equal(c.ls) {
				hits++
				ref, ls = c.ref, c.ls
			} else {
				// A miss, or (never here, but possible) a hash collision,
				// which a real receiver would keep in a per-hash list.
				ls = b.Labels()
				builds++
			}
			v := float64(req*numSeries + i)
			newRef, err := app.Append(ref, ls, 0, ts, v, nil, nil, storage.AOptions{})
			if err != nil {
				_ = app.Rollback()
				return fmt.Errorf("appending series %d of request %d: %w", i, req, err)
			}
			if ref == 0 {
				cache[h] = cached{ref: newRef, ls: ls}
			}
			samples++
		}
		if err := app.Commit(); err != nil {
			return fmt.Errorf("committing request %d: %w", req, err)
		}
	}

	// Check every hash against Prometheus's own, on the labels the head holds.
	ir, err := head.Index()
	if err != nil {
		return fmt.Errorf("opening head index: %w", err)
	}
	defer ir.Close()
	sb := labels.NewScratchBuilder(0)
	var example iklabels.Hashed
	for i, s := range series {
		h := hashOf(&b, s)
		c, ok := cache[h]
		if !ok {
			return fmt.Errorf("series %d: hash %016x not in the ref cache", i, h)
		}
		if err := ir.Series(c.ref, &sb, nil); err != nil {
			return fmt.Errorf("reading series %d from the head: %w", i, err)
		}
		lset := sb.Labels()
		if got := lset.Hash(); got != h || !b.Equal(lset) {
			return fmt.Errorf("series %d: HashedBuilder.Hash() = %016x, want %016x (%s)", i, h, got, lset)
		}
		if i == 0 {
			example = iklabels.FromLabels(lset)
		}
	}
	if n := head.NumSeries(); n != uint64(len(series)) {
		return fmt.Errorf("head has %d series, want %d", n, len(series))
	}

	for _, row := range []struct {
		name string
		n    uint64
	}{
		{"requests", numRequests},
		{"samples appended", uint64(samples)},
		{"series created", head.NumSeries()},
		{"cache hits", uint64(hits)},
		{"hashes computed", uint64(hashes)},
		{"label sets built (copies)", uint64(builds)},
	} {
		fmt.Fprintf(w, "%-26s %6d\n", row.name, row.n)
	}
	fmt.Fprintf(w, "labels build: %s\n", labels.ImplementationName)
	fmt.Fprintf(w, "hash of %s = %016x\n", example.Labels(), example.Hash())
	fmt.Fprintf(w, "hash check: ok %d series\n", len(series))
	return nil
}

// hashOf resets b, adds the pairs of one series, as a decoder would, and
// returns their hash.
func hashOf(b *iklabels.HashedBuilder, s []pair) uint64 {
	b.Reset()
	for _, p := range s {
		b.Add(p.name, p.value)
	}
	return b.Hash()
}

// synthSeries makes n series with the labels a Kubernetes scrape typically
// carries, each as the sorted byte pairs a remote-write decoder would yield.
func synthSeries(n int) [][]pair {
	metrics := []string{"http_requests_total", "http_request_duration_seconds_count", "process_cpu_seconds_total"}
	methods := []string{"GET", "POST", "PUT", "DELETE"}
	codes := []string{"200", "404", "500"}
	out := make([][]pair, n)
	for i := range out {
		kv := [][2]string{ // sorted by name, as senders send them
			{"__name__", metrics[i%len(metrics)]},
			{"code", codes[(i/len(metrics))%len(codes)]},
			{"instance", "10.0.0." + strconv.Itoa(i/36) + ":9090"},
			{"job", "api-server"},
			{"method", methods[(i/(len(metrics)*len(codes)))%len(methods)]},
			{"namespace", "prod"},
			{"pod", "api-" + strconv.Itoa(i/36)},
		}
		ps := make([]pair, len(kv))
		for j, l := range kv {
			ps[j] = pair{name: []byte(l[0]), value: []byte(l[1])}
		}
		out[i] = ps
	}
	return out
}
