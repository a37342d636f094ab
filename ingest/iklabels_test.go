package ingest_test

import (
	"github.com/ingestkit/ingestkit/ingest"
	iklabels "github.com/ingestkit/ingestkit/labels"
)

// A fork with its own decoder passes an iklabels.HashedBuilder to the
// appenders' Lookup, with no adapter (Example_forkDecoded).
var _ ingest.SeriesLabels = (*iklabels.HashedBuilder)(nil)
