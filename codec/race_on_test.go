//go:build race

package codec

// raceEnabled: the race detector changes allocation counts.
const raceEnabled = true
