package activeseries

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

func TestTrackerCustom(t *testing.T) {
	tr := newTestTracker(t, Options{Stripes: 4, Custom: []CustomTracker{
		{Name: "team-a", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "team", "a")}},
		{Name: "not-b-even", Matchers: []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchNotEqual, "team", "b"),
			labels.MustNewMatcher(labels.MatchRegexp, "i", ".*[02468]"),
		}},
		{Name: "no-zone", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "zone", "")}},
		{Name: "none", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "team", "z")}},
	}})
	sets := trackerTestLabels(12) // teams a b c a b c ...
	for i, ls := range sets {
		if i < 6 {
			tr.Update(ls.Hash(), ls, 1)
		} else {
			tr.UpdateHistogram(ls.Hash(), ls, i, 2)
		}
	}
	// team-a: 0 3 | 6 9; not-b-even: 0 2 | 6 8; histograms 6..11.
	want := Stats{
		Counts: Counts{12, 6, 6 + 7 + 8 + 9 + 10 + 11},
		Custom: []CustomTrackerCounts{
			{"team-a", Counts{4, 2, 6 + 9}},
			{"not-b-even", Counts{4, 2, 6 + 8}},
			{"no-zone", Counts{12, 6, 51}},
			{"none", Counts{}},
		},
	}
	got := Stats{Custom: make([]CustomTrackerCounts, 1, 8)}
	tr.UpdateStats(&got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("UpdateStats() = %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		name   string
		want   int
		wantOK bool
	}{{"team-a", 4, true}, {"not-b-even", 4, true}, {"none", 0, true}, {"team-b", 0, false}, {"", 0, false}} {
		if n, ok := tr.ActiveCustom(tc.name); n != tc.want || ok != tc.wantOK {
			t.Errorf("ActiveCustom(%q) = %d, %v, want %d, %v", tc.name, n, ok, tc.want, tc.wantOK)
		}
	}
	// A bucket change reaches the custom trackers; the purge of the floats
	// takes their counts away. not-b-even: 0 2 | 6 8 (10 is team b).
	tr.UpdateHistogram(sets[6].Hash(), sets[6], 100, 2)
	tr.Purge(2)
	want = Stats{
		Counts: Counts{6, 6, 100 + 7 + 8 + 9 + 10 + 11},
		Custom: []CustomTrackerCounts{
			{"team-a", Counts{2, 2, 100 + 9}},
			{"not-b-even", Counts{2, 2, 100 + 8}},
			{"no-zone", Counts{6, 6, 145}},
			{"none", Counts{}},
		},
	}
	tr.UpdateStats(&got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("UpdateStats() after purge = %+v, want %+v", got, want)
	}
	tr.check(t)
}

// TestTrackerEmptyMatchers checks that a custom tracker without matchers
// counts every series, as Cortex's does. Before, New refused it.
func TestTrackerEmptyMatchers(t *testing.T) {
	tr := newTestTracker(t, Options{Custom: []CustomTracker{
		{Name: "all"},
		{Name: "all-too", Matchers: []*labels.Matcher{}},
		{Name: "team-a", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "team", "a")}},
	}})
	series := trackerTestLabels(10)
	for _, ls := range series {
		tr.Update(ls.Hash(), ls, 1)
	}
	for _, tc := range []struct {
		name string
		want int
	}{{"all", 10}, {"all-too", 10}, {"team-a", 4}} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := tr.ActiveCustom(tc.name); !ok || got != tc.want {
				t.Fatalf("ActiveCustom(%q) = %d, %v, want %d, true", tc.name, got, ok, tc.want)
			}
		})
	}
}

// TestTrackerReload checks that ReloadCustomTrackers counts the active
// series of new and changed custom trackers at once, keeps the counters of
// the unchanged ones, and changes nothing when the list is invalid.
func TestTrackerReload(t *testing.T) {
	eq := func(name, value string) []*labels.Matcher {
		return []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, name, value)}
	}
	teamA := CustomTracker{Name: "team-a", Matchers: eq("team", "a")}
	teamB := CustomTracker{Name: "team-b", Matchers: eq("team", "b")}
	seven := CustomTracker{Name: "seven", Matchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchRegexp, "i", ".*7")}}
	many := make([]CustomTracker, MaxCustomTrackers+1)
	for i := range many {
		many[i] = CustomTracker{Name: fmt.Sprint(i), Matchers: eq("team", "c")}
	}
	series := trackerTestLabels(1000)
	for _, tc := range []struct {
		name    string
		custom  []CustomTracker
		kept    []string // custom trackers whose counters stay
		wantErr string
	}{
		{name: "same", custom: []CustomTracker{teamA, teamB, seven}, kept: []string{"team-a", "team-b", "seven"}},
		{name: "reordered", custom: []CustomTracker{seven, teamA, teamB}, kept: []string{"team-a", "team-b", "seven"}},
		{name: "one dropped", custom: []CustomTracker{teamA, seven}, kept: []string{"team-a", "seven"}},
		{name: "one added", custom: []CustomTracker{teamA, teamB, seven, {Name: "all"}}, kept: []string{"team-a", "team-b", "seven"}},
		{name: "one changed", custom: []CustomTracker{teamA, {Name: "team-b", Matchers: eq("team", "c")}, seven}, kept: []string{"team-a", "seven"}},
		{name: "renamed", custom: []CustomTracker{teamA, {Name: "b", Matchers: teamB.Matchers}, seven}, kept: []string{"team-a", "seven"}},
		{name: "none", custom: nil},
		{name: "32", custom: many[:32]},
		{name: "33", custom: many, wantErr: "33 custom trackers"},
		{name: "twice", custom: []CustomTracker{teamA, teamA}, wantErr: `"team-a" defined twice`},
		{name: "nil matcher", custom: []CustomTracker{{Name: "x", Matchers: []*labels.Matcher{nil}}}, wantErr: "nil matcher"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestTracker(t, Options{Stripes: 4, Custom: []CustomTracker{teamA, teamB, seven}})
			for i, ls := range series {
				if i%4 == 0 {
					tr.UpdateHistogram(ls.Hash(), ls, i%7, 10)
				} else {
					tr.Update(ls.Hash(), ls, int64(i%3))
				}
			}
			tr.Purge(1) // drops a third of the float series
			prev := tr.custom.Load()
			err := tr.ReloadCustomTrackers(tc.custom)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ReloadCustomTrackers(%s) = %v, want an ErrOptions about %q", tc.name, err, tc.wantErr)
				}
				if tr.custom.Load() != prev {
					t.Fatalf("ReloadCustomTrackers(%s) failed and changed the custom trackers", tc.name)
				}
				tr.check(t)
				return
			}
			if err != nil {
				t.Fatalf("ReloadCustomTrackers(%s) = %v, want no error", tc.name, err)
			}
			tr.check(t) // the masks match the new custom trackers, the counters count them
			cs := tr.custom.Load()
			if got, want := len(cs.custom), len(tc.custom); got != want {
				t.Fatalf("after ReloadCustomTrackers(%s), %d custom trackers, want %d", tc.name, got, want)
			}
			for _, name := range tc.kept {
				if cs.counts[cs.names[name]] != prev.counts[prev.names[name]] {
					t.Fatalf("ReloadCustomTrackers(%s) replaced the counters of %q, want them kept", tc.name, name)
				}
			}
			var st Stats
			tr.UpdateStats(&st)
			for i, c := range st.Custom {
				want := 0
				for _, ls := range series {
					if tr.stripes[ls.Hash()&tr.mask].table.Load() == nil {
						continue
					}
					if e, _ := tr.stripes[ls.Hash()&tr.mask].table.Load().find(uint32(ls.Hash()>>32), ls); e != nil && matchesAll(tc.custom[i].Matchers, ls) {
						want++
					}
				}
				if c.Name != tc.custom[i].Name || c.Series != want {
					t.Fatalf("after ReloadCustomTrackers(%s), Custom[%d] = %s %d series, want %s %d", tc.name, i, c.Name, c.Series, tc.custom[i].Name, want)
				}
			}
			// Updates and purges go on with the new custom trackers.
			for _, ls := range series {
				tr.Update(ls.Hash(), ls, 20)
			}
			tr.Purge(15)
			tr.check(t)
		})
	}
}

// TestTrackerByLabel checks the counts by label value against the rules
// of Options.MaxLabelValues, step by step.
func TestTrackerByLabel(t *testing.T) {
	tr := newTestTracker(t, Options{Stripes: 4, ByLabel: "team", MaxLabelValues: 2})
	type step struct {
		name      string
		update    []string // values of team of new series, "-" for none
		histogram bool     // the updates are of native histograms of 3 buckets
		want      string   // Stats.Values and Overflow, as value=series/histograms/buckets
	}
	n := 0
	now := int64(10)
	update := func(team string, histogram bool) {
		ls := labels.FromStrings("__name__", "m", "i", fmt.Sprint(n), "team", team)
		if team == "-" {
			ls = labels.FromStrings("__name__", "m", "i", fmt.Sprint(n))
		}
		n++
		if histogram {
			tr.UpdateHistogram(ls.Hash(), ls, 3, now)
		} else {
			tr.Update(ls.Hash(), ls, now)
		}
	}
	for _, st := range []step{
		{name: "empty", want: "overflow=0/0/0"},
		{name: "two values", update: []string{"a", "b", "a"}, want: "a=2/0/0 b=1/0/0 overflow=0/0/0"},
		{name: "a third overflows", update: []string{"c", "c"}, want: "a=2/0/0 b=1/0/0 overflow=2/0/0"},
		{name: "histograms", update: []string{"a", "c"}, histogram: true, want: "a=3/1/3 b=1/0/0 overflow=3/1/3"},
	} {
		t.Run(st.name, func(t *testing.T) {
			for _, v := range st.update {
				update(v, st.histogram)
			}
			if got := byLabelString(tr); got != st.want {
				t.Fatalf("Stats = %s, want %s", got, st.want)
			}
			tr.check(t)
		})
	}

	// The series of b go idle: b loses its place, but the overflow holds
	// series, so a new value d joins it rather than taking b's place. The
	// histograms, updated as floats, count as floats.
	now = 20
	for _, ls := range trackerByLabelSeries(tr) {
		if v := ls.Get("team"); v != "b" {
			tr.Update(ls.Hash(), ls, now)
		}
	}
	tr.Purge(15)
	update("d", false)
	if got, want := byLabelString(tr), "a=3/0/0 overflow=4/0/0"; got != want {
		t.Fatalf("after b went and d came, Stats = %s, want %s", got, want)
	}
	tr.check(t)

	// The overflow drains (c and d go idle): the next new value, e, takes
	// the free place; OverflowValue itself counts in the overflow, and so,
	// the places all taken, do a series without the label and f. Once all
	// go idle, the empty value of a series without the label takes a
	// place.
	now = 30
	for _, ls := range trackerByLabelSeries(tr) {
		if v := ls.Get("team"); v == "a" {
			tr.Update(ls.Hash(), ls, now)
		}
	}
	tr.Purge(25)
	if got, want := byLabelString(tr), "a=3/0/0 overflow=0/0/0"; got != want {
		t.Fatalf("after the overflow drained, Stats = %s, want %s", got, want)
	}
	update("e", false)
	update(OverflowValue, false)
	update("-", false)
	update("f", false)
	if got, want := byLabelString(tr), "a=3/0/0 e=1/0/0 overflow=3/0/0"; got != want {
		t.Fatalf("after e, no team, and f, Stats = %s, want %s", got, want)
	}
	tr.check(t)
	now = 40
	tr.Purge(35)
	update("-", false)
	if got, want := byLabelString(tr), "=1/0/0 overflow=0/0/0"; got != want {
		t.Fatalf("after a purge of all and a series without the label, Stats = %s, want %s", got, want)
	}
	tr.check(t)
}

// byLabelString returns t's Stats.Values and Overflow as
// value=series/histograms/buckets, in order.
func byLabelString(t *Tracker) string {
	var st Stats
	t.UpdateStats(&st)
	var b strings.Builder
	for _, v := range st.Values {
		fmt.Fprintf(&b, "%s=%d/%d/%d ", v.Value, v.Series, v.NativeHistograms, v.NativeHistogramBuckets)
	}
	fmt.Fprintf(&b, "overflow=%d/%d/%d", st.Overflow.Series, st.Overflow.NativeHistograms, st.Overflow.NativeHistogramBuckets)
	return b.String()
}

// trackerByLabelSeries returns the labels of the series t tracks.
func trackerByLabelSeries(t *Tracker) []labels.Labels {
	var out []labels.Labels
	for i := range t.stripes {
		tb := t.stripes[i].table.Load()
		if tb == nil {
			continue
		}
		for j := range t.stripes[i].used {
			out = append(out, trackerEntryAt(tb.chunks, j).lset)
		}
	}
	return out
}
