package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the -demo mode briefly and checks what it prints: results
// by protocol version for both receivers, and the line that explains the
// 400s, which are all 2.0 requests.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("drives both receivers with a few MiB of requests")
	}
	c := serveConfig("tsdb")
	c.demo, c.duration, c.syntheticSeries = true, 300*time.Millisecond, 2000
	if raceEnabled {
		// Some 7 requests a second: enough to reach the 2.0 ones, which
		// come after the four captured 1.0 requests.
		c.duration = 5 * time.Second
	}
	var out strings.Builder
	if err := runDemo(context.Background(), &out, c); err != nil {
		t.Fatalf("runDemo() = %v\n%s", err, out.String())
	}
	text := out.String()
	for _, re := range []string{
		`(?m)^ +receiver +version +requests +partial \(400\) +samples +exemplars$`,
		`(?m)^ +ingestkit +1\.0 +\d+ +0 +\d+ +\d+$`,
		`(?m)^ +ingestkit +2\.0 +\d+ +\d+ +\d+ +\d+$`,
		`(?m)^ +prometheus +1\.0 +\d+ +0 +\d+ +\d+$`,
		`(?m)^ +prometheus +2\.0 +\d+ +\d+ +\d+ +\d+$`,
		`(?m)^The 400s, (\d+) of \d+ requests \(\d+%\), are (\d+) 2\.0 requests .* \d+ of their series carry exemplars and no sample`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("the demo printed no line matching %s:\n%s", re, text)
		}
	}
	if m := regexp.MustCompile(`The 400s, (\d+) of \d+ requests \(\d+%\), are (\d+) 2\.0`).FindStringSubmatch(text); m != nil && m[1] != m[2] {
		t.Errorf("%s 400s, but %s of them 2.0 requests: want all", m[1], m[2])
	}
}
