package activeseries

import "errors"

// ErrOptions is returned by [New] when its options are invalid: too many
// stripes or custom trackers, a custom tracker without a name, with a name
// used twice, or with a nil matcher, or a MaxLabelValues out of range or
// without a ByLabel; and by [Tracker.ReloadCustomTrackers] when its custom
// trackers are invalid.
var ErrOptions = errors.New("activeseries: invalid tracker options")
