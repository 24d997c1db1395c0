package wsauth

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// TestScopeShrinkReachesMessagesPipelinedBehind: A Sub and a Publish for News
// pipelined in the same TCP write right behind the AuthToken that drops
// News are refused; the subscription made just before is ended at the
// backend; nothing for News reaches the backend after the AuthToken.
func TestScopeShrinkReachesMessagesPipelinedBehind(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	c := e.dial(bearer(tokDemo))
	narrow := madeUpToken("u-demo", []string{policy.ScopeMarket}, 24*time.Hour)
	var msgs []string
	msgs = append(msgs, subMsg("News", "News!A", 1), authToken("Bearer", narrow))
	for i := range 30 {
		msgs = append(msgs, subMsg("News", "News!B"+strconv.Itoa(i), 100+i), `{"Controller":"News","Topic":"QueryNews","TransactionID":`+strconv.Itoa(200+i)+`}`)
	}
	marker := `{"Controller":"Market","Topic":"Echo","TransactionID":9}`
	writePipelined(t, c, append(msgs, marker)...)
	readUntil(t, c, marker)
	eventually(t, "the gateway's Unsub of News!A", func() bool { return e.backend.gatewayUnsubs("News", "News!A") == 1 })
	got := e.backend.received()
	for _, m := range got {
		if strings.Contains(m, `"News!B`) || strings.Contains(m, "QueryNews") {
			t.Fatalf("a News message after the narrowing AuthToken reached the backend: %s", m)
		}
	}
	if _, held := backendSubs(got); len(held) != 0 {
		t.Fatalf("the backend still holds %v", held)
	}
}

// TestAuthTokenOfAnotherSubjectChangesNothing: An AuthToken for another
// subject with more scopes, pipelined with Trading messages, changes
// nothing: the Trading messages are refused.
func TestAuthTokenOfAnotherSubjectChangesNothing(t *testing.T) {
	e, _ := newLiveEnv(t, nil)
	c := e.dial(bearer(tokDemo))
	var msgs []string
	for i := range 8 { // the Auth bucket's burst is 10
		msgs = append(msgs, authToken("Bearer", tokTrader),
			`{"Controller":"Trading","Topic":"PlaceOrder","TransactionID":`+strconv.Itoa(i)+`}`,
			subMsg("Trading", "Orders!A"+strconv.Itoa(i), 50+i))
	}
	marker := `{"Controller":"Market","Topic":"Echo","TransactionID":9}`
	writePipelined(t, c, append(msgs, marker)...)
	readUntil(t, c, marker)
	for _, m := range e.backend.received() {
		if strings.Contains(m, "Trading") {
			t.Fatalf("reached the backend: %s", m)
		}
	}
	if got := roundTrip(t, c, queryIdentify); !strings.Contains(got, `"UserID":"u-demo"`) || strings.Contains(got, "Trading") {
		t.Fatalf("identity changed: %s", got)
	}
}
