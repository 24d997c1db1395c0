package wshandler

import (
	"github.com/caddyserver/caddy/v2"
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/gatehouse/gatehouse/caddymodule/internal/cfutil"
	"github.com/gatehouse/gatehouse/wsauth/policy"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("gatehouse_ws", parseHandler)
	// The gateway answers its path itself: after route protection, before
	// any proxying.
	httpcaddyfile.RegisterDirectiveOrder("gatehouse_ws", httpcaddyfile.Before, "respond")
}

func parseHandler(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	handler := new(Handler)
	err := handler.UnmarshalCaddyfile(h.Dispenser)
	return handler, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	gatehouse_ws [<matcher>] {
//		upstream <ws-url>...              # repeatable; tried in order
//		subprotocols <name>...
//		allowed_origins <origin>...
//		compression off
//		max_message_bytes <bytes>         # max_message_size, the deprecated name, too
//		send_queue_bytes <bytes>
//		send_queue <messages>
//		auth_timeout <duration>
//		auth_max_messages <n>
//		max_unauthenticated <n>
//		ping_interval <duration>
//		idle_timeout <duration>
//		backend_message_timeout <duration>
//		readiness <name> [optional]       # this backend's check in gatehouse_health ready
//		return_access_token <client_id>...  # "*" for every client
//		vendor <name>
//		motif                             # the original web client's replies
//		header <Name> <template>...       # repeatable, one per name
//		pass_authorization
//		name <name>                       # keeps sessions across reloads (default: the handler's position)
//		drain_window <duration>           # sessions a reload cannot keep, and at exit: 1012 spread over it (reload_delay: the deprecated name)
//		trace_subject                     # the subject on the socket's spans (default: the client only)
//		recheck_interval <duration>       # revocation reaches live sessions within it
//		expiry_grace <duration>           # lapsed sessions wait this long for a fresh AuthToken
//		transaction_ids int53|int32       # the backend's TransactionID type (default int53)
//		backend_compression               # offer permessage-deflate to the backend; its compressed messages passed on
//		require_tls [<scope>...]          # withhold these (default Service/Trading, Service/OrderPad) without TLS
//		limits [client <id> | scope <scope>] {  # repeatable with client/scope
//			subscriptions <n>
//			messages_per_second <rate>
//			burst <n>
//			sessions <n>                   # live sessions of one user (default 64)
//		}
//		policy {
//			replace_defaults
//			allow <Controller> <Topic>             # any authenticated session
//			require <Controller> <Topic> <scope>... # any one of the scopes
//			deny <Controller> <Topic>
//		}
//		entitlements {                    # the market-data entitlement check (off without it)
//			venues <feed> <VENUE>...          # per feed, the venues the backend serves
//			replace_defaults
//			rule <Controller> <Topic> argument symbol|venue <feed>
//			rule <Controller> <Topic> data <Member> symbol|venue|venues <feed>
//			rule <Controller> <Topic> every|none [<feed>]
//		}
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive name
	if err := cfutil.NoArgs(d); err != nil {
		return err
	}
	once := cfutil.NewOnceSet("gatehouse_ws: ", "upstream", "header", "limits")
	return cfutil.ParseBlock(d, once, func(name string) (err error) {
		switch name {
		case "upstream":
			err = cfutil.AppendArgs(d, &h.Upstreams)
		case "subprotocols":
			h.Subprotocols, err = cfutil.ListArgs(d)
		case "allowed_origins":
			h.AllowedOrigins, err = cfutil.ListArgs(d)
		case "compression":
			var v string
			if v, err = cfutil.OneArg(d); err == nil && v != "off" {
				return d.Errf("compression takes only \"off\", got %q", v)
			}
			h.DisableCompression = true
		case "max_message_bytes", "max_message_size":
			if name == "max_message_size" {
				caddy.Log().Named("caddyfile").Warn("gatehouse_ws: max_message_size is deprecated: use max_message_bytes")
			}
			var n int
			n, err = cfutil.PositiveIntArg(d)
			h.MaxMessageBytes = int64(n)
		case "send_queue_bytes":
			var n int
			n, err = cfutil.PositiveIntArg(d)
			h.SendQueueBytes = int64(n)
		case "send_queue":
			h.SendQueue, err = cfutil.PositiveIntArg(d)
		case "auth_timeout":
			h.AuthTimeout, err = cfutil.DurationArg(d)
		case "auth_max_messages":
			h.AuthMaxMessages, err = cfutil.PositiveIntArg(d)
		case "max_unauthenticated":
			h.MaxUnauthenticated, err = cfutil.PositiveIntArg(d)
		case "ping_interval":
			h.PingInterval, err = cfutil.DurationArg(d)
		case "idle_timeout":
			h.IdleTimeout, err = cfutil.DurationArg(d)
		case "backend_message_timeout":
			h.BackendMessageTimeout, err = cfutil.DurationArg(d)
		case "readiness":
			h.Readiness, h.ReadinessOptional, err = cfutil.ReadinessArgs(d)
		case "return_access_token":
			err = cfutil.AppendArgs(d, &h.ReturnAccessToken)
		case "vendor":
			h.Vendor, err = cfutil.OneArg(d)
		case "motif":
			h.Motif, err = cfutil.Flag(d)
		case "header":
			err = cfutil.HeaderTemplates(d, once, &h.Headers)
		case "pass_authorization":
			h.PassAuthorization, err = cfutil.Flag(d)
		case "name":
			h.Name, err = cfutil.OneArg(d)
		case "drain_window":
			h.DrainWindow, err = cfutil.DurationArg(d)
		case "reload_delay":
			caddy.Log().Named("caddyfile").Warn("gatehouse_ws: reload_delay is deprecated: use drain_window")
			h.ReloadDelay, err = cfutil.DurationArg(d)
		case "trace_subject":
			h.TraceSubject, err = cfutil.Flag(d)
		case "recheck_interval":
			h.RecheckInterval, err = cfutil.DurationArg(d)
		case "expiry_grace":
			h.ExpiryGrace, err = cfutil.DurationArg(d)
		case "transaction_ids":
			h.TransactionIDs, err = cfutil.OneArg(d)
		case "backend_compression":
			h.BackendCompression, err = cfutil.Flag(d)
		case "require_tls":
			h.RequireTLS = true
			h.WithheldScopes = d.RemainingArgs()
		case "limits":
			err = h.parseLimits(d)
		case "policy":
			err = h.parsePolicy(d)
		case "entitlements":
			err = h.parseEntitlements(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
}

// parseLimits parses "limits [client <id> | scope <scope>] { ... }": the
// default limits without arguments, an override with them.
func (h *Handler) parseLimits(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	var l policy.Limits
	var o policy.LimitOverride
	switch {
	case len(args) == 0:
		if h.Limits != nil {
			return d.Err("limits: the default limits are set twice")
		}
	case len(args) == 2 && args[0] == "client":
		o.ClientID = args[1]
	case len(args) == 2 && args[0] == "scope":
		o.Scope = args[1]
	default:
		return d.Errf("limits: expected no argument, client <id> or scope <scope>, got %q", args)
	}
	err := cfutil.ParseBlock(d, cfutil.NewOnceSet("gatehouse_ws: limits: "), func(name string) (err error) {
		switch name {
		case "subscriptions":
			l.Subscriptions, err = cfutil.PositiveIntArg(d)
		case "messages_per_second":
			var v string
			if v, err = cfutil.OneArg(d); err == nil {
				if l.MessagesPerSecond, err = strconv.ParseFloat(v, 64); err != nil || l.MessagesPerSecond <= 0 {
					return d.Errf("messages_per_second: %q is not a positive number", v)
				}
			}
		case "burst":
			l.Burst, err = cfutil.PositiveIntArg(d)
		case "sessions":
			l.Sessions, err = cfutil.PositiveIntArg(d)
		default:
			return cfutil.Unrecognized(d)
		}
		return err
	})
	if err != nil {
		return err
	}
	if len(args) == 0 {
		h.Limits = &l
	} else {
		o.Limits = l
		h.LimitOverrides = append(h.LimitOverrides, o)
	}
	return nil
}

// parsePolicy parses the policy block.
func (h *Handler) parsePolicy(d *caddyfile.Dispenser) error {
	if err := cfutil.NoArgs(d); err != nil {
		return err
	}
	h.Policy = new(policy.Config)
	once := cfutil.NewOnceSet("gatehouse_ws: policy: ", "allow", "require", "deny")
	return cfutil.ParseBlock(d, once, func(name string) error {
		if name == "replace_defaults" {
			var err error
			h.Policy.ReplaceDefaults, err = cfutil.Flag(d)
			return err
		}
		args, err := cfutil.ListArgs(d)
		if err != nil {
			return err
		}
		if len(args) < 2 {
			return d.ArgErr()
		}
		rule := policy.Rule{Controller: args[0], Topic: args[1]}
		switch name {
		case "allow":
			rule.AllowWithoutScope = len(args) == 2
		case "require":
			rule.Scopes = args[2:]
		case "deny":
			rule.Deny = len(args) == 2
		default:
			return cfutil.Unrecognized(d)
		}
		if (name == "require") == (len(args) == 2) {
			return d.ArgErr()
		}
		h.Policy.Rules = append(h.Policy.Rules, rule)
		return nil
	})
}

// Interface guards
var _ caddyfile.Unmarshaler = (*Handler)(nil)
