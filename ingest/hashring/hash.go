package hashring

import (
	"github.com/prometheus/prometheus/model/labels"

	"github.com/ingestkit/ingestkit/internal/labelhash"
)

// Hash returns the routing hash of a series of tenant with the labels ls,
// which [Ring.Replicas] and [Ring.Replica] take: Thanos receive's
// labelpb.HashWithPrefix(tenant, ls), xxhash64 over "tenant 0xff name 0xff
// value 0xff ..." of the labels in the order ls holds them, the same in
// every labels build and every process. A labels.Labels built by
// Prometheus holds its labels sorted by name, so Hash is then also the hash
// of the sorted labels.
//
// Package ingest/decode's decoder computes the same value in its decoding
// pass, from the same code (Series.ThanosHash); a receiver that decodes
// with it needs no Hash. Hash is for a caller that has only the labels.
//
// Hash hashes the labels on each call and makes no allocation.
func Hash(tenant string, ls labels.Labels) uint64 {
	var h labelhash.TenantHasher
	h.Reset(tenant)
	ls.Range(func(l labels.Label) { h.WriteTenantString(l.Name, l.Value) })
	return h.TenantSum64()
}
