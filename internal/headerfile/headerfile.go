// Package headerfile reads and writes the .headers files that sit beside
// captured remote-write requests, in testdata/remote-write and in the
// receiver example's -capture-dir: one "Name: value" line per header value.
// It is shared by the receiver, which writes and replays captures, and by
// internal/rwtest, which reads them for tests, so that the format is
// defined once.
package headerfile

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrLine is returned, wrapped with the line's number and text, for a line
// that is not "Name: value".
var ErrLine = errors.New("headerfile: not a \"Name: value\" header line")

// Parse parses a .headers file. Blank lines are ignored, a line may end in
// "\r\n", and names and values are trimmed of surrounding spaces; names are
// canonicalized as [http.Header.Add] does.
func Parse(text []byte) (http.Header, error) {
	h := http.Header{}
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("line %d: %w: %q", i+1, ErrLine, line)
		}
		h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	return h, nil
}

// Format returns the .headers file of h's values of the given names, in
// that order, each value on a line of its own under the canonical name.
// Names absent from h are left out. Parse of the result gives those
// headers back, provided no value contains a line break or starts or ends
// with a space (an HTTP server does not hand over such values).
func Format(h http.Header, names []string) []byte {
	var b bytes.Buffer
	for _, name := range names {
		for _, v := range h.Values(name) {
			fmt.Fprintf(&b, "%s: %s\n", http.CanonicalHeaderKey(name), v)
		}
	}
	return b.Bytes()
}
