//go:build !slicelabels && !dedupelabels && !purego

package exemplars

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestDataString checks the string that data reads against Labels.Bytes.
func TestDataString(t *testing.T) {
	for _, ls := range []labels.Labels{
		labels.EmptyLabels(),
		labels.FromStrings("a", "b"),
		labels.FromStrings("__name__", "up", "job", "api", "instance", "a:9090"),
	} {
		if got, want := data(ls), string(ls.Bytes(nil)); got != want {
			t.Errorf("data(%s) = %q, want %q", ls, got, want)
		}
	}
}
