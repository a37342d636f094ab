//go:build purego

package labels

// borrowCopies reports whether taking a borrowed string copies it.
const borrowCopies = true

// yoloString is the safe twin of the unsafe conversion: it copies.
func yoloString(b []byte) string { return string(b) }

// yoloBytes is the safe twin of the unsafe conversion: it copies.
func yoloBytes(s string) []byte { return []byte(s) }
