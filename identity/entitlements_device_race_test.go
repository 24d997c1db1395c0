package identity

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/oauth"
)

// Approved device codes are polled in parallel bursts (four sends of each
// at once) while the user's entitlements change: no token ever holds a
// pair outside every set the user held while its request ran, a device
// that asked for pairs gets exactly those or invalid_authorization_details
// (never more, never a part), a code issues at most one token, and once
// the changes stop every token the verifier still accepts holds only the
// last set, and every one it narrows is narrowed into it. It failed when
// the token request took the device's asked pairs without the user's set
// (the codes asking for NZX:depth got tokens holding it, a pair the user
// never held while they were polled).
func TestEntitlementChangesRaceDevicePolls(t *testing.T) {
	f := newDeviceFixture(t)
	sets := []entitle.Set{entitle.MustParse("ASX:quotes ASX:depth NZX:quotes NZX:depth")}
	f.entitle("demo", sets[0].String())
	cycle := []string{"ASX:quotes NZX:quotes", "ASX:depth ASX:quotes", "NZX:depth"}
	asks := []string{"", adASXNZX, adASXQuotes, adNZXDepth}
	const codes, burst, workers, changes = 32, 4, 4, 24

	b := loggedInDevice(t, f)
	type device struct {
		code  string
		asked *entitle.Set
	}
	devices := make([]device, codes)
	for i := range devices {
		ask := asks[i%len(asks)]
		res := f.startDeviceAsking("openid Service/Market", ask)
		confirmAndAllow(t, b, res)
		devices[i].code = res.str("device_code")
		if ask != "" {
			set, err := entitle.ParseDetails([]byte(ask))
			if err != nil {
				t.Fatal(err)
			}
			devices[i].asked = &set
		}
	}
	f.clock.Add(5 * time.Second)

	ch := &entitlementChanger{sets: sets}
	var refused atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { ch.run(f, cycle, changes) })
	var next atomic.Int64
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < codes; i = int(next.Add(1) - 1) {
				d := devices[i]
				from := ch.version.Load()
				results := make([]response, burst)
				var polls sync.WaitGroup
				for j := range results {
					polls.Go(func() { results[j] = f.serve(pollRequest("tv", d.code)) })
				}
				polls.Wait()
				issued := 0
				for _, res := range results {
					switch {
					case res.status == http.StatusOK:
						issued++
						ch.check(fmt.Sprintf("code %d", i), from, res.str("access_token"), d.asked)
					case res.str("error") == oauth.ErrInvalidAuthorizationDetails && d.asked != nil:
						refused.Add(1)
					case res.str("error") != oauth.ErrSlowDown && res.str("error") != oauth.ErrInvalidGrant:
						ch.report("code %d: %d %s", i, res.status, res.raw)
					}
				}
				if issued > 1 {
					ch.report("code %d issued %d tokens", i, issued)
				}
			}
		})
	}
	wg.Wait()
	for _, b := range ch.bad {
		t.Error(b)
	}
	if len(ch.tokens) < codes/4 {
		t.Fatalf("%d tokens issued, %d refused", len(ch.tokens), refused.Load())
	}
	accepted, narrowed := f.checkWithin(ch.tokens, entitle.MustParse(cycle[2]))
	t.Logf("%d tokens (%d accepted, %d narrowed), %d refused invalid_authorization_details",
		len(ch.tokens), accepted, narrowed, refused.Load())
}
