// Package ingest is the remote-write path of a Prometheus receiver,
// composed of the blocks in its sub-packages, which do not import one
// another: decode (bounded body reading and zero-copy decoding of
// remote-write 1.0 and 2.0, hashing in the same pass), refcache (the
// cross-request series-ref cache and appenders over storage.Appender and
// storage.AppenderV2), activeseries (a striped active-series tracker) and
// hashring (Thanos's hashrings, from the same hash).
package ingest
