package oauth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReadForm(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		wantErr    bool
		want       map[string]string
	}{
		{"plain", "grant_type=password&username=demo", false, map[string]string{"grant_type": "password", "username": "demo"}},
		{"empty value is absent", "grant_type=password&scope=", false, map[string]string{"grant_type": "password"}},
		{"repeated", "grant_type=password&grant_type=password", true, nil},
		{"repeated with an empty second value", "grant_type=password&grant_type=", true, nil},
		{"repeated with an empty first value", "grant_type=&grant_type=password", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			form, err := ReadForm(httptest.NewRecorder(), r)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if tc.wantErr {
				if err.Code != ErrInvalidRequest {
					t.Fatalf("code %q", err.Code)
				}
				return
			}
			if len(form) != len(tc.want) {
				t.Fatalf("form %v, want %v", form, tc.want)
			}
			for k, v := range tc.want {
				if form.Get(k) != v {
					t.Fatalf("%s = %q, want %q", k, form.Get(k), v)
				}
			}
		})
	}
}
