//go:build !slicelabels && !dedupelabels && !purego

// This file reads the data string of a stringlabels labels.Labels, so that
// Set.Equal compares a series' pairs with a label set in one comparison of
// bytes instead of a walk over its labels.
//
// Invariant that keeps it safe: in the stringlabels build, labels.Labels is
// a struct whose only field is its data string (model/labels/
// labels_stringlabels.go); the compile-time check below fails the build if
// its size ever differs from a string's, and TestLabelsData checks the
// string read against Labels.Bytes. The string is only read. The purego
// build tag selects the safe twin in data_purego.go, which copies.

package labelset

import (
	"unsafe"

	"github.com/prometheus/prometheus/model/labels"
)

// Both fail to compile unless labels.Labels is exactly as large as a string.
const (
	_ = uintptr(unsafe.Sizeof(labels.Labels{}) - unsafe.Sizeof(""))
	_ = uintptr(unsafe.Sizeof("") - unsafe.Sizeof(labels.Labels{}))
)

// streamEqual reports whether stream, a Hasher's stream of sorted pairs, is
// the data of ls, which holds exactly when the pairs are ls's labels; ok is
// always true in this build. buf is not used.
func streamEqual(stream []byte, ls labels.Labels, _ *[]byte) (eq, ok bool) {
	return string(stream) == *(*string)(unsafe.Pointer(&ls)), true
}

// streamComparable is true: streamEqual always tells in this build.
const streamComparable = true
