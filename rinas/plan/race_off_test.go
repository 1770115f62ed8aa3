//go:build !race

package plan

// raceEnabled: the race detector slows the tests that loop over many
// configurations, which then run a representative subset.
const raceEnabled = false
