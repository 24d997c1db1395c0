package authorize

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse/gatehouse/entitle"
	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/verify"
)

// Bounds of the request's parameters.
const (
	maxState     = 2048
	maxNonce     = 512
	maxLoginHint = 255
	maxMaxAge    = 10 * 365 * 24 * 3600 // ten years, in seconds
)

// Response modes (OAuth 2.0 Multiple Response Type Encoding Practices,
// Form Post Response Mode).
const (
	modeQuery    = "query"
	modeFragment = "fragment"
	modeFormPost = "form_post"
)

// Prompt values (OpenID Connect Core §3.1.2.1).
const (
	promptNone          = "none"
	promptLogin         = "login"
	promptConsent       = "consent"
	promptSelectAccount = "select_account"
)

// request is a checked authorization request. It travels sealed between
// the pages (pending.go), so its fields are JSON.
type request struct {
	ClientID string `json:"c"`
	// RedirectURI is where the response goes; RedirectParam is the
	// redirect_uri as sent ("" when left out, the client's one URI used).
	RedirectURI   string   `json:"r"`
	RedirectParam string   `json:"rp,omitempty"`
	ResponseType  string   `json:"rt"`
	Code          bool     `json:"code,omitempty"`
	Token         bool     `json:"token,omitempty"`
	IDToken       bool     `json:"idt,omitempty"`
	ResponseMode  string   `json:"rm"`
	Scopes        []string `json:"s"`
	State         string   `json:"st,omitempty"`
	Nonce         string   `json:"n,omitempty"`
	Challenge     string   `json:"cc,omitempty"`
	Method        string   `json:"ccm,omitempty"`
	Prompt        []string `json:"p,omitempty"`
	MaxAge        int      `json:"ma"` // -1: none
	LoginHint     string   `json:"lh,omitempty"`
	// SecondFactor: the request's acr_values ask for the multi-factor
	// class (RFC 9470 §4).
	SecondFactor bool `json:"mfa,omitempty"`
	// HintSubject is the subject of the request's id_token_hint, "" when
	// it has none.
	HintSubject string `json:"hs,omitempty"`

	// Set once the user has logged in, for the consent step.
	Subject   string `json:"sub,omitempty"`
	SessionID string `json:"sid,omitempty"`

	// Details are the market-data pairs its authorization_details asked
	// for (RFC 9396 §2), as entitle writes them; "" when it asked for
	// none, and the code then holds every pair the user does.
	Details string `json:"ad,omitempty"`
}

// askedDetails are the pairs q asked for; nil when it asked for none.
func (q *request) askedDetails() *entitle.Set {
	if q.Details == "" {
		return nil
	}
	set, err := entitle.ParseDetails([]byte(q.Details))
	if err != nil {
		return &entitle.Set{} // written by parse from a parsed set: cannot fail
	}
	return &set
}

// prompts reports whether the request's prompt holds v.
func (q *request) prompts(v string) bool { return slices.Contains(q.Prompt, v) }

// needsLogin reports whether a session authenticated at authTime is not
// enough for the request: prompt=login (or select_account, as there is no
// account chooser), or older than max_age.
func (q *request) needsLogin(authTime, now time.Time) bool {
	if q.prompts(promptLogin) || q.prompts(promptSelectAccount) {
		return true
	}
	return q.MaxAge >= 0 && now.Sub(authTime) > time.Duration(q.MaxAge)*time.Second
}

// pageError is an error shown to the user, never redirected: the client
// or its redirect URI is not known to be good.
type pageError struct {
	status  int
	message string
	cause   error
}

func badPage(message, cause string) *pageError {
	return &pageError{status: http.StatusBadRequest, message: message, cause: errors.New(cause)}
}

// params reads the request's parameters: the query of a GET, the form
// body of a POST (OpenID Connect Core §3.1.2.1). A parameter sent once
// with an empty value counts as absent; repeated lists the repeated ones.
func params(w http.ResponseWriter, r *http.Request) (p url.Values, repeated []string, pe *pageError) {
	switch r.Method {
	case http.MethodGet:
		raw, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return nil, nil, badPage("The sign-in request is malformed.", "malformed query")
		}
		p = url.Values{}
		for k, vs := range raw {
			if len(vs) > 1 {
				repeated = append(repeated, k)
				continue
			}
			if vs[0] != "" {
				p[k] = vs
			}
		}
		return p, repeated, nil
	case http.MethodPost:
		form, perr := oauth.ReadForm(w, r)
		if perr != nil {
			return nil, nil, &pageError{status: max(perr.Status, http.StatusBadRequest),
				message: "The sign-in request is malformed.", cause: perr}
		}
		return form, nil, nil
	}
	return nil, nil, &pageError{status: http.StatusMethodNotAllowed, message: "The sign-in request is malformed.",
		cause: errors.New("method not allowed")}
}

// parse checks an authorization request. A pageError means the client or
// its redirect URI is not good; an *oauth.Error goes back to q.RedirectURI
// in q.ResponseMode, with q.State.
func (e *Endpoint) parse(w http.ResponseWriter, r *http.Request) (*request, *clients.Client, *pageError, *oauth.Error) {
	p, repeated, pe := params(w, r)
	if pe != nil {
		return nil, nil, pe, nil
	}
	for _, k := range repeated {
		if k == "client_id" || k == "redirect_uri" || k == "request" || k == "response_type" {
			return nil, nil, badPage("The sign-in request is malformed.", "parameter "+k+" repeated"), nil
		}
	}
	c, ok := e.cfg.Clients.Client(p.Get("client_id"))
	if !ok {
		return nil, nil, &pageError{status: http.StatusBadRequest, message: "The application that sent you here is not registered.",
			cause: errors.New("unknown client")}, nil
	}
	// A request object (OpenID Connect Core §6.1) may carry the redirect
	// URI; one that fails changes nothing, and is reported to the redirect
	// URI of the plain parameters.
	var objErr *oauth.Error
	if raw := p.Get("request"); raw != "" {
		objErr = e.mergeRequestObject(p, raw, c)
	}
	q := &request{ClientID: c.ID, MaxAge: -1}
	if pe := q.redirect(c, p.Get("redirect_uri")); pe != nil {
		return nil, nil, pe, nil
	}
	// From here on, errors go back to the client.
	perr := q.responseType(p.Get("response_type"))
	if st := p.Get("state"); len(st) <= maxState {
		q.State = st
	} else if perr == nil {
		perr = oauth.InvalidRequest("state is too long")
	}
	if perr == nil {
		perr = q.responseMode(p.Get("response_mode"))
	}
	switch {
	case perr != nil:
	case len(repeated) > 0:
		perr = oauth.InvalidRequest("parameter " + oauth.SafeParamName(repeated[0]) + " is repeated")
	case objErr != nil:
		perr = objErr
	case p.Has("request_uri"):
		perr = oauth.NewError(oauth.ErrRequestURINotSupported, "request_uri is not supported")
	case p.Has("registration"):
		perr = oauth.NewError(oauth.ErrRegistrationNotSupp, "registration is not supported")
	default:
		if perr = q.rest(c, p); perr == nil {
			perr = e.idTokenHint(r.Context(), q, c, p.Get("id_token_hint"))
		}
	}
	return q, c, nil, perr
}

// idTokenHint reads an id_token_hint into q.HintSubject: one of our ID
// tokens (verify.ParseIDTokenHint, an expired one too) issued to c alone,
// as logout takes it; one of a key retired since is ignored.
func (e *Endpoint) idTokenHint(ctx context.Context, q *request, c *clients.Client, raw string) *oauth.Error {
	if raw == "" {
		return nil
	}
	h, err := verify.ParseIDTokenHint(ctx, raw, e.cfg.Issuer, e.cfg.Keys)
	switch {
	case err != nil:
		// A hint that cannot be verified is refused, an unknown key id's
		// too: ignored, a hint forged with a made-up key id would pass
		// where a real one naming another user would not. A relying party
		// whose hint's key was removed since starts again without it.
		return &oauth.Error{Code: oauth.ErrInvalidRequest, Description: "id_token_hint is not an ID token of this server", Cause: err}
	case len(h.Audience) != 1 || h.Audience[0] != c.ID:
		return oauth.InvalidRequest("id_token_hint was not issued to this client")
	}
	q.HintSubject = h.Subject
	return nil
}

// redirect sets where the response goes: the redirect_uri sent, if the
// client registered it, or the client's only URI when none was sent.
func (q *request) redirect(c *clients.Client, sent string) *pageError {
	if sent == "" {
		if len(c.RedirectURIs) != 1 {
			return badPage("The sign-in request does not say where to return to.", "redirect_uri missing")
		}
		q.RedirectURI = c.RedirectURIs[0]
		return nil
	}
	if !c.MatchRedirectURI(sent) {
		return badPage("The address to return to is not registered for this application.", "redirect_uri not registered")
	}
	q.RedirectURI, q.RedirectParam = sent, sent
	return nil
}

// responseType parses response_type: space-separated code, token and
// id_token, each at most once, in any order. The default response mode
// is set too, for the errors.
func (q *request) responseType(rt string) *oauth.Error {
	q.ResponseMode = modeQuery
	if rt == "" {
		return oauth.InvalidRequest("missing response_type")
	}
	seen := map[string]bool{}
	for v := range strings.SplitSeq(rt, " ") {
		switch {
		case seen[v] || (v != "code" && v != "token" && v != "id_token"):
			return oauth.NewError(oauth.ErrUnsupportedResponseType, "unsupported response_type")
		}
		seen[v] = true
	}
	q.Code, q.Token, q.IDToken = seen["code"], seen["token"], seen["id_token"]
	q.ResponseType = rt
	if q.Token || q.IDToken {
		// Tokens never travel in a query (Multiple Response Types §3.0).
		q.ResponseMode = modeFragment
	}
	return nil
}

// responseMode takes response_mode, refusing query for tokens.
func (q *request) responseMode(m string) *oauth.Error {
	switch m {
	case "":
	case modeQuery:
		if q.Token || q.IDToken {
			return oauth.InvalidRequest("response_mode query cannot carry tokens")
		}
		q.ResponseMode = m
	case modeFragment, modeFormPost:
		q.ResponseMode = m
	default:
		return oauth.InvalidRequest("unsupported response_mode")
	}
	return nil
}

// rest checks what the client may ask: the grant types of the response
// type, scopes, nonce, PKCE, prompt and max_age.
func (q *request) rest(c *clients.Client, p url.Values) *oauth.Error {
	if (q.Code && !c.AllowsGrant(oauth.GrantAuthorizationCode)) || ((q.Token || q.IDToken) && !c.AllowsGrant(oauth.GrantImplicit)) {
		return oauth.NewError(oauth.ErrUnauthorizedClient, "the client may not use this response_type")
	}
	scopes, perr := c.RequestedScopes(p.Get("scope"))
	if perr != nil {
		return perr
	}
	q.Scopes = scopes
	if q.IDToken && !slices.Contains(scopes, oauth.ScopeOpenID) {
		return oauth.NewError(oauth.ErrInvalidScope, "response_type id_token needs the openid scope")
	}
	q.Nonce = p.Get("nonce")
	switch {
	case len(q.Nonce) > maxNonce:
		return oauth.InvalidRequest("nonce is too long")
	case q.IDToken && q.Nonce == "":
		// OpenID Connect Core §3.2.2.1, §3.3.2.11: an ID token in the
		// front channel needs a nonce to bind it to the browser.
		return oauth.InvalidRequest("nonce is required when the response type has id_token")
	}
	if perr := q.pkce(c, p.Get("code_challenge"), p.Get("code_challenge_method")); perr != nil {
		return perr
	}
	if perr := q.prompt(p.Get("prompt")); perr != nil {
		return perr
	}
	if ma := p.Get("max_age"); ma != "" {
		n, err := strconv.Atoi(ma)
		if err != nil || n < 0 || n > maxMaxAge {
			return oauth.InvalidRequest("max_age must be a number of seconds")
		}
		q.MaxAge = n
	}
	// acr_values (OpenID Connect Core §3.1.2.1, RFC 9470 §4): voluntary
	// classes in order of preference. Asking for the multi-factor one
	// starts a step-up; a class not known is ignored, as it may be.
	if acr := p.Get("acr_values"); len(acr) <= maxLoginHint {
		q.SecondFactor = slices.Contains(strings.Fields(acr), oauth.ACRMultiFactor)
	}
	if q.LoginHint = p.Get("login_hint"); len(q.LoginHint) > maxLoginHint {
		q.LoginHint = ""
	}
	asked, perr := oauth.AskedDetails(p)
	if perr != nil {
		return perr
	}
	if asked != nil {
		q.Details = string(asked.MarshalDetails())
	}
	return nil
}

// pkce checks the PKCE challenge (RFC 7636 §4.3): required of public
// clients, S256 unless the client may use plain.
func (q *request) pkce(c *clients.Client, challenge, method string) *oauth.Error {
	if !q.Code {
		return nil // no code, nothing to bind
	}
	if challenge == "" {
		if method != "" {
			return oauth.InvalidRequest("code_challenge_method without code_challenge")
		}
		if c.Public {
			return oauth.InvalidRequest("a public client must send a PKCE code_challenge (S256)")
		}
		return nil
	}
	if method == "" {
		method = tokens.PKCEPlain // RFC 7636 §4.3
	}
	switch {
	case method != tokens.PKCES256 && method != tokens.PKCEPlain:
		return oauth.InvalidRequest("unsupported code_challenge_method")
	case method == tokens.PKCEPlain && !c.AllowPlainPKCE:
		return oauth.InvalidRequest("code_challenge_method plain is not allowed for this client: use S256")
	case !tokens.ValidChallenge(challenge, method):
		return oauth.InvalidRequest("malformed code_challenge")
	}
	q.Challenge, q.Method = challenge, method
	return nil
}

// prompt parses prompt: none alone, or login, consent, select_account.
func (q *request) prompt(v string) *oauth.Error {
	for p := range strings.SplitSeq(v, " ") {
		switch p {
		case "":
			continue
		case promptNone, promptLogin, promptConsent, promptSelectAccount:
		default:
			return oauth.InvalidRequest("unsupported prompt value")
		}
		if !slices.Contains(q.Prompt, p) {
			q.Prompt = append(q.Prompt, p)
		}
	}
	if q.prompts(promptNone) && len(q.Prompt) > 1 {
		return oauth.InvalidRequest("prompt none cannot be combined with other values")
	}
	return nil
}
