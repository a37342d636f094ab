//go:build slicelabels || dedupelabels || purego

package exemplars

import "github.com/prometheus/prometheus/model/labels"

// identities is false: in this build a Ring finds series by hash only (see
// ident_unsafe.go).
const identities = false

// identity reports false: no label set is found by its address.
func identity(labels.Labels) (uint64, bool) { return 0, false }

// sameData reports false.
func sameData(a, b labels.Labels) bool { return false }
