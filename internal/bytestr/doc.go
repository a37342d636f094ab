// Package bytestr converts between byte slices and strings without copying,
// for the decoders and builders that hold (name, value) pairs aliasing a
// request buffer until they are copied once.
//
// The functions are safe for concurrent use; they allocate nothing, except
// under the purego build tag, where they copy.
package bytestr
