package oauth

import (
	"slices"
	"strings"
	"testing"
)

func TestParseScope(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"", nil, false},
		{"a b", []string{"a", "b"}, false},
		{"  a   b a ", []string{"a", "b"}, false},
		{"Service/Market offline_access", []string{"Service/Market", "offline_access"}, false},
		{"a\tb", nil, true},
		{`a"b`, nil, true},
		{`a\b`, nil, true},
		{"caf\u00e9", nil, true},
		{strings.Repeat("s ", 10) + strings.Repeat("x", 3), []string{"s", "xxx"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseScope(tt.in)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Fatalf("ParseScope(%q) = %v, %v", tt.in, got, err)
			}
		})
	}
	var many []string
	for i := range MaxScopes + 1 {
		many = append(many, strings.Repeat("s", i+1))
	}
	if _, err := ParseScope(strings.Join(many, " ")); err == nil {
		t.Fatal("no bound on the number of scopes")
	}
}
