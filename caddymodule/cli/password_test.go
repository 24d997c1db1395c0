package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestReadPassword(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"line", "pw\nrest\n", "pw", false},
		{"crlf", "pw\r\n", "pw", false},
		{"no newline", "pw", "pw", false},
		{"spaces kept", " p w \n", " p w ", false},
		{"empty", "", "", true},
		{"empty line", "\n", "", true},
		{"too long", strings.Repeat("x", maxPasswordInput), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readPassword(strings.NewReader(tt.in), &bytes.Buffer{}, true)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %q, %v; want %q (error: %t)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
