//go:build !race

package console

const raceOn = false
