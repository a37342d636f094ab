//go:build dedupelabels

package labels

// labelsAllocs is what HashedBuilder.Labels allocates once its symbol table
// knows every string: the encoded symbol numbers.
const labelsAllocs = 1
