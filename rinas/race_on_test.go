//go:build race

package rinas

// raceEnabled: the race detector slows the tests that loop over many
// configurations, which then run a representative subset; and it maps
// terabytes of shadow memory, so a child under RLIMIT_AS cannot start.
const raceEnabled = true
