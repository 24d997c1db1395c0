package audit

// SetMaxDelayed sets the bound of the records queued under a FlushDelay
// for a test, and returns a function that puts it back.
func SetMaxDelayed(n int) func() {
	old := maxDelayed
	maxDelayed = n
	return func() { maxDelayed = old }
}
