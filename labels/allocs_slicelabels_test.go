//go:build slicelabels

package labels

// labelsAllocs is what HashedBuilder.Labels allocates without an interner: the
// []Label and one string holding every copied byte.
const labelsAllocs = 2
