package labels

import (
	"bytes"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"
)

// splitPairs cuts fuzz input into (name, value) pairs: each string is a
// length byte and that many bytes (0xff: the rest). Names are made unique, as
// in a valid label set.
func splitPairs(data []byte) (names, values [][]byte) {
	next := func() []byte {
		if len(data) == 0 {
			return nil
		}
		n := int(data[0])
		data = data[1:]
		if n == 0xff || n > len(data) {
			n = len(data)
		}
		s := data[:n:n]
		data = data[n:]
		return s
	}
	seen := map[string]bool{}
	for len(data) > 0 {
		n, v := next(), next()
		if seen[string(n)] {
			continue
		}
		seen[string(n)] = true
		names = append(names, n)
		values = append(values, v)
	}
	return names, values
}

// FuzzBuilder adds the pairs in the order given (sorted or not), from a
// buffer it scribbles over afterwards, and compares every result with
// Prometheus's ScratchBuilder on the same pairs. It covers the unsafe
// conversions in strings_unsafe.go.
func FuzzBuilder(f *testing.F) {
	f.Add([]byte("\x08__name__\x02up\x03job\x03api"), false)
	f.Add([]byte("\x03job\x03api\x08__name__\x02up"), true)
	f.Add([]byte("\x01a\x00\x01b\xff\xff\xff"), true)
	f.Fuzz(func(t *testing.T, data []byte, useInterner bool) {
		data = bytes.Clone(data)
		names, values := splitPairs(data)
		sb := labels.NewScratchBuilder(len(names))
		for i := range names {
			sb.Add(string(names[i]), string(values[i]))
		}
		sb.Sort()
		want := sb.Labels()

		var b HashedBuilder
		var tab Table
		if useInterner {
			b.SetInterner(&tab)
		}
		b.ResetTenant("t")
		for i := range names {
			b.Add(names[i], values[i])
		}
		if got := b.Hash(); got != want.Hash() {
			t.Fatalf("HashedBuilder.Hash() = %#x, want %#x for %s", got, want.Hash(), want)
		}
		if got, w := b.TenantHash(), thanosTenantHash("t", want); got != w {
			t.Fatalf("HashedBuilder.TenantHash() = %#x, want %#x", got, w)
		}
		inOrder := []byte("t\xff")
		for i := range names {
			inOrder = append(append(append(append(inOrder, names[i]...), 0xff), values[i]...), 0xff)
		}
		if got, w := b.ThanosHash(), xxhash.Sum64(inOrder); got != w {
			t.Fatalf("HashedBuilder.ThanosHash() = %#x, want %#x, of the pairs in the order given", got, w)
		}
		if !b.Equal(want) {
			t.Fatalf("HashedBuilder.Equal(%s) = false", want)
		}
		h := b.Hashed()
		for i := range data {
			data[i] ^= 0x5a
		}
		if !labels.Equal(h.Labels(), want) || h.Hash() != want.Hash() {
			t.Fatalf("HashedBuilder.Hashed() = %s (%#x), want %s (%#x)", h.Labels(), h.Hash(), want, want.Hash())
		}
	})
}

// FuzzIntern checks that every interner returns the bytes it was given,
// keeps them when the caller's buffer changes, and returns the same string
// when given them again.
func FuzzIntern(f *testing.F) {
	f.Add([]byte("api-server-7d9f8b6c5-x2k4p"))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 1025))
	var tab Table
	var u Unique
	var g Go4
	f.Fuzz(func(t *testing.T, data []byte) {
		want := string(data)
		buf := bytes.Clone(data)
		got := []string{tab.Intern(buf), u.Intern(buf), g.Intern(buf)}
		for i := range buf {
			buf[i] ^= 0x5a
		}
		for i, s := range got {
			if s != want {
				t.Fatalf("interner %d: Intern(%q) = %q after the buffer changed", i, want, s)
			}
		}
		again := []string{tab.Intern([]byte(want)), u.Intern([]byte(want)), g.Intern([]byte(want))}
		for i, s := range again {
			if !sameMemory(s, got[i]) {
				t.Fatalf("interner %d: Intern(%q) again returned another copy", i, want)
			}
		}
	})
}
