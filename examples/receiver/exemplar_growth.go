package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/index"

	"github.com/ingestkit/ingestkit/ingest"
)

// A tenant's TSDB exemplar storage is a circular buffer that Prometheus
// allocates in full when the TSDB opens: 100,000 exemplars by default,
// which a tenant that never sends an exemplar holds all the same.
// With tenantOptions.GrowExemplars, the server opens each tenant's storage
// at initialExemplars (or the size it grew to before, kept in the tenant's
// directory) and growExemplars doubles it, up to -max-exemplars, once the
// exemplars written since it last grew reach half of it: a tenant holds
// what it uses. The buffer drops its oldest exemplars when full, as at its
// full size; while it is smaller it drops them sooner, which the early
// growth makes rare. A tenant's exemplars.Ring (-exemplar-store ring)
// grows the same way, by exemplars.Ring.Resize, which adds slots without
// moving the exemplars held; being in memory only, it starts small again
// at every open.

// initialExemplars is the size of a tenant's exemplar storage at its first
// open.
const initialExemplars = 1024

// exemplarSizeFile, in a tenant's directory, holds the size its exemplar
// storage grew to, so that the TSDB replays its WAL's exemplars into
// storage as large when it opens again.
const exemplarSizeFile = "ingestkit-exemplar-storage-size"

// exemplarGrowthCheck is how often growExemplars runs.
const exemplarGrowthCheck = time.Second

// openExemplars returns the size to open the exemplar storage in dir with,
// for a limit of max: the size written in dir, else initialExemplars, at
// most max.
func openExemplars(dir string, max int64) int64 {
	size := int64(initialExemplars)
	if b, err := os.ReadFile(filepath.Join(dir, exemplarSizeFile)); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			size = n
		}
	}
	return min(size, max)
}

// growExemplars grows the exemplar storage of every open tenant that has
// written half its size since it last grew.
func (tt *tenants) growExemplars() error {
	limit := tt.exemplarLimit()
	if !tt.opts.GrowExemplars || limit <= 0 {
		return nil
	}
	var open []*tenant
	var total int64 // the slots of the open tenants
	tt.mu.RLock()
	for _, tn := range tt.m {
		if tn.closing == nil && tn.isOpen() {
			total += tn.exSize
			if tn.exSize < limit {
				open = append(open, tn)
			}
		}
	}
	tt.mu.RUnlock()
	var errs []error
	for _, tn := range open {
		grown, err := tt.growTenantExemplars(tn, total)
		total += grown
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// growTenantExemplars grows tn's exemplar storage if need be and if the
// open tenants' total slots leave room under MaxExemplarsTotal, and
// returns the slots it added. A tenant is grown by one goroutine at a
// time: growExemplars' loop.
func (tt *tenants) growTenantExemplars(tn *tenant, total int64) (int64, error) {
	h := tt.handler(tn.id)
	if h == nil {
		return 0, nil // no request since it opened
	}
	written := h.Stats().Exemplars
	if written-tn.exAt < tn.exSize/2 {
		return 0, nil
	}
	size := min(2*tn.exSize, tt.exemplarLimit())
	if limit := tt.opts.MaxExemplarsTotal; limit > 0 {
		size = min(size, tn.exSize+max(0, limit-total))
	}
	if size <= tn.exSize {
		return 0, nil // the budget is spent
	}
	// Hold a reference, so that the tenant is not closed meanwhile.
	tt.mu.RLock()
	if tn.closing != nil {
		tt.mu.RUnlock()
		return 0, nil
	}
	tn.inflight.Add(1)
	tt.mu.RUnlock()
	defer tt.release(tn)

	if tn.exRing != nil {
		tn.exRing.Resize(size)
		tt.logger.Info("tenant exemplar ring grown", "tenant", tn.id, "from", tn.exSize, "to", size)
		grown := size - tn.exSize
		tn.exSize, tn.exAt = size, written
		return grown, nil
	}
	cfg := &promconfig.Config{StorageConfig: promconfig.StorageConfig{
		// ApplyConfig sets the out-of-order window too: the same.
		TSDBConfig:      &promconfig.TSDBConfig{OutOfOrderTimeWindow: time.Duration(tt.opts.TSDB.outOfOrderWindow).Milliseconds()},
		ExemplarsConfig: &promconfig.ExemplarsConfig{MaxExemplars: size},
	}}
	if err := tn.db.ApplyConfig(cfg); err != nil {
		return 0, fmt.Errorf("tenant %q: growing its exemplar storage to %d: %w", tn.id, size, err)
	}
	grown := size - tn.exSize
	tt.logger.Info("tenant exemplar storage grown", "tenant", tn.id, "from", tn.exSize, "to", size)
	tn.exSize, tn.exAt = size, written
	file := filepath.Join(tt.opts.Dir, tn.id, exemplarSizeFile)
	if err := os.WriteFile(file, []byte(strconv.FormatInt(size, 10)+"\n"), 0o666); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return grown, fmt.Errorf("tenant %q: %w", tn.id, err)
	}
	return grown, nil
}

// exemplarLimit is the size up to which a tenant's exemplar storage grows:
// that of its ring if it has one, else of its TSDB's.
func (tt *tenants) exemplarLimit() int64 {
	if tt.opts.RingExemplars > 0 {
		return tt.opts.RingExemplars
	}
	return tt.opts.MaxExemplars
}

// accountLoop, every exemplarGrowthCheck until ctx is done, grows the
// tenants' exemplar storages (growExemplars) and sets the series budget's
// count to what the tenants' heads hold (countHeld).
func accountLoop(ctx context.Context, tt *tenants, logger interface{ Error(string, ...any) }) {
	tick(ctx, exemplarGrowthCheck, func(time.Time) {
		if err := tt.growExemplars(); err != nil {
			logger.Error("growing exemplar storage", "err", err)
		}
		tt.countHeld()
	})
}

// countHeld sets the series budget's counts, if it has one, to the series
// the heads of the open tenants hold and, if it bounds them, their label
// bytes. A closed tenant's series are on disk only, and come back into the
// count when it opens again.
func (tt *tenants) countHeld() {
	b := tt.opts.Receiver.SeriesBudget
	if b == nil {
		return
	}
	var n, bytes int64
	tt.each(func(tn *tenant) {
		n += int64(tn.db.Head().NumSeries())
		if b.LabelBytesLimit() > 0 {
			bytes += tn.headLabelBytes()
		}
	})
	b.SetHeld(n)
	if b.LabelBytesLimit() > 0 {
		b.SetHeldLabelBytes(bytes)
	}
}

// labelCount is what headLabelBytes counted of a tenant's head: the label
// bytes of its series up to ref, which it held when its min time was
// minTime and it had series series.
type labelCount struct {
	counted bool
	ref     storage.SeriesRef
	bytes   int64
	minTime int64
	series  uint64
}

// headLabelBytes returns the label bytes (ingest.LabelBytes) of the series
// tn's head holds. A head numbers its series in the order it creates them,
// and drops them only when it is truncated, which moves its min time: it
// counts the series created since its last count, or every series again
// after a truncation, or when the head holds fewer series than then. It is
// called by countHeld's goroutine only, with a reference to tn held.
func (tn *tenant) headLabelBytes() int64 {
	h := tn.db.Head()
	c := &tn.labels
	series, minTime := h.NumSeries(), h.MinTime()
	if !c.counted || minTime != c.minTime || series < c.series {
		*c = labelCount{counted: true, minTime: minTime}
	}
	c.series = series
	ir, err := h.Index()
	if err != nil {
		return c.bytes
	}
	defer ir.Close()
	name, value := index.AllPostingsKey()
	p, err := ir.Postings(context.Background(), name, value)
	if err != nil {
		return c.bytes
	}
	var b labels.ScratchBuilder
	for ok := p.Seek(c.ref + 1); ok; ok = p.Next() {
		ref := p.At()
		if err := ir.Series(ref, &b, nil); err != nil {
			continue // dropped meanwhile
		}
		// After the head's Series, Labels returns the series' own labels
		// in the default build, without a copy.
		c.bytes += int64(ingest.LabelBytes(b.Labels()))
		c.ref = ref
	}
	return c.bytes
}
