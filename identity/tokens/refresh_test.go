package tokens

import "testing"

func TestParseRefreshToken(t *testing.T) {
	for _, tc := range []struct {
		token string
		want  parsed
		ok    bool
	}{
		{format("fam", 1, "secret"), parsed{"fam", 1}, true},
		{"fam~12~s3cr3t-_", parsed{"fam", 12}, true},
		{"legacy-token-without-separators", parsed{}, false},
		{"~1~secret", parsed{}, false},
		{"fam~0~secret", parsed{}, false},
		{"fam~-1~secret", parsed{}, false},
		{"fam~01~secret", parsed{}, false},
		{"fam~+1~secret", parsed{}, false},
		{"fam~1~", parsed{}, false},
		{"fam~1~a~b", parsed{}, false},
		{"fam~99999999999999999999~secret", parsed{}, false},
		{"fam~x~secret", parsed{}, false},
	} {
		got, ok := parse(tc.token)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parse(%q) = %+v, %v; want %+v, %v", tc.token, got, ok, tc.want, tc.ok)
		}
	}
}
