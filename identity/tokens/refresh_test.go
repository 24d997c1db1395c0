package tokens

import "testing"

func TestParseRefreshToken(t *testing.T) {
	for _, tc := range []struct {
		token string
		want  parsed
		ok    bool
	}{
		{"fam~1~secret~tag", parsed{"fam", 1, "fam~1~secret", "tag"}, true},
		{"fam~12~s3cr3t-_~t4g", parsed{"fam", 12, "fam~12~s3cr3t-_", "t4g"}, true},
		{"fam~1~secret", parsed{}, false},
		{"fam~1~secret~", parsed{}, false},
		{"legacy-token-without-separators", parsed{}, false},
		{"~1~secret~tag", parsed{}, false},
		{"fam~0~secret~tag", parsed{}, false},
		{"fam~-1~secret~tag", parsed{}, false},
		{"fam~01~secret~tag", parsed{}, false},
		{"fam~+1~secret~tag", parsed{}, false},
		{"fam~1~~tag", parsed{}, false},
		{"fam~1~a~b~tag", parsed{}, false},
		{"fam~99999999999999999999~secret~tag", parsed{}, false},
		{"fam~x~secret~tag", parsed{}, false},
	} {
		got, ok := parse(tc.token)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parse(%q) = %+v, %v; want %+v, %v", tc.token, got, ok, tc.want, tc.ok)
		}
	}
}
