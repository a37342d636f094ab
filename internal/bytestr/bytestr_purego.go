//go:build purego

package bytestr

// Copies reports whether the conversions copy (only under purego).
const Copies = true

// String is the safe twin of the aliasing conversion: it copies.
func String(b []byte) string { return string(b) }

// Bytes is the safe twin of the aliasing conversion: it copies.
func Bytes(s string) []byte { return []byte(s) }
