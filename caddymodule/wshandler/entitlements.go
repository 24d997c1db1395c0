package wshandler

import (
	"errors"
	"fmt"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/wsauth"
	"github.com/gatehouse/gatehouse/wsauth/policy"
)

// parseEntitlements parses the entitlements block (docs/entitlements.md):
//
//	entitlements {
//		venues <feed> <VENUE>...                              # repeatable, one per feed
//		replace_defaults
//		rule <Controller> <Topic> argument symbol|venue <feed>
//		rule <Controller> <Topic> data <Member> symbol|venue|venues <feed>
//		rule <Controller> <Topic> every <feed>
//		rule <Controller> <Topic> none
//	}
func (h *Handler) parseEntitlements(d *caddyfile.Dispenser) error {
	if err := cfutil.NoArgs(d); err != nil {
		return err
	}
	h.Entitlements = new(policy.VenueConfig)
	once := cfutil.NewOnceSet("gatehouse_ws: entitlements: ", "venues", "rule")
	return cfutil.ParseBlock(d, once, func(name string) error {
		switch name {
		case "replace_defaults":
			var err error
			h.Entitlements.ReplaceDefaults, err = cfutil.Flag(d)
			return err
		case "venues":
			args, err := cfutil.ListArgs(d)
			if err != nil {
				return err
			}
			if len(args) < 2 {
				return d.Errf("venues takes a feed and at least one venue")
			}
			if h.Entitlements.Venues == nil {
				h.Entitlements.Venues = map[string][]string{}
			}
			if _, dup := h.Entitlements.Venues[args[0]]; dup {
				return d.Errf("venues of %q given twice", args[0])
			}
			h.Entitlements.Venues[args[0]] = args[1:]
			return nil
		case "rule":
			args, err := cfutil.ListArgs(d)
			if err != nil {
				return err
			}
			r, err := venueRule(args)
			if err != nil {
				return d.Errf("rule: %v", err)
			}
			h.Entitlements.Rules = append(h.Entitlements.Rules, r)
			return nil
		}
		return cfutil.Unrecognized(d)
	})
}

// venueRule reads the arguments of a rule line.
func venueRule(args []string) (policy.VenueRule, error) {
	if len(args) < 3 {
		return policy.VenueRule{}, errors.New("want <Controller> <Topic>, then argument, data, every or none and their arguments")
	}
	r := policy.VenueRule{Controller: args[0], Topic: args[1], In: args[2]}
	rest := args[3:]
	want := 0
	switch r.In {
	case policy.VenueInArgument:
		want = 2
		if len(rest) == want {
			r.Form, r.Feed = rest[0], rest[1]
		}
	case policy.VenueInData:
		want = 3
		if len(rest) == want {
			r.Member, r.Form, r.Feed = rest[0], rest[1], rest[2]
		}
	case policy.VenueEvery:
		want = 1
		if len(rest) == want {
			r.Feed = rest[0]
		}
	case policy.VenueNone:
	default:
		return r, fmt.Errorf("%q: want argument, data, every or none", r.In)
	}
	if len(rest) != want {
		return r, fmt.Errorf("%s %s %s takes %d more arguments, got %d", r.Controller, r.Topic, r.In, want, len(rest))
	}
	return r, nil
}

// venues builds the venue table h configures; nil without one.
func (h *Handler) venues() (*policy.Venues, error) {
	if h.Entitlements == nil {
		return nil, nil
	}
	v, err := policy.NewVenues(*h.Entitlements)
	if err != nil {
		return nil, fmt.Errorf("gatehouse_ws: entitlements: %w", err)
	}
	return v, nil
}

// socketIdentity is the identity a live socket goes on with after Verify:
// id when it accepted the token; when it refused the token only because
// its user's entitlements changed since it was issued, the token's
// identity narrowed to the pairs the user still holds (verify's
// Narrowed): the HTTP routes refuse that token, a socket ends only the
// subscriptions that lost their right. nil with the refusal otherwise.
func socketIdentity(id *verify.Identity, err error) (*verify.Identity, error) {
	if err == nil {
		return id, nil
	}
	if ve, ok := errors.AsType[*verify.Error](err); ok && ve.Reason == verify.ReasonEntitlementsChanged && ve.Narrowed != nil {
		return ve.Narrowed, nil
	}
	return nil, err
}

// wsIdentity is the gateway's identity of id, verified from token.
func wsIdentity(id *verify.Identity, token string) wsauth.Identity {
	name, _ := id.Claims()["name"].(string)
	return wsauth.Identity{Subject: id.Subject, ClientID: id.ClientID, DisplayName: name,
		Scopes: id.Scopes, Entitlements: id.Entitlements, Expiry: id.Expiry, Token: token}
}
