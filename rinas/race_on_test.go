//go:build race

package rinas

// raceEnabled: the race detector maps terabytes of shadow memory, so a
// child under RLIMIT_AS cannot start.
const raceEnabled = true
