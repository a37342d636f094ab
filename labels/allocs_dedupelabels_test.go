//go:build dedupelabels

package labels

// labelsAllocs is what Builder.Labels allocates once its symbol table knows
// every string: the encoded symbol numbers.
const labelsAllocs = 1
