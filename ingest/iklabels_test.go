package ingest_test

import (
	"github.com/ingestkit/ingestkit/ingest"
	iklabels "github.com/ingestkit/ingestkit/labels"
)

// A fork with its own decoder passes an iklabels.HashedBuilder to the
// appenders' Lookup, with no adapter (Example_forkDecoded).
var _ ingest.SeriesLabels = (*iklabels.HashedBuilder)(nil)

// The interners of package labels, and any iklabels.Interner, are what the
// Decoder and OwnedMetadata take, whose parameters spell out
// iklabels.Interner's method set rather than import it.
var _ = func(d *ingest.Decoder, s *ingest.Series, in iklabels.Interner) {
	d.SetInterner(new(iklabels.Table))
	d.SetInterner(new(iklabels.Unique))
	d.SetInterner(new(iklabels.Go4))
	d.SetInterner(in)
	s.OwnedMetadata(new(iklabels.Table))
	s.OwnedMetadata(in)
}
