package wshandler

import (
	"errors"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// TestEntitlementsBlock: the entitlements block reaches the gateway as a
// venue table (a configured rule replaces the default row of its topic);
// without it the gateway checks no venue; malformed lines are refused
// with the line's error.
func TestEntitlementsBlock(t *testing.T) {
	var h Handler
	d := caddyfile.NewTestDispenser(`gatehouse_ws {
		upstream ws://127.0.0.1:9090/
		entitlements {
			venues quotes ASX NZX
			venues depth ASX
			rule Market Depth argument symbol level2
			rule Market Quote data Symbol symbol quotes
		}
	}`)
	if err := h.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	cfg, err := h.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Venues == nil {
		t.Fatal("no venue table")
	}
	if ok, _ := cfg.Venues.Check(entitle.MustParse("ASX:level2"), "Market", "Depth!BHP.ASX", nil); !ok {
		t.Error("the configured feed of Depth is not level2")
	}
	if ok, _ := cfg.Venues.Check(entitle.MustParse("ASX:quotes"), "Market", "Quote", []byte(`{"Symbol":"BHP.ASX"}`)); !ok {
		t.Error("the configured Quote rule is not applied")
	}
	if ok, _ := cfg.Venues.Check(entitle.MustParse("ASX:quotes"), "Market", "Search", nil); ok {
		t.Error("Search passed without NZX: the venues line of quotes is lost")
	}
	var plain Handler
	if err := plain.UnmarshalCaddyfile(caddyfile.NewTestDispenser("gatehouse_ws {\n\tupstream ws://127.0.0.1:9090/\n}")); err != nil {
		t.Fatal(err)
	}
	if cfg, err := plain.config(); err != nil || cfg.Venues != nil {
		t.Fatalf("without an entitlements block: %v, %v; want no venue table", cfg.Venues, err)
	}
	for _, bad := range []string{
		"venues quotes", "venues quotes asx", "venues Quotes ASX", "venues quotes ASX\n\t\t\tvenues quotes NZX",
		"rule Market Quote", "rule Market Quote argument quotes", "rule Market Quote argument symbol", "rule Market Quote data Symbol quotes",
		"rule Market Quote every", "rule Market Quote none quotes", "rule Market Quote somewhere quotes",
		"rule Market Quote!x argument symbol quotes", "rule Market Quote argument venues quotes", "frobnicate",
	} {
		var h Handler
		d := caddyfile.NewTestDispenser("gatehouse_ws {\n\tupstream ws://127.0.0.1:9090/\n\tentitlements {\n\t\t" + bad + "\n\t}\n}")
		err := h.UnmarshalCaddyfile(d)
		if err == nil {
			_, err = h.config()
		}
		if err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// TestSocketIdentity: a token refused only because its user's
// entitlements changed goes on, on a socket, as the narrowed identity
// verify gives; any other refusal stays a refusal. It failed when the
// adapter passed every refusal on (a socket lapsed whole on an
// entitlement change).
func TestSocketIdentity(t *testing.T) {
	narrowed := &verify.Identity{Subject: "trader", Entitlements: entitle.MustParse("ASX:quotes")}
	id, err := socketIdentity(nil, &verify.Error{Reason: verify.ReasonEntitlementsChanged, Narrowed: narrowed})
	if err != nil || id != narrowed {
		t.Fatalf("entitlement change: %v, %v; want the narrowed identity", id, err)
	}
	for _, refusal := range []error{
		&verify.Error{Reason: verify.ReasonRevoked},
		&verify.Error{Reason: verify.ReasonEntitlementsChanged}, // no Narrowed: nothing to go on with
		errors.New("keys unavailable"),
	} {
		if id, err := socketIdentity(nil, refusal); err == nil || id != nil {
			t.Errorf("%v: %v, %v; want the refusal", refusal, id, err)
		}
	}
	good := &verify.Identity{Subject: "demo"}
	if id, err := socketIdentity(good, nil); id != good || err != nil {
		t.Errorf("accepted token: %v, %v", id, err)
	}
}
