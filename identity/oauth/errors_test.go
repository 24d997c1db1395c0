package oauth

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestWriteErrorDescriptionCharacters(t *testing.T) {
	for _, desc := range []string{
		"the client may not request scope " + QuoteScope("Service/Admin"),
		`quote " and backslash \ and tab` + "\t and newline\n and é",
	} {
		rec := httptest.NewRecorder()
		WriteError(rec, InvalidRequest(desc), false)
		var body ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if i := strings.IndexFunc(body.ErrorDescription, func(r rune) bool { return !DescriptionChar(r) }); i >= 0 {
			t.Errorf("error_description %q has a character RFC 6749 §5.2 forbids at %d", body.ErrorDescription, i)
		}
		if body.ErrorDescription == "" {
			t.Errorf("description %q dropped whole", desc)
		}
	}
	if got := QuoteScope("Service/Admin"); strings.ContainsAny(got, `"\`) {
		t.Errorf("QuoteScope = %s", got)
	}
}
