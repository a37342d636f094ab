//go:build !purego

// The unsafe conversions in this file let a Builder keep (name, value) pairs
// that alias the caller's byte slices without copying them, and hand them to
// Prometheus's ScratchBuilder, which copies them once into the label data.
//
// Invariant that keeps it safe: a string made by yoloString is only read while
// the caller's bytes are unchanged (the Builder documents that the slices
// given to Add must not change until the next Reset), and never escapes into
// anything that outlives that: every path that retains a label string copies
// it first (ScratchBuilder in stringlabels, the SymbolTable in dedupelabels,
// the interner or one copy in slicelabels). The purego build tag selects the
// safe twin in strings_purego.go, which copies instead.

package labels

import "unsafe"

// borrowCopies reports whether taking a borrowed string copies it.
const borrowCopies = false

// yoloString returns a string that aliases b.
func yoloString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// yoloBytes returns a byte slice that aliases s; it must not be written to.
func yoloBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
