package zenith

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"testing"
)

func TestDataMember(t *testing.T) {
	tests := []struct {
		data, value string
		found       bool
		err         bool
	}{
		{`{"Market":"ASX","Code":"BHP"}`, `"ASX"`, true, false},
		{`{ "Code" : "BHP" , "Market" : ["ASX"] }`, `["ASX"]`, true, false},
		{`{"Code":"BHP"}`, ``, false, false},
		{`{}`, ``, false, false},
		{`{"market":"ASX"}`, ``, false, true},
		{`{"Market":"ASX","MARKET":"NZX"}`, ``, false, true},
		{`{"MARKET":"NZX","Market":"ASX"}`, ``, false, true},
		{`{"Market":"ASX","Market":"NZX"}`, ``, false, true},
		{`{"Market":"ASX","Mar-ket":"NZX"}`, ``, false, true},
		{`{"Market":"ASX","_market_":"NZX"}`, ``, false, true},
		{`{"Mark\u0065t":"ASX"}`, ``, false, true},
		{`{"Märket":"ASX"}`, ``, false, true},
		{`["Market"]`, ``, false, true},
		{`"Market"`, ``, false, true},
		{`{"Market":"ASX"} {}`, ``, false, true},
		{`{"Market":"ASX"`, ``, false, true},
	}
	for _, tt := range tests {
		v, found, err := DataMember([]byte(tt.data), "Market")
		if string(v) != tt.value || found != tt.found || (err != nil) != tt.err {
			t.Errorf("DataMember(%s) = %s, %v, %v; want %s, %v, error %v", tt.data, v, found, err, tt.value, tt.found, tt.err)
		}
		if err != nil && !errors.Is(err, ErrMember) {
			t.Errorf("DataMember(%s): %v is not ErrMember", tt.data, err)
		}
	}
	if v, found, err := DataMember(nil, "Market"); v != nil || found || err != nil {
		t.Errorf("no Data: %s, %v, %v", v, found, err)
	}
}

// FuzzDataMember: what DataMember reads is what a lenient backend reads.
// Go's encoding/json (v1) matches member names case-insensitively, keeps
// the last of repeated members and decodes escapes in names: when
// DataMember reads a value without error, v1 decoding Data into a struct
// with the member reads the same value; when it finds none, v1 reads
// none either.
func FuzzDataMember(f *testing.F) {
	for _, s := range []string{`{"Market":"ASX"}`, `{"market":"NZX"}`, `{"Market":"ASX","MARKET":"NZX"}`,
		`{"Mark\u0065t":"NZX"}`, `{"Code":"BHP"}`, `{"Market":1,"Market":2}`, `{"Marke\u017f":"x"}`, `{"MarKet":"A"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		v, found, err := DataMember([]byte(data), "Market")
		if err != nil {
			return
		}
		var lenient struct{ Market *stdjson.RawMessage }
		if stdjson.Unmarshal([]byte(data), &lenient) != nil {
			// DataMember accepts only an object of valid JSON; v1 refuses
			// some that jsontext accepts (none known): nothing to compare.
			return
		}
		switch {
		case !found && lenient.Market != nil:
			t.Fatalf("DataMember(%s) found no Market; a lenient decoder reads %s", data, *lenient.Market)
		case found && (lenient.Market == nil || !sameJSON(v, *lenient.Market)):
			t.Fatalf("DataMember(%s) = %s; a lenient decoder reads %v", data, v, lenient.Market)
		}
	})
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if stdjson.Unmarshal(a, &x) != nil || stdjson.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := stdjson.Marshal(x)
	ya, _ := stdjson.Marshal(y)
	return bytes.Equal(xa, ya)
}
