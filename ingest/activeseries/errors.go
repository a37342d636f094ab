package activeseries

import "errors"

// ErrOptions is returned by [New] when its options are invalid: too many
// stripes or custom trackers, or a custom tracker without a name, with a
// name used twice, or with a nil matcher.
var ErrOptions = errors.New("activeseries: invalid tracker options")
