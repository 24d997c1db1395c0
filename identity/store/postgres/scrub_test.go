package postgres

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestScrub: an error whose text holds the password comes back without
// it, still wrapping the original; other errors come back as they were.
func TestScrub(t *testing.T) {
	cause := errors.New(`server said: password "hunter2-Sekrit" is wrong`)
	wrapped := fmt.Errorf("connecting: %w", cause)
	got := scrub(wrapped, "hunter2-Sekrit")
	if strings.Contains(got.Error(), "hunter2") {
		t.Errorf("scrubbed error still shows the password: %v", got)
	}
	if !errors.Is(got, cause) {
		t.Error("scrubbed error no longer wraps its cause")
	}
	other := errors.New("connection refused")
	if scrub(other, "hunter2-Sekrit") != other || scrub(other, "") != other || scrub(nil, "x") != nil {
		t.Error("scrub changed an error without the password")
	}
}
