//go:build race

package buffer_test

const raceEnabled = true
