package hashring

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// thanosLabelsOf returns ls as Thanos holds it, in ls's order.
func thanosLabelsOf(ls labels.Labels) []thanosLabel {
	var out []thanosLabel
	ls.Range(func(l labels.Label) { out = append(out, thanosLabel{l.Name, l.Value}) })
	return out
}

// TestHash checks Hash against thanosHash, the byte-for-byte transcription
// of Thanos's labelpb.HashWithPrefix, on boundary cases: no labels, an
// empty tenant, and tenants and values around the 1 KiB at which the
// hasher stops buffering and streams, up to 10 MiB.
func TestHash(t *testing.T) {
	cases := []struct {
		name   string
		tenant string
		ls     labels.Labels
	}{
		{"empty", "", labels.EmptyLabels()},
		{"no labels", "team-a", labels.EmptyLabels()},
		{"empty tenant", "", labels.FromStrings("__name__", "up")},
		{"one", "team-a", labels.FromStrings("__name__", "up")},
		{"typical", "default-tenant", labels.FromStrings("__name__", "http_requests_total", "code", "200", "instance", "10.0.0.1:8080", "job", "api")},
		{"empty value", "t", labels.FromStrings("a", "", "b", "x")},
		{"long tenant", strings.Repeat("t", 2000), labels.FromStrings("__name__", "up")},
	}
	for _, n := range []int{127, 128, 129, 1023, 1024, 1025, 10 << 20} {
		cases = append(cases, struct {
			name   string
			tenant string
			ls     labels.Labels
		}{"value=" + strconv.Itoa(n), "team-a", labels.FromStrings("__name__", "up", "v", strings.Repeat("x", n))})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, want := Hash(c.tenant, c.ls), thanosHash(c.tenant, thanosLabelsOf(c.ls)); got != want {
				t.Fatalf("Hash(%.20q, %.200s) = %#x, want %#x", c.tenant, c.ls, got, want)
			}
		})
	}
}

// TestHashDifferential compares Hash with thanosHash on random label sets.
func TestHashDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 2000 {
		var kv []string
		for range rng.IntN(20) {
			kv = append(kv, "l"+strconv.Itoa(rng.IntN(40)), strings.Repeat("v", rng.IntN(300)))
		}
		ls := labels.FromStrings(kv...)
		tenant := strings.Repeat("t", rng.IntN(70))
		if got, want := Hash(tenant, ls), thanosHash(tenant, thanosLabelsOf(ls)); got != want {
			t.Fatalf("Hash(%q, %s) = %#x, want %#x", tenant, ls, got, want)
		}
	}
}

func TestHashAllocs(t *testing.T) {
	ls := labels.FromStrings("__name__", "http_requests_total", "code", "200", "instance", "10.0.0.1:8080", "job", "api")
	if got := testing.AllocsPerRun(100, func() { _ = Hash("team-a", ls) }); got != 0 {
		t.Fatalf("AllocsPerRun(Hash) = %v, want 0", got)
	}
}
