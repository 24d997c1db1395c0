package zenith

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAppendError(t *testing.T) {
	tests := []struct {
		name, msg, code, want string
	}{
		{
			"denied", `{"Controller":"Market","Topic":"Markets","Action":"Sub","TransactionID":7,"Data":{"x":1}}`, CodeAuthority,
			`{"Controller":"Market","Topic":"Markets","Action":"Error","TransactionID":7,"Data":"Authority"}`,
		},
		{
			"topic arguments and TransactionID text kept", `{"Controller":"Market","Topic":"Security!BHP.ASX","TransactionID":-0}`, CodeAuthority,
			`{"Controller":"Market","Topic":"Security!BHP.ASX","Action":"Error","TransactionID":-0,"Data":"Authority"}`,
		},
		{
			"default controller, no topic, no TransactionID", `{"Data":1}`, CodeAuthority,
			`{"Controller":"Zenith","Action":"Error","Data":"Authority"}`,
		},
		{
			"escaped values re-encoded", `{"Controller":"Tr\u0061ding","Topic":"\"quoted\"\\\u00e9\u2028<>&\u0001"}`, CodeAuthority,
			`{"Controller":"Trading","Topic":"\"quoted\"\\é` + "\u2028" + `<>&\u0001","Action":"Error","Data":"Authority"}`,
		},
		{
			"malformed echoes what is unambiguous", `{"Controller":"Market","Topic":"Depth","TransactionID":9,"controller":"x"}`, CodeDeserialise,
			`{"Controller":"Zenith","Topic":"Depth","Action":"Error","TransactionID":9,"Data":"Data.Deserialise"}`,
		},
		{
			"malformed with nothing read", `[1]`, CodeDeserialise,
			`{"Controller":"Zenith","Action":"Error","Data":"Data.Deserialise"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Scan([]byte(tt.msg))
			if se, ok := errors.AsType[*ScanError](err); ok {
				env = se.Echo
			} else if err != nil {
				t.Fatal(err)
			}
			got := string(AppendError([]byte("prefix"), &env, tt.code))
			if got != "prefix"+tt.want {
				t.Errorf("got  %s\nwant prefix%s", got, tt.want)
			}
			if _, err := Scan([]byte(got[len("prefix"):])); err != nil {
				t.Errorf("the reply does not scan: %v", err)
			}
		})
	}
}

func TestAppendIdentifyData(t *testing.T) {
	now := time.Date(2026, 11, 21, 9, 30, 0, 500e6, time.UTC)
	ok := &Identify{
		Success:     true,
		AccessToken: "eyJh.eyJz.sig",
		DisplayName: `Alice "A" Ng`,
		UserID:      "alice",
		Expiry:      time.Date(2026, 11, 21, 21, 30, 0, 0, time.FixedZone("AEDT", 11*3600)),
		Scopes:      []string{"openid", "Service/Market", "offline_access", "Service/Trading", "Service/", "Service/a/b", "service/News", "Service/OrderPad"},
	}
	tok := base64.StdEncoding.EncodeToString([]byte(ok.AccessToken))
	tests := []struct {
		name string
		id   *Identify
		p    Profile
		want string
	}{
		{"success", ok, Profile{},
			`{"Result":"Success","AccessToken":"` + tok + `","DisplayName":"Alice \"A\" Ng","UserID":"alice","ExpiryDate":"20261121T103000Z",` +
				`"Scope":["Gatehouse.Service.Market","Gatehouse.Service.Trading","Gatehouse.Service.OrderPad"]}`},
		{"motif and vendor", ok, Profile{Vendor: "Paritech", Motif: true},
			`{"Result":"Success","AccessToken":"` + tok + `","DisplayName":"Alice \"A\" Ng","UserID":"alice","ExpiryDate":"20261121T103000Z",` +
				`"ExpiresIn":"00:59:59.5000000","Scope":["Paritech.Service.Market","Paritech.Service.Trading","Paritech.Service.OrderPad"]}`},
		{"minimal success", &Identify{Success: true}, Profile{}, `{"Result":"Success","Scope":[]}`},
		{"expired, motif", &Identify{Success: true, Expiry: now.Add(-time.Hour)}, Profile{Motif: true},
			`{"Result":"Success","ExpiryDate":"20261121T083000Z","ExpiresIn":"00:00:00.0000000","Scope":[]}`},
		{"reject says nothing else", &Identify{AccessToken: "t", UserID: "alice", Scopes: []string{"Service/Market"}}, Profile{},
			`{"Result":"Reject"}`},
		{"reject, motif", &Identify{UserID: "alice"}, Profile{Motif: true}, `{"Result":"Rejected"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendIdentifyData(nil, tt.id, tt.p, now))
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(got), &m); err != nil {
				t.Errorf("not JSON: %v", err)
			}
		})
	}
}

func TestAppendAuthReply(t *testing.T) {
	env, err := Scan([]byte(`{"Controller":"Auth","Topic":"AuthToken","TransactionID":12,"Data":{"Provider":"Bearer","AccessToken":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		p    Profile
		want string
	}{
		{Profile{}, `{"Controller":"Auth","Topic":"Identify","Action":"Publish","TransactionID":12,"Data":{"Result":"Reject"}}`},
		{Profile{Motif: true}, `{"Controller":"Auth","Topic":"AuthToken","Action":"Publish","TransactionID":12,"Data":{"Result":"Rejected"}}`},
	} {
		got := string(AppendAuthReply(nil, tt.p.AuthTokenReplyTopic(), env.TransactionIDText, &Identify{}, tt.p, time.Time{}))
		if got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
	got := string(AppendAuthReply(nil, "QueryIdentify", nil, &Identify{Success: true, UserID: "u"}, Profile{}, time.Time{}))
	if want := `{"Controller":"Auth","Topic":"QueryIdentify","Action":"Publish","Data":{"Result":"Success","UserID":"u","Scope":[]}}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestZenithTimes(t *testing.T) {
	dates := []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC), "20261121T103000Z"},
		{time.Date(2012, 6, 30, 20, 2, 30, 999e6, time.FixedZone("", 10*3600)), "20120630T100230Z"},
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), "00010101T000000Z"},
	}
	for _, tt := range dates {
		if got := string(AppendDateTime(nil, tt.t)); got != tt.want {
			t.Errorf("AppendDateTime(%v) = %s, want %s", tt.t, got, tt.want)
		}
	}
	spans := []struct {
		d    time.Duration
		want string
	}{
		{0, "00:00:00.000"},
		{time.Hour - time.Second, "00:59:59.000"},
		{3599999 * time.Millisecond, "00:59:59.999"},
		{time.Millisecond - 1, "00:00:00.000"},
		{23*time.Hour + 59*time.Minute, "23:59:00.000"},
		{24 * time.Hour, "1.00:00:00.000"},
		{26*time.Hour + 3*time.Minute + 4*time.Second + 5*time.Millisecond, "1.02:03:04.005"},
		{400 * 24 * time.Hour, "400.00:00:00.000"},
		{-90 * time.Second, "-00:01:30.000"},
		{-25 * time.Hour, "-1.01:00:00.000"},
	}
	for _, tt := range spans {
		if got := string(AppendTimeSpan(nil, tt.d)); got != tt.want {
			t.Errorf("AppendTimeSpan(%v) = %s, want %s", tt.d, got, tt.want)
		}
	}
	// The original client's form: seven fractional digits, .NET ticks.
	ticks := []struct {
		d    time.Duration
		want string
	}{
		{0, "00:00:00.0000000"},
		{time.Hour - time.Second, "00:59:59.0000000"},
		{time.Hour - 500*time.Millisecond, "00:59:59.5000000"},
		{time.Hour - 100*time.Nanosecond, "00:59:59.9999999"},
		{99 * time.Nanosecond, "00:00:00.0000000"},
		{1234567 * time.Microsecond, "00:00:01.2345670"},
		{26*time.Hour + 3*time.Minute + 4*time.Second + 5*time.Millisecond, "1.02:03:04.0050000"},
		{400 * 24 * time.Hour, "400.00:00:00.0000000"},
		{-90*time.Second - 100*time.Nanosecond, "-00:01:30.0000001"},
		{-25 * time.Hour, "-1.01:00:00.0000000"},
	}
	for _, tt := range ticks {
		if got := string(AppendTicksTimeSpan(nil, tt.d)); got != tt.want {
			t.Errorf("AppendTicksTimeSpan(%v) = %s, want %s", tt.d, got, tt.want)
		}
	}
}

func TestParseAuthToken(t *testing.T) {
	jwt := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln"
	b64 := base64.StdEncoding.EncodeToString([]byte(jwt))
	long := strings.Repeat("a", DefaultMaxTokenBytes)
	tests := []struct {
		name, data string
		max        int
		provider   string
		token      string
		err        error
	}{
		{"raw JWT", `{"Provider":"Bearer","AccessToken":"` + jwt + `"}`, 0, "Bearer", jwt, nil},
		{"Base-64 of the JWT", `{"Provider":"Bearer","AccessToken":"` + b64 + `"}`, 0, "Bearer", jwt, nil},
		{"escaped slashes in Base-64", `{"AccessToken":"\/\/8=","Provider":"Bearer"}`, 0, "Bearer", "\xff\xff", nil},
		{"short Base-64", `{"Provider":"Bearer","AccessToken":"YWJj"}`, 0, "Bearer", "abc", nil},
		{"unpadded Base-64 is the raw token", `{"Provider":"Bearer","AccessToken":"YWJjZA"}`, 0, "Bearer", "YWJjZA", nil},
		{"URL alphabet is the raw token", `{"Provider":"Bearer","AccessToken":"-_-_"}`, 0, "Bearer", "-_-_", nil},
		{"other provider passed on", `{"Provider":"Basic","AccessToken":"x","Extra":[1]}`, 0, "Basic", "x", nil},
		{"escapes decoded", `{"Provider":"Bear\u0065r","AccessToken":"a\/b"}`, 0, "Bearer", "a/b", nil},
		{"raw token at the bound", `{"Provider":"Bearer","AccessToken":"` + long + `."}`, len(long) + 1, "Bearer", long + ".", nil},
		{"Base-64 token at the bound", `{"Provider":"Bearer","AccessToken":"` + base64.StdEncoding.EncodeToString([]byte(long)) + `"}`, 0, "Bearer", long, nil},
		{"raw token over the bound", `{"Provider":"Bearer","AccessToken":"` + long + `."}`, len(long), "", "", ErrTokenTooLarge},
		{"Base-64 over the bound", `{"Provider":"Bearer","AccessToken":"` + base64.StdEncoding.EncodeToString([]byte(long+"x")) + `"}`, 0, "", "", ErrTokenTooLarge},
		{"huge escaped token", `{"Provider":"Bearer","AccessToken":"` + strings.Repeat(`\u0061`, 6*DefaultMaxTokenBytes) + `"}`, 0, "", "", ErrTokenTooLarge},
		{"no Data", ``, 0, "", "", ErrMalformed},
		{"Data null", `null`, 0, "", "", ErrMalformed},
		{"Data a string", `"token"`, 0, "", "", ErrMalformed},
		{"no Provider", `{"AccessToken":"x"}`, 0, "", "", ErrMalformed},
		{"no AccessToken", `{"Provider":"Bearer"}`, 0, "", "", ErrMalformed},
		{"empty AccessToken", `{"Provider":"Bearer","AccessToken":""}`, 0, "", "", ErrMalformed},
		{"AccessToken number", `{"Provider":"Bearer","AccessToken":1}`, 0, "", "", ErrMalformed},
		{"Provider null", `{"Provider":null,"AccessToken":"x"}`, 0, "", "", ErrMalformed},
		{"case variant is not the member", `{"provider":"Bearer","accesstoken":"x"}`, 0, "", "", ErrMalformed},
		{"duplicate AccessToken", `{"Provider":"Bearer","AccessToken":"x","AccessToken":"y"}`, 0, "", "", ErrMalformed},
		{"trailing data", `{"Provider":"Bearer","AccessToken":"x"} 1`, 0, "", "", ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := ParseAuthToken([]byte(tt.data), tt.max)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				if strings.Contains(err.Error(), "Bearer") || strings.Contains(err.Error(), "aaaa") {
					t.Errorf("error text quotes the data: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.Provider != tt.provider || req.AccessToken != tt.token {
				t.Errorf("got %q %q, want %q %q", req.Provider, req.AccessToken, tt.provider, tt.token)
			}
		})
	}
}

// TestErrorReplyRoom: an Error reply fits the room ErrorReplyRoom gives
// it, fields of any length without escapes: building it in a buffer that
// large never grows it (a near-megabyte echo grew a second buffer).
func TestErrorReplyRoom(t *testing.T) {
	for _, n := range []int{0, 1, 100, 64 << 10, 1 << 20} {
		env := &Envelope{Controller: "Market", Topic: "Security!" + strings.Repeat("X", n), Present: HasTopic,
			TransactionIDText: []byte("-9007199254740991")}
		for _, code := range []string{"Limited", CodeDeserialise, ""} {
			room := ErrorReplyRoom(env, code)
			buf := make([]byte, 0, room)
			out := AppendError(buf, env, code)
			if cap(out) != room || len(out) > room {
				t.Fatalf("topic of %d, code %q: %d bytes in a buffer of %d, room %d", n, code, len(out), cap(out), room)
			}
		}
	}
}
