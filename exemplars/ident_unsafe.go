//go:build !slicelabels && !dedupelabels && !purego

// This file reads the address of a stringlabels labels.Labels' data string,
// so that a Ring finds a series whose labels it was given before, the very
// same labels.Labels (as a Prometheus Head passes a series' own labels with
// each of its exemplars), by that address instead of by hashing the labels
// (BenchmarkAddExemplarSteady, impl=ingestkit).
//
// Invariant that keeps it safe: in the stringlabels build, labels.Labels is
// a struct whose only field is its data string (model/labels/
// labels_stringlabels.go); the compile-time check below fails the build if
// its size ever differs from a string's, and TestDataString checks the string
// read against Labels.Bytes. The string is only read. An address is only a
// hint: it is kept as a number, never turned back into a pointer, and a
// series is taken as found only when the labels the ring holds for it (which
// keep their data alive, so that no other string can have its address) have
// that very data, the same address and length, and so the same bytes. The
// purego build tag selects the twin in ident_other.go, which finds series
// by hash only.

package exemplars

import (
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
)

// identities says whether identity and sameData tell label sets apart by
// the address of their data.
const identities = true

// Both fail to compile unless labels.Labels is exactly as large as a string.
const (
	_ = uintptr(unsafe.Sizeof(labels.Labels{}) - unsafe.Sizeof(""))
	_ = uintptr(unsafe.Sizeof("") - unsafe.Sizeof(labels.Labels{}))
)

// data returns the data string of ls.
func data(ls labels.Labels) string { return *(*string)(unsafe.Pointer(&ls)) }

// identity returns the address of the data of ls, and false for an empty
// ls, whose data may have any address, or none.
func identity(ls labels.Labels) (uint64, bool) {
	d := data(ls)
	return uint64(uintptr(unsafe.Pointer(unsafe.StringData(d)))), len(d) != 0
}

// sameData reports whether a and b have the same data, at the same address
// and of the same length, and so are equal. It is false when either is
// empty.
func sameData(a, b labels.Labels) bool {
	da, db := data(a), data(b)
	return len(da) == len(db) && len(da) != 0 && unsafe.StringData(da) == unsafe.StringData(db)
}
