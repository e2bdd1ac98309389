//go:build race

package pathtemplate_test

const raceEnabled = true
