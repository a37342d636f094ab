package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun runs the demo end to end on a fresh head; run itself fails if any
// HashedBuilder hash differs from the head's labels.Labels.Hash.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatalf("run() = %v, want nil; output:\n%s", err, out.String())
	}
	for _, want := range []string{"hash check: ok", "series created", "labels build: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("run() output = %q, want it to contain %q", out.String(), want)
		}
	}
}
