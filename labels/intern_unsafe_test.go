package labels

// This file uses unsafe only to observe, in tests, whether two strings share
// memory: it is how interning is told apart from copying.

import "unsafe"

func sameMemory(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}
