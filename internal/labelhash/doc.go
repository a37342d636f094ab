// Package labelhash computes Prometheus's label-set hash from (name, value)
// pairs as they arrive, without building a [labels.Labels].
//
// A [Hasher] fed the sorted pairs of a label set returns exactly what
// [labels.Labels.Hash] returns for that set in the labels build the program is
// compiled with: xxhash over the length-prefixed encoding in the default
// (stringlabels) build, xxhash over "name 0xff value 0xff ..." under the
// slicelabels and dedupelabels tags. The hash is therefore not stable across
// builds, and Prometheus does not promise it across releases; golden tests pin
// it per build for the Prometheus version in go.mod. In the same pass it can
// compute the tenant-prefixed hash that the Thanos receive hashring routes by
// (xxhash over "tenant 0xff name 0xff value 0xff ...", the same in every
// build).
//
// A Hasher is a value of about 2 KiB that lives on the caller's stack; it is
// not safe for concurrent use. Writing pairs and summing make no allocation
// and copy each byte at most once into a 1 KiB buffer; strings longer than the
// buffer are streamed to the digest without a copy.
//
// BenchmarkHash in this package and in package labels compares it with
// [labels.Labels.Hash] on the same pairs.
package labelhash
