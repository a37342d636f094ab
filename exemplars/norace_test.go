//go:build !race

package exemplars

const raceEnabled = false
