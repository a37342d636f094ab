package exemplars

import (
	"errors"
	"reflect"
	"testing"

	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"

	"github.com/ingestkit/ingestkit/internal/promcompat"
)

// The ring has the semantics of Prometheus's storage as of v0.316.0. The
// releases before it in the supported range lack parts of them, which the
// tests compare where the storage in use has them and show, where it
// lacks them, in TestOlderPrometheus.

// upstreamTakesRepeatedNames reports whether Prometheus's storage in use
// takes an exemplar whose label names repeat, as it does before v0.316.0,
// by asking one: only the storage's checks changed, not its methods.
func upstreamTakesRepeatedNames() bool {
	es, err := promcompat.NewCircularExemplarStorage(1, tsdb.NewExemplarMetrics(nil), 0)
	if err != nil {
		panic(err)
	}
	e := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "a", "trace_id", "b")}
	return es.ValidateExemplar(labels.FromStrings("job", "probe"), e) == nil
}

// comparableWindow returns the out-of-order window that a test asking
// for d gives both the ring and Prometheus's storage: d where the storage
// has a window (v0.310.0 on), and min(d, 0) before. A storage without a
// window rejects every exemplar before its series' newest, as a ring with
// a window of zero or less does (TestOlderPrometheus), as long as the
// ring's newest-window does not overflow: the tests' timestamps stay far
// from the ends of int64.
func comparableWindow(d int64) int64 {
	if promcompat.ExemplarsOutOfOrder() {
		return d
	}
	return min(d, 0)
}

// TestOlderPrometheus shows how the ring differs from Prometheus's storage
// of the releases before v0.316.0 in the supported range, each difference
// where the storage in use has it (the ring's doc states them):
//
//   - before v0.316.0 the storage takes an exemplar whose label names
//     repeat, which the ring rejects, as v0.316.0 does;
//   - before v0.310.0 it has no out-of-order window: it rejects every
//     exemplar before its series' newest, as a ring with a window of zero
//     does, where a ring with a window adds it in time order, or ignores
//     it at the timestamp of one its series holds.
//
// Nothing else differs. Resize in particular keeps the same exemplars in
// the same order and returns the same count at every release: v0.309.1
// packs the exemplars into the first slots and relinks each series in
// arrival order, later releases copy the slots, links and all, and
// without a window a series' list is in arrival order. The differential
// tests compare everything else at every release.
func TestOlderPrometheus(t *testing.T) {
	// The probe agrees with the release, which promcompat tells by a
	// signature that changed in v0.316.0 too.
	if takes, want := upstreamTakesRepeatedNames(), !promcompat.WriteHandlerTakesV2(); takes != want {
		t.Errorf("upstreamTakesRepeatedNames() = %v, want %v: the storage took them up to v0.315.1, whose remote.NewWriteHandler takes a storage.Appendable", takes, want)
	}

	t.Run("repeated label names", func(t *testing.T) {
		if !upstreamTakesRepeatedNames() {
			t.Skip("Prometheus's storage in use rejects them, as the ring does (v0.316.0 on): the other tests compare the two")
		}
		ring, up := New(3, Options{}), newUpstream(t, 3, 0)
		e := exemplar.Exemplar{Labels: labels.FromStrings("trace_id", "a", "trace_id", "b"), Value: 1, Ts: 10}
		const wantText = `label name "trace_id" is not unique: invalid exemplar`
		// The storage's own methods: the tests' wrapper answers as v0.316.0.
		for _, c := range []struct {
			name     string
			ring, up func(labels.Labels, exemplar.Exemplar) error
		}{
			{"ValidateExemplar", ring.ValidateExemplar, up.CircularExemplarStorage.ValidateExemplar},
			{"AddExemplar", ring.AddExemplar, up.CircularExemplarStorage.AddExemplar},
		} {
			if err := c.ring(seriesFoo, e); err == nil || err.Error() != wantText || !errors.Is(err, tsdb.ErrInvalidExemplar) {
				t.Errorf("ring %s(%v) = %v, want %q, a tsdb.ErrInvalidExemplar", c.name, e, err, wantText)
			}
			if err := c.up(seriesFoo, e); err != nil {
				t.Errorf("Prometheus's %s(%v) = %v, want nil", c.name, e, err)
			}
		}
		if got := selectFlat(t, ring); len(got) != 0 {
			t.Errorf("ring Select = %v, want nothing", got)
		}
		if got, want := selectFlat(t, up), []exemplar.Exemplar{e}; !reflect.DeepEqual(got, want) {
			t.Errorf("Prometheus's Select = %v, want %v", got, want)
		}
	})

	t.Run("out-of-order window", func(t *testing.T) {
		if promcompat.ExemplarsOutOfOrder() {
			t.Skip("Prometheus's storage in use has the window, as the ring has (v0.310.0 on): the other tests compare the two")
		}
		if _, err := promcompat.NewCircularExemplarStorage(5, tsdb.NewExemplarMetrics(nil), 100); err == nil {
			t.Error("promcompat.NewCircularExemplarStorage(5, m, 100) = nil error, want one: there is no window to give")
		}
		up := newUpstream(t, 5, 0)
		if up.setWindow(100) {
			t.Error("setWindow(100) = true, want false: there is no window to set")
		}
		windowed, zero := New(5, Options{OutOfOrderTimeWindow: 100}), New(5, Options{})
		for _, c := range []struct {
			e                 exemplar.Exemplar
			windowed, without error // the ring's with a window of 100; without one, the ring's and Prometheus's
		}{
			{ex(1, 200), nil, nil},
			{ex(2, 150), nil, storage.ErrOutOfOrderExemplar},                           // late, within the window
			{ex(3, 150), nil, storage.ErrOutOfOrderExemplar},                           // late, at a stored timestamp: ignored
			{ex(4, 100), storage.ErrOutOfOrderExemplar, storage.ErrOutOfOrderExemplar}, // at the window's edge
			{ex(5, 250), nil, nil},
		} {
			if err := windowed.AddExemplar(seriesFoo, c.e); err != c.windowed {
				t.Errorf("AddExemplar(%v) with a window = %v, want %v", c.e, err, c.windowed)
			}
			if err := zero.AddExemplar(seriesFoo, c.e); err != c.without {
				t.Errorf("AddExemplar(%v) without a window = %v, want %v", c.e, err, c.without)
			}
			if err := up.AddExemplar(seriesFoo, c.e); err != c.without {
				t.Errorf("Prometheus's AddExemplar(%v) = %v, want %v", c.e, err, c.without)
			}
		}
		if got, want := selectFlat(t, windowed), []exemplar.Exemplar{ex(2, 150), ex(1, 200), ex(5, 250)}; !reflect.DeepEqual(got, want) {
			t.Errorf("Select with a window = %v, want %v", got, want)
		}
		want := []exemplar.Exemplar{ex(1, 200), ex(5, 250)}
		if got := selectFlat(t, zero); !reflect.DeepEqual(got, want) {
			t.Errorf("Select without a window = %v, want %v", got, want)
		}
		if got := selectFlat(t, up); !reflect.DeepEqual(got, want) {
			t.Errorf("Prometheus's Select = %v, want %v", got, want)
		}
		const name = "prometheus_tsdb_exemplar_out_of_order_exemplars_total"
		if w, z, u := windowed.Stats().OutOfOrder, zero.Stats().OutOfOrder, up.metrics(t)[name]; w != 1 || z != 3 || u != 3 {
			t.Errorf("out-of-order counts: %d with a window, %d without, %v in Prometheus's %s; want 1, 3 and 3", w, z, u, name)
		}
	})
}

// TestUpstreamGaugesAfterResize shows why compareMetrics compares two of
// Prometheus's gauges after a resize only before v0.310.0. A ring of 4
// holds 2 exemplars, grows to 6 and takes 3 more. The ring's Stats count
// 5, the oldest at 1 s. v0.309.1's storage packs its exemplars into the
// first slots on a resize, and its gauges agree; later releases copy the
// ring, empty slots first, and then take the slot number of the next
// exemplar for the count and the first slot's timestamp for the oldest,
// which are both off here.
func TestUpstreamGaugesAfterResize(t *testing.T) {
	ring, up := New(4, Options{}), newUpstream(t, 4, 0)
	add := func(ts ...int64) {
		t.Helper()
		for _, ts := range ts {
			e := ex(float64(ts), ts)
			if err, upErr := ring.AddExemplar(seriesFoo, e), up.AddExemplar(seriesFoo, e); err != nil || upErr != nil {
				t.Fatalf("AddExemplar(%v) = %v, upstream %v", e, err, upErr)
			}
		}
	}
	add(1000, 2000)
	if got, want := ring.Resize(6), up.Resize(6); got != want || got != 2 {
		t.Fatalf("Resize(6) = %d, upstream %d, want 2", got, want)
	}
	add(3000, 4000, 5000)
	s := ring.Stats()
	if s.Exemplars != 5 || s.OldestTimestamp != 1000 {
		t.Errorf("Stats() = %+v, want 5 exemplars, the oldest at 1000", s)
	}
	m := up.metrics(t)
	count, oldest := m["prometheus_tsdb_exemplar_exemplars_in_storage"], m["prometheus_tsdb_exemplar_last_exemplars_timestamp_seconds"]
	agree := count == float64(s.Exemplars) && oldest == float64(s.OldestTimestamp)/1000
	if want := !promcompat.ExemplarsOutOfOrder(); agree != want {
		t.Errorf("Prometheus's gauges: %v exemplars, the oldest at %v s; agree with the ring's %+v: %v, want %v (before v0.310.0 only)", count, oldest, s, agree, want)
	}
}
