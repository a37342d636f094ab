// Package labelset holds the (name, value) pairs of one series as a decoder
// finds them, hashes them with Prometheus's label hash as they arrive, and
// builds a labels.Labels from them only on demand, copying borrowed bytes
// once. It is the shared core of labels.HashedBuilder and the decoders of
// package ingest.
//
// A Set is not safe for concurrent use; adding pairs, hashing, Equal and
// Scratch make no allocation in the steady state.
package labelset
