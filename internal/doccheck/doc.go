// Package doccheck holds tests of the module's public API documentation,
// run by go test ./... like any other: that every exported type of a
// public package states whether it is safe for concurrent use.
//
// It has no code of its own; the checks read the module's source with
// go/parser, so every build's files count (stringlabels, slicelabels,
// dedupelabels, purego).
package doccheck
