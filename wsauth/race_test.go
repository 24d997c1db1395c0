//go:build race

package wsauth

// raceEnabled: the race detector is on, and sync.Pool drops a share of what
// it is given (to find misuse), so tests of what pools save skip that check.
const raceEnabled = true
