package thanos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/thanos-io/objstore"
	thanosexemplars "github.com/thanos-io/thanos/pkg/exemplars"
	"github.com/thanos-io/thanos/pkg/receive"

	"github.com/ingestkit/ingestkit/exemplars"
	"github.com/ingestkit/ingestkit/ingest"
	"github.com/ingestkit/ingestkit/ingest/activeseries"
	"github.com/ingestkit/ingestkit/ingest/decode"
	"github.com/ingestkit/ingestkit/ingest/hashring"
	"github.com/ingestkit/ingestkit/ingest/refcache"
	iklabels "github.com/ingestkit/ingestkit/labels"
	"github.com/ingestkit/ingestkit/postings"
)

// Hashrings returns ingestkit's routing for the hashrings Thanos receive
// has read from its hashrings file (what receive.ConfigWatcher sends), so
// that a fork routes each series with [hashring.Ring] from the hash its
// decoder computed ([decode.Series.ThanosHash]) to the endpoints Thanos's
// own hashring would pick. opts holds what Thanos takes from its flags:
// --receive.hashrings-algorithm and --receive.replication-factor.
//
// Hashrings re-encodes cfg as the file it came from: the two
// configurations have the same JSON form.
func Hashrings(cfg []receive.HashringConfig, opts hashring.Options) (*hashring.Hashrings, error) {
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("thanos: encoding Thanos's hashrings: %w", err)
	}
	rings, err := hashring.ParseConfig(data)
	if err != nil {
		return nil, err
	}
	return hashring.NewHashrings(rings, opts)
}

// The rest of this file is the build proof of the blocks that have no
// function here yet: each line compiles only while the block fits the
// Thanos or Prometheus type it is set beside, at the versions Thanos pins.
// Nothing here runs.
var (
	// Thanos's receive.Writer type-asserts storage.GetRef on the
	// appender its storage hands out.
	_ receive.TenantStorage = (*TenantStorage)(nil)
	_ storage.GetRef        = (*appender)(nil)

	// The write path as a library, over one tenant's TSDB (the *tsdb.DB
	// that receive.ReadyStorage.Get returns) or one per tenant; and the
	// blocks it is made of, for a fork that composes its own: one
	// BodyReader per server, a Decoder and an AppenderV2 per worker, and
	// the tenant's active series.
	_ storage.Appendable                                                                        = (*tsdb.DB)(nil)
	_ func(*slog.Logger, storage.Appendable, ingest.Options) *ingest.WriteHandler               = ingest.NewWriteHandler
	_ func(*slog.Logger, ingest.TenantStorage, ingest.TenantOptions) *ingest.TenantWriteHandler = ingest.NewTenantWriteHandler
	_                                                                                           = (*decode.BodyReader)(nil)
	_                                                                                           = (*decode.Decoder)(nil)
	_ storage.AppendableV2                                                                      = (*tsdb.DB)(nil)
	_ func(context.Context, storage.AppendableV2, *refcache.Cache, int64) *refcache.AppenderV2  = refcache.NewAppenderV2
	_                                                                                           = (*activeseries.Tracker)(nil)

	// A fork with a decoder of its own (Thanos's Cap'n Proto writer) feeds
	// its pairs to a HashedBuilder, which ingest's appenders look up as
	// they are; strings that outlive a request go through an Interner.
	_ refcache.SeriesLabels = (*iklabels.HashedBuilder)(nil)
	_ iklabels.Interner     = (*iklabels.Table)(nil)

	// An exemplar ring can back Thanos's exemplar API, whose
	// thanosexemplars.NewTSDB takes a storage.ExemplarQueryable.
	_ storage.ExemplarQueryable                                            = (*exemplars.Ring)(nil)
	_ func(storage.ExemplarQueryable, labels.Labels) *thanosexemplars.TSDB = thanosexemplars.NewTSDB

	// A store gateway's objstore bucket is a postings.Source as it is.
	_ postings.Source = objstore.Bucket(nil)
)
