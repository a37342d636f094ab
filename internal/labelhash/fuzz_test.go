package labelhash

import (
	"bytes"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// fuzzLabels turns fuzz input into a label set: data is a sequence of
// (length byte, name bytes, length byte, value bytes); a length byte of 0xff
// means "the rest of data". bigLen, taken modulo 10 MiB+1, adds one more
// label with a value of that many bytes, so that multi-KiB and 10 MiB values
// are reached without a 10 MiB corpus file.
func fuzzLabels(data []byte, bigLen uint32) labels.Labels {
	next := func() string {
		if len(data) == 0 {
			return ""
		}
		n := int(data[0])
		data = data[1:]
		if n == 0xff || n > len(data) {
			n = len(data)
		}
		s := string(data[:n])
		data = data[n:]
		return s
	}
	b := labels.NewScratchBuilder(8)
	seen := map[string]bool{}
	for len(data) > 0 {
		name, value := next(), next()
		if seen[name] {
			continue // a Labels has unique names
		}
		seen[name] = true
		b.Add(name, value)
	}
	if n := int(bigLen % (10<<20 + 1)); n > 0 && !seen["\xff\xff_big"] {
		b.Add("\xff\xff_big", string(bytes.Repeat([]byte{0xff, 'a'}, n/2+1)[:n]))
	}
	b.Sort()
	return b.Labels()
}

func FuzzHash(f *testing.F) {
	f.Add([]byte("\x08__name__\x02up\x03job\x03api"), uint32(0))
	f.Add([]byte("\x01a\x00\x01b\xff\xff\xff"), uint32(255))
	f.Add([]byte{}, uint32(10<<20))
	f.Fuzz(func(t *testing.T, data []byte, bigLen uint32) {
		if bigLen%(10<<20+1) > 64<<10 && testing.Short() {
			bigLen = 64 << 10
		}
		checkSet(t, fuzzLabels(data, bigLen))
	})
}
