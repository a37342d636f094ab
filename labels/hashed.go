package labels

import (
	"github.com/prometheus/prometheus/model/labels"
)

// Hashed is a [labels.Labels] together with its [labels.Labels.Hash], computed
// once. The fields are unexported so that the hash always belongs to the
// labels: a Hashed comes only from [FromLabels] or [HashedBuilder.Hashed].
//
// The zero value is the empty label set with its hash. A Hashed is an
// immutable value, safe for concurrent use by multiple goroutines. Under the
// slicelabels build, as everywhere in Prometheus, the caller must not modify
// the elements of a [labels.Labels] after handing it over.
type Hashed struct {
	ls labels.Labels
	// xhash is the hash XOR emptyHash, so that the zero value holds the
	// hash of the empty set without a flag.
	xhash uint64
}

// FromLabels returns ls with its hash, computing it once.
func FromLabels(ls labels.Labels) Hashed {
	return Hashed{ls: ls, xhash: ls.Hash() ^ emptyHash}
}

// Labels returns the label set. It does not copy.
func (h Hashed) Labels() labels.Labels { return h.ls }

// Hash returns [labels.Labels.Hash] of the label set, cached at construction.
func (h Hashed) Hash() uint64 { return h.xhash ^ emptyHash }

// emptyHash is the hash of the empty label set: xxhash of no bytes, the same
// in every labels build (TestEmptyHash checks it).
const emptyHash = 0xef46db3751d8e999
