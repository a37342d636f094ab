package headerfile

import (
	"errors"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       http.Header
	}{
		{"empty", "", http.Header{}},
		{"blank lines", "\n \n\r\n", http.Header{}},
		{"one", "Content-Encoding: snappy\n", http.Header{"Content-Encoding": {"snappy"}}},
		{"no final newline", "Content-Encoding: snappy", http.Header{"Content-Encoding": {"snappy"}}},
		{"crlf and spaces", "  content-type :  application/x-protobuf \r\n", http.Header{"Content-Type": {"application/x-protobuf"}}},
		{"repeated name", "A: 1\nB: 2\nA: 3\n", http.Header{"A": {"1", "3"}, "B": {"2"}}},
		{"empty value", "X-Empty:\n", http.Header{"X-Empty": {""}}},
		{"colon in value", "X-Url: http://a:9090/x\n", http.Header{"X-Url": {"http://a:9090/x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.EqualFunc(got, tc.want, slices.Equal) {
				t.Fatalf("Parse(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, line string }{
		{"no colon\n", "line 1"},
		{"A: 1\n: no name\n", "line 2"},
		{"A: 1\n\n   : x\n", "line 3"},
	} {
		h, err := Parse([]byte(tc.text))
		if !errors.Is(err, ErrLine) || h != nil {
			t.Fatalf("Parse(%q) = %v, %v; want nil and ErrLine", tc.text, h, err)
		}
		if !strings.HasPrefix(err.Error(), tc.line+":") {
			t.Errorf("Parse(%q): error %q does not start with %q", tc.text, err, tc.line)
		}
	}
}

func TestFormat(t *testing.T) {
	h := http.Header{}
	h.Add("content-encoding", "snappy")
	h.Add("X-Prometheus-Remote-Write-Version", "2.0.0")
	h.Add("Thanos-Tenant", "a")
	h.Add("Thanos-Tenant", "b")
	h.Add("Authorization", "Bearer secret")
	names := []string{"Content-Encoding", "thanos-tenant", "X-Absent", "X-Prometheus-Remote-Write-Version"}
	got := string(Format(h, names))
	want := "Content-Encoding: snappy\nThanos-Tenant: a\nThanos-Tenant: b\nX-Prometheus-Remote-Write-Version: 2.0.0\n"
	if got != want {
		t.Fatalf("Format = %q, want %q", got, want)
	}
	back, err := Parse([]byte(got))
	if err != nil {
		t.Fatal(err)
	}
	delete(h, "Authorization")
	if !maps.EqualFunc(back, h, slices.Equal) {
		t.Fatalf("Parse(Format(h)) = %v, want %v", back, h)
	}
}

// TestCapturedFiles parses the .headers files of the requests captured from
// a Prometheus server, which every captured request has.
func TestCapturedFiles(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "remote-write", "*.headers"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no .headers files: %v", err)
	}
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if h.Get("Content-Encoding") != "snappy" || !strings.HasPrefix(h.Get("Content-Type"), "application/x-protobuf") {
			t.Errorf("%s: headers %v, want a snappy protobuf request's", p, h)
		}
	}
}

// FuzzParse checks that Parse accepts or refuses any text without
// panicking, and that what it accepts, formatted again, parses to the same
// headers.
func FuzzParse(f *testing.F) {
	f.Add([]byte("Content-Type: application/x-protobuf\nContent-Encoding: snappy\nX-Prometheus-Remote-Write-Version: 0.1.0\n"))
	f.Add([]byte("A: 1\r\n\r\nA: 2\n"))
	f.Add([]byte(": x\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		h, err := Parse(text)
		if err != nil {
			if !errors.Is(err, ErrLine) || h != nil {
				t.Fatalf("Parse(%q) = %v, %v; want nil and ErrLine", text, h, err)
			}
			return
		}
		names := slices.Sorted(maps.Keys(h))
		back, err := Parse(Format(h, names))
		if err != nil {
			t.Fatalf("Parse(Format(%v)): %v", h, err)
		}
		if !maps.EqualFunc(back, h, slices.Equal) {
			t.Fatalf("Parse(Format(h)) = %v, want h = %v (from %q)", back, h, text)
		}
	})
}
