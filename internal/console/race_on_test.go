//go:build race

package console

// raceOn: the race detector slows the console's own work many times over, so
// the longest tests run fewer rounds under it.
const raceOn = true
