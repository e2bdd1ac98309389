//go:build !race

package pathtemplate_test

const raceEnabled = false
