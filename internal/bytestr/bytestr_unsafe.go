//go:build !purego

// The conversions in this file let a decoder or builder keep pairs that
// alias the caller's bytes without copying them.
//
// Invariant that keeps it safe: a string made by String is only read while
// the bytes behind it are unchanged, and every path that keeps a label string
// beyond that copies it first; a slice made by Bytes is never written to.
// Callers document which bytes must stay unchanged and until when. The purego
// build tag selects the safe twin in bytestr_purego.go, which copies.

package bytestr

import "unsafe"

// Copies reports whether the conversions copy (only under purego).
const Copies = false

// String returns a string that aliases b.
func String(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Bytes returns a byte slice that aliases s; it must not be written to.
func Bytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
