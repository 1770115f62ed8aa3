//go:build !race

package rinas

const raceEnabled = false
