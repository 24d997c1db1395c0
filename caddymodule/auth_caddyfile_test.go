package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestParseAuthHandler(t *testing.T) {
	h := new(AuthHandler)
	err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(`gatehouse_auth Service/Market {
		scopes Service/News
		header x-auth-user {http.auth.user.id}
		strip_header X-Auth-Role
		strip_authorization
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Scopes) != 2 || h.Scopes[0] != "Service/Market" || h.Scopes[1] != "Service/News" {
		t.Errorf("scopes %v", h.Scopes)
	}
	if got := h.Headers["X-Auth-User"]; len(got) != 1 || got[0] != "{http.auth.user.id}" {
		t.Errorf("headers %v: the name is not canonical or the template is lost", h.Headers)
	}
	if !h.StripAuthorization || len(h.StripHeaders) != 1 || h.AnyScope {
		t.Errorf("parsed %+v", h)
	}
}

func TestParseAuthHandlerErrors(t *testing.T) {
	tests := []struct {
		name, input, want string
	}{
		{"unknown option", "gatehouse_auth {\n\tscope a\n}", `unrecognized subdirective "scope"`},
		{"empty scopes", "gatehouse_auth {\n\tscopes\n}", "wrong argument count"},
		{"any_scope argument", "gatehouse_auth a {\n\tany_scope yes\n}", "wrong argument count"},
		{"any_scope twice", "gatehouse_auth a {\n\tany_scope\n\tany_scope\n}", "any_scope given twice"},
		{"realm without name", "gatehouse_auth {\n\trealm\n}", "wrong argument count"},
		{"realm twice", "gatehouse_auth {\n\trealm a\n\trealm b\n}", "realm given twice"},
		{"header without template", "gatehouse_auth {\n\theader X-User\n}", "wrong argument count"},
		{"header twice", "gatehouse_auth {\n\theader X-User a\n\theader x-user b\n}", "header X-User given twice"},
		{"strip_header empty", "gatehouse_auth {\n\tstrip_header\n}", "wrong argument count"},
		{"strip_authorization argument", "gatehouse_auth {\n\tstrip_authorization yes\n}", "wrong argument count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := new(AuthHandler).UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
