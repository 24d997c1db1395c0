package grant

import (
	"context"

	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/tokens"
)

// deviceCode is the device authorization grant's token request (RFC 8628
// §3.4): the polling rules (interval, slow_down, pending, denied,
// expired, one exchange) live in tokens.Service.ExchangeDeviceCode. Its
// authorization_details may ask for fewer of the device's pairs.
func (e *Endpoint) deviceCode(ctx context.Context, req *Request) (*tokens.Response, *oauth.Error) {
	code := req.Form.Get("device_code")
	if code == "" {
		return nil, oauth.InvalidRequest("missing device_code")
	}
	// Malformed or of another type: refused before the poll is recorded.
	asked, perr := oauth.AskedDetails(req.Form)
	if perr != nil {
		return nil, perr
	}
	return e.cfg.Tokens.ExchangeDeviceCode(ctx, req.Client, code, asked)
}
