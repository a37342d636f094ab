package ingest_test

import (
	"context"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/ingest/refcache"
	iklabels "github.com/ingestkit/ingestkit/labels"
)

// A fork with its own decoder passes an iklabels.HashedBuilder to the
// appenders' Lookup, with no adapter (Example_forkDecoded).
var _ refcache.SeriesLabels = (*iklabels.HashedBuilder)(nil)

// The interners of package labels, and any iklabels.Interner, are what the
// Decoder and OwnedMetadata take, whose parameters spell out
// iklabels.Interner's method set rather than import it.
var _ = func(d *decode.Decoder, s *decode.Series, in iklabels.Interner) {
	d.SetInterner(new(iklabels.Table))
	d.SetInterner(new(iklabels.Unique))
	d.SetInterner(new(iklabels.Go4))
	d.SetInterner(in)
	s.OwnedMetadata(new(iklabels.Table))
	s.OwnedMetadata(in)
}

// hiddenScratch is a HashedBuilder without its ScratchLabels method.
type hiddenScratch struct{ *iklabels.HashedBuilder }

func (h hiddenScratch) ScratchLabels() {} // not the optional method's signature

// TestHashedBuilderScratchLookup resolves a series that a real head holds
// but a fresh cache does not, as after a restart: with the
// HashedBuilder's ScratchLabels the appender asks the head with labels in
// a reused buffer, without it it has to build them first.
func TestHashedBuilderScratchLookup(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts vary under the race detector (sync.Pool drops items at random)")
	}
	head := newTestHead(t)
	var b iklabels.HashedBuilder
	b.AddString("__name__", "up")
	b.AddString("job", "node")
	app := head.Appender(context.Background())
	if _, err := app.Append(0, b.Labels(), 1000, 1); err != nil {
		t.Fatal(err)
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	lookup := func(s refcache.SeriesLabels) func() {
		return func() {
			a := refcache.NewAppender(context.Background(), head, refcache.New(refcache.Options{}), 2000)
			h, err := a.Lookup(s)
			if err != nil || h.Ref() == 0 {
				t.Fatalf("Lookup = %v, %v; want the head's series", h.Ref(), err)
			}
			_ = a.Rollback()
		}
	}
	with := testing.AllocsPerRun(50, lookup(&b))
	without := testing.AllocsPerRun(50, lookup(hiddenScratch{&b}))
	if with >= without {
		t.Errorf("Lookup of a head's series allocates %v times with ScratchLabels, %v without; want fewer with", with, without)
	}
}

// The decoder's series are what the appenders take, with the optional
// ScratchLabels method.
var (
	_ refcache.SeriesLabels                      = (*decode.Series)(nil)
	_ interface{ ScratchLabels() labels.Labels } = (*decode.Series)(nil)
)
