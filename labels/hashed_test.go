package labels

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

func TestEmptyHash(t *testing.T) {
	if got, want := labels.EmptyLabels().Hash(), uint64(emptyHash); got != want {
		t.Fatalf("EmptyLabels().Hash() = %#x, want emptyHash = %#x", got, want)
	}
	var h Hashed
	if got, want := h.Hash(), labels.EmptyLabels().Hash(); got != want {
		t.Fatalf("Hashed{}.Hash() = %#x, want %#x", got, want)
	}
	if !h.Labels().IsEmpty() {
		t.Fatalf("Hashed{}.Labels() = %s, want {}", h.Labels())
	}
}

func TestFromLabels(t *testing.T) {
	for _, ls := range []labels.Labels{
		labels.EmptyLabels(),
		labels.FromStrings("__name__", "up"),
		labels.FromStrings("__name__", "up", "job", "api", "instance", "a:9090"),
	} {
		h := FromLabels(ls)
		if got, want := h.Hash(), ls.Hash(); got != want {
			t.Errorf("FromLabels(%s).Hash() = %#x, want %#x", ls, got, want)
		}
		if !labels.Equal(h.Labels(), ls) {
			t.Errorf("FromLabels(%s).Labels() = %s", ls, h.Labels())
		}
	}
}
