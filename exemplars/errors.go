package exemplars

import (
	"fmt"

	"github.com/prometheus/prometheus/tsdb"
)

// The ring's semantics are Prometheus's, and so are its errors: it
// returns Prometheus's own values, which callers already test for with
// errors.Is, and defines none of its own.
//
//   - storage.ErrExemplarsDisabled when the ring's size is zero;
//   - an error wrapping tsdb.ErrInvalidExemplar, with the same text as
//     Prometheus's, when an exemplar's label names repeat;
//   - storage.ErrExemplarLabelLength when an exemplar's labels are longer
//     than exemplar.ExemplarMaxLabelSetLength UTF-8 characters;
//   - storage.ErrOutOfOrderExemplar when an exemplar is too old for its
//     series;
//   - storage.ErrDuplicateExemplar, from the Validate methods only, when
//     an exemplar equals its series' newest.

// errDuplicateLabelName is Prometheus's error for an exemplar whose label
// name repeats. It is built only on that rare path.
func errDuplicateLabelName(name string) error {
	return fmt.Errorf("label name %q is not unique: %w", name, tsdb.ErrInvalidExemplar)
}
