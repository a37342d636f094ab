package exemplars

import (
	"errors"
	"fmt"
	"reflect"
)

// The ring's semantics are Prometheus's, and so are its errors: it
// returns Prometheus's own values, which callers already test for with
// errors.Is, and defines one of its own only where that value lives in a
// package the ring does not import.
//
//   - storage.ErrExemplarsDisabled when the ring's size is zero;
//   - an error wrapping [ErrInvalidExemplar], with the same text as
//     Prometheus's, when an exemplar's label names repeat;
//   - storage.ErrExemplarLabelLength when an exemplar's labels are longer
//     than exemplar.ExemplarMaxLabelSetLength UTF-8 characters;
//   - storage.ErrOutOfOrderExemplar when an exemplar is too old for its
//     series;
//   - storage.ErrDuplicateExemplar, from the Validate methods only, when
//     an exemplar equals its series' newest.

// ErrInvalidExemplar is returned, wrapped with the repeated name, when an
// exemplar's label names repeat, where Prometheus's storage returns
// tsdb.ErrInvalidExemplar wrapped the same way and with the same text.
//
// errors.Is(err, tsdb.ErrInvalidExemplar) holds for such an error, as it
// does for Prometheus's, so that a caller's test for Prometheus's value
// keeps working: ErrInvalidExemplar is not that value, which lives in
// package tsdb, whose import would compile some 430 packages more than
// this one does (AWS, Azure, Kubernetes and Google clients among them;
// see the README), but it matches it under errors.Is by what the value
// is, an errors.New error with the text "invalid exemplar". So it also
// matches any other such error, and only it: not tsdb.ErrInvalidSample,
// nor an error of another type or text. TestErrInvalidExemplar holds it
// to Prometheus's value, so that a Prometheus that changed it would fail
// the test rather than the callers. errors.Is(err, ErrInvalidExemplar)
// holds too; the converse, errors.Is(tsdbErr, ErrInvalidExemplar) for an
// error of Prometheus's own storage, does not.
var ErrInvalidExemplar error = invalidExemplar{}

// invalidExemplarText is the text of tsdb.ErrInvalidExemplar.
const invalidExemplarText = "invalid exemplar"

// errorsNewType is the type of the errors that errors.New returns, that
// of tsdb.ErrInvalidExemplar.
var errorsNewType = reflect.TypeOf(errors.New(""))

// invalidExemplar is the type of [ErrInvalidExemplar].
type invalidExemplar struct{}

func (invalidExemplar) Error() string { return invalidExemplarText }

// Is reports whether target is tsdb.ErrInvalidExemplar, or another
// errors.New error of its text.
func (invalidExemplar) Is(target error) bool {
	return reflect.TypeOf(target) == errorsNewType && target.Error() == invalidExemplarText
}

// errDuplicateLabelName is Prometheus's error for an exemplar whose label
// name repeats. It is built only on that rare path.
func errDuplicateLabelName(name string) error {
	return fmt.Errorf("label name %q is not unique: %w", name, ErrInvalidExemplar)
}
