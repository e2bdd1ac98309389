//go:build race

package exporter

const raceEnabled = true
