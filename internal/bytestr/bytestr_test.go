package bytestr

import (
	"bytes"
	"testing"
)

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("job"))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		s := String(b)
		if s != string(b) {
			t.Fatalf("String(%q) = %q", b, s)
		}
		if got := Bytes(s); !bytes.Equal(got, b) {
			t.Fatalf("Bytes(String(%q)) = %q", b, got)
		}
	})
}

func TestNoCopy(t *testing.T) {
	if Copies {
		t.Skip("purego copies")
	}
	b := []byte("abc")
	s := String(b)
	b[0] = 'x'
	if s != "xbc" {
		t.Fatalf("String(b) after b changed = %q, want the alias %q", s, "xbc")
	}
	if got := testing.AllocsPerRun(100, func() { _ = Bytes(String(b)) }); got != 0 {
		t.Fatalf("AllocsPerRun = %v, want 0", got)
	}
}
