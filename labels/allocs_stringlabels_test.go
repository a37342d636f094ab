//go:build !slicelabels && !dedupelabels

package labels

// labelsAllocs is what HashedBuilder.Labels allocates: the label data string.
const labelsAllocs = 1
