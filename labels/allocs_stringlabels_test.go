//go:build !slicelabels && !dedupelabels

package labels

// labelsAllocs is what Builder.Labels allocates: the label data string.
const labelsAllocs = 1
