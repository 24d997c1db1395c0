//go:build !race

package wsauth

const raceEnabled = false
