package logout

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gatehouse/gatehouse/identity/clients"
	"github.com/gatehouse/gatehouse/identity/oauth"
	"github.com/gatehouse/gatehouse/identity/session"
	"github.com/gatehouse/gatehouse/identity/store"
	"github.com/gatehouse/gatehouse/identity/tokens"
	"github.com/gatehouse/gatehouse/identity/verify"
	"github.com/gatehouse/gatehouse/identity/web"
)

// Names of the endpoints in logs and metrics.
const (
	EndSessionName   = "end-session"
	CheckSessionName = "check-session"
)

// csrfPurpose is the purpose of the confirmation form's anti-forgery token.
const csrfPurpose = "logout"

// frameWait bounds how long the logged-out page waits for the
// front-channel frames before it redirects.
const frameWait = 5 * time.Second

// Config configures the endpoint.
type Config struct {
	// Issuer is the identity server's URL: the iss the hint must carry,
	// and the iss of front-channel notifications. Required.
	Issuer string
	// Path is the end-session endpoint's path, which the confirmation form
	// posts to. Required.
	Path string
	// Clients are the registered clients. Required.
	Clients *clients.Registry
	// Sessions finds and ends login sessions. Required.
	Sessions *session.Manager
	// Guard protects the confirmation form. Required.
	Guard *session.Guard
	// Pages renders the pages. Required.
	Pages *web.Pages
	// Keys are the server's published keys, which check an id_token_hint.
	// Required.
	Keys verify.KeySource
	// Tokens signs logout tokens and revokes refresh families. Required.
	Tokens *tokens.Service
	// Families finds a session's refresh families. Required.
	Families store.SessionFamilies
	// Users names the user on the confirmation page. Optional.
	Users store.Users
	// Notifier delivers back-channel logout tokens. Required.
	Notifier *Notifier
	// Revoked, if set, is called after refresh families were revoked
	// (stamped at since or later, Tokens' clock), so that this instance's
	// verifiers (and the live sockets they watch) refuse their access
	// tokens at once.
	Revoked func(ctx context.Context, since time.Time) error
	// Failed, if set, counts a failure by endpoint and error code.
	Failed func(endpoint, code string)
	// Logger receives failures at Debug (Error for server faults).
	Logger *zap.Logger
	// Audit receives logout events. Default: no-op.
	Audit *zap.Logger
}

// Endpoint is the end-session endpoint and the check-session iframe. It is
// safe for concurrent use.
type Endpoint struct {
	cfg Config
}

// New checks cfg and returns the endpoint.
func New(cfg Config) (*Endpoint, error) {
	if cfg.Issuer == "" || cfg.Path == "" || cfg.Clients == nil || cfg.Sessions == nil || cfg.Guard == nil ||
		cfg.Pages == nil || cfg.Keys == nil || cfg.Tokens == nil || cfg.Families == nil || cfg.Notifier == nil {
		return nil, errors.New("end-session endpoint: missing dependency")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Audit == nil {
		cfg.Audit = zap.NewNop()
	}
	return &Endpoint{cfg: cfg}, nil
}

// request is a checked end-session request.
type request struct {
	hint     *hint           // nil without id_token_hint
	client   *clients.Client // from the hint, or client_id; nil if neither
	redirect string          // a registered post_logout_redirect_uri, or ""
	state    string
	confirm  bool   // the confirmation form's post
	csrf     string // its anti-forgery token
	// fields are the relying party's parameters, for Repost (ServeHTTP);
	// resent says the post is that page's.
	fields url.Values
	resent bool
}

// failure is a refused request: shown, never redirected (the redirect URI
// is what may be wrong).
type failure struct {
	status  int
	code    string
	message string
	cause   error
}

const (
	msgInvalid   = "This sign-out request is not valid. Go back to the application and try again."
	msgCrossSite = "This form was sent from another site, so it was refused. You are still signed in."
	msgStale     = "This sign-out form has expired or is not this browser's. You are still signed in."
	msgServer    = "Signing out failed on our side. You are still signed in; please try again."
)

// maxState bounds the state echoed to the relying party, as the
// authorization endpoint's.
const maxState = 2048

// params are the parameters this endpoint reads; each may appear once.
var params = []string{"id_token_hint", "client_id", "post_logout_redirect_uri", "state", "confirm", "csrf_token", "resent"}

// ServeHTTP is GET|POST /connect/endsession (OpenID Connect RP-Initiated
// Logout 1.0 §2): the relying party's logout request, and the
// confirmation form's post.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	web.PageHeaders(w.Header(), e.cfg.Pages.HSTS)
	q, f := e.parse(w, r)
	if f != nil {
		e.refuse(w, r, q, f)
		return
	}
	ctx := r.Context()
	sess, live, err := e.cfg.Sessions.Current(ctx, r)
	if err != nil {
		e.refuse(w, r, q, &failure{http.StatusInternalServerError, oauth.ErrServerError, msgServer, err})
		return
	}
	switch {
	case !live && r.Method == http.MethodPost && !q.confirm && !q.resent:
		// A relying party's logout form, posted from its own site: the
		// browser sends no SameSite=Lax session cookie with a cross-site
		// POST, so no session says nothing here. A page of ours posts the
		// same fields again, same-site, with the cookie (not a redirect to
		// a GET, which would put the ID token, with its profile claims,
		// in the URL and the logs); without a session then, the browser is
		// signed out indeed (the next case).
		fields := url.Values{"resent": {"1"}}
		maps.Copy(fields, q.fields)
		e.cfg.Pages.Repost(w, r, e.cfg.Path, fields, web.Origin(q.redirect))
		return
	case !live:
		// Nothing to end: the browser is signed out already.
		e.done(w, r, q, nil)
		return
	case q.confirm:
		if err := e.cfg.Guard.SameOrigin(r); err != nil {
			e.refuse(w, r, q, &failure{http.StatusForbidden, oauth.ErrInvalidRequest, msgCrossSite, err})
			return
		}
		if !e.cfg.Guard.Check(q.csrf, csrfPurpose, session.Binding(sess)) {
			e.refuse(w, r, q, &failure{http.StatusForbidden, oauth.ErrInvalidRequest, msgStale,
				errors.New("anti-forgery token missing or not this session's")})
			return
		}
	case q.hint == nil || q.hint.subject != sess.Subject || q.hint.sid != sess.ID:
		// Without a hint that names this session (its sid), the user
		// confirms: a logout must not be forced by any page that links
		// here, nor by an ID token of another flow (a password or refresh
		// grant's has no sid) which, accepted expired, would never stop
		// working.
		e.confirm(w, r, q, sess)
		return
	}
	e.logout(w, r, q, sess)
}

// parse reads and checks the request. A request whose hint or redirect
// URI does not check out is refused before anything changes.
func (e *Endpoint) parse(w http.ResponseWriter, r *http.Request) (*request, *failure) {
	var form url.Values
	switch r.Method {
	case http.MethodGet:
		form = r.URL.Query()
	case http.MethodPost:
		var perr *oauth.Error
		if form, perr = oauth.ReadForm(w, r); perr != nil {
			return nil, &failure{max(perr.Status, http.StatusBadRequest), oauth.ErrInvalidRequest, msgInvalid, perr}
		}
	default:
		w.Header().Set("Allow", "GET, POST")
		return nil, &failure{http.StatusMethodNotAllowed, oauth.ErrInvalidRequest, msgInvalid, errors.New("method not allowed")}
	}
	for _, p := range params {
		if len(form[p]) > 1 {
			return nil, &failure{http.StatusBadRequest, oauth.ErrInvalidRequest, msgInvalid, errors.New("parameter " + p + " repeated")}
		}
	}
	if len(form.Get("state")) > maxState {
		return nil, &failure{http.StatusBadRequest, oauth.ErrInvalidRequest, msgInvalid, errors.New("state too long")}
	}
	q := &request{state: form.Get("state"), confirm: r.Method == http.MethodPost && form.Get("confirm") != "",
		csrf: form.Get("csrf_token"), fields: url.Values{}, resent: r.Method == http.MethodPost && form.Get("resent") != ""}
	for _, p := range []string{"id_token_hint", "client_id", "post_logout_redirect_uri", "state"} {
		if v, ok := form[p]; ok {
			q.fields[p] = v
		}
	}
	if raw := form.Get("id_token_hint"); raw != "" {
		h, err := parseHint(r.Context(), raw, e.cfg.Issuer, e.cfg.Keys, e.cfg.Clients)
		if err != nil {
			return q, &failure{http.StatusBadRequest, oauth.ErrInvalidRequest, msgInvalid, err}
		}
		q.hint, q.client = h, h.client
	}
	if id := form.Get("client_id"); id != "" {
		c, ok := e.cfg.Clients.Client(id)
		switch {
		case !ok:
			return q, &failure{http.StatusBadRequest, oauth.ErrInvalidRequest, msgInvalid, errors.New("unknown client_id")}
		case q.client != nil && q.client != c:
			return q, &failure{http.StatusBadRequest, oauth.ErrInvalidRequest, msgInvalid,
				errors.New("client_id is not the id_token_hint's audience")}
		}
		q.client = c
	}
	if uri := form.Get("post_logout_redirect_uri"); uri != "" {
		if q.client == nil || !q.client.MatchPostLogoutRedirectURI(uri) {
			return q, &failure{http.StatusBadRequest, oauth.ErrInvalidRequest, msgInvalid,
				errors.New("post_logout_redirect_uri not registered for the client")}
		}
		q.redirect = uri
	}
	return q, nil
}

// confirm shows the confirmation page: its form carries the request's
// parameters (checked again when it is posted) and an anti-forgery token
// bound to the session.
func (e *Endpoint) confirm(w http.ResponseWriter, r *http.Request, q *request, sess store.Session) {
	fields := url.Values{}
	name := ""
	if q.client != nil {
		fields.Set("client_id", q.client.ID)
		name = q.client.Name
		if name == "" {
			name = q.client.ID
		}
	}
	if q.redirect != "" {
		fields.Set("post_logout_redirect_uri", q.redirect)
	}
	if q.state != "" {
		fields.Set("state", q.state)
	}
	username := ""
	if e.cfg.Users != nil {
		if u, err := e.cfg.Users.UserBySubject(r.Context(), sess.Subject); err == nil {
			username = u.Username
		}
	}
	e.cfg.Pages.LogoutConfirm(w, r, web.LogoutConfirm{
		Action: e.cfg.Path, ClientName: name, Username: username,
		CSRFToken: e.cfg.Guard.Token(csrfPurpose, session.Binding(sess)), Fields: fields,
	})
}

// logout ends sess: the refresh families of clients that ask for it are
// revoked first (a failure there leaves the session as it was), then the
// session ends and its cookies go, the back-channel tokens are queued, and
// the logged-out page loads the front-channel frames.
func (e *Endpoint) logout(w http.ResponseWriter, r *http.Request, q *request, sess store.Session) {
	ctx := r.Context()
	revoked, err := e.revokeFamilies(ctx, sess)
	if err != nil {
		e.refuse(w, r, q, &failure{http.StatusInternalServerError, oauth.ErrServerError, msgServer, err})
		return
	}
	if err := e.cfg.Sessions.End(ctx, w, r); err != nil {
		e.refuse(w, r, q, &failure{http.StatusInternalServerError, oauth.ErrServerError, msgServer, err})
		return
	}
	// A code exchange that checked the session before it ended may have
	// stored its family since the first look: look again (the exchange
	// checks the session once more after it stores the family, so one of
	// the two sees the other). The session has ended: a failure here is
	// logged, not shown.
	if more, err := e.revokeFamilies(ctx, sess); err != nil {
		e.cfg.Logger.Error("revoking a logged-out session's refresh families", zap.String("sid", sess.ID), zap.Error(err))
	} else {
		revoked += more
	}
	initiator := ""
	if q.client != nil {
		initiator = q.client.ID
	}
	e.cfg.Audit.Info("browser logout", zap.String("sub", sess.Subject), zap.String("sid", sess.ID),
		zap.String("client_id", initiator), zap.Strings("clients", sess.Clients), zap.Int("families_revoked", revoked),
		zap.Bool("confirmed", q.confirm))
	var frames []string
	for _, id := range sess.Clients {
		c, ok := e.cfg.Clients.Client(id)
		if !ok {
			continue
		}
		if c.FrontchannelLogoutURI != "" {
			frames = append(frames, e.frontchannelURI(c, sess.ID))
		}
		if c.BackchannelLogoutURI != "" {
			e.backchannel(c, sess)
		}
	}
	e.done(w, r, q, frames)
}

// revokeFamilies revokes the session's live refresh families of the
// clients with LogoutRevokesRefresh, and returns how many.
func (e *Endpoint) revokeFamilies(ctx context.Context, sess store.Session) (int, error) {
	fams, err := e.cfg.Families.SessionRefreshFamilies(ctx, sess.ID)
	if err != nil {
		return 0, err
	}
	since := e.cfg.Tokens.Now() // before the revocations' stamps
	n := 0
	for _, f := range fams {
		c, ok := e.cfg.Clients.Client(f.ClientID)
		if !ok || !c.LogoutRevokesRefresh || !f.RevokedAt.IsZero() || f.Subject != sess.Subject {
			continue
		}
		if err := e.cfg.Tokens.Revoke(ctx, f.ID); err != nil {
			return n, err
		}
		n++
		e.cfg.Audit.Info("refresh token revoked", zap.String("client_id", f.ClientID), zap.String("sub", f.Subject),
			zap.String("family_id", f.ID), zap.String("reason", "logout"))
	}
	if n > 0 && e.cfg.Revoked != nil {
		if err := e.cfg.Revoked(ctx, since); err != nil {
			// Revoked in the store: other instances see it on their next
			// poll; this one's live check is only late.
			e.cfg.Logger.Error("refreshing revocations after logout", zap.Error(err))
		}
	}
	return n, nil
}

// frontchannelURI is c's front-channel logout URI, with iss and sid when
// the client asks for them (Front-Channel Logout 1.0 §2).
func (e *Endpoint) frontchannelURI(c *clients.Client, sid string) string {
	if !c.FrontchannelLogoutSessionRequired {
		return c.FrontchannelLogoutURI
	}
	v := url.Values{"iss": {e.cfg.Issuer}, "sid": {sid}}
	return appendQuery(c.FrontchannelLogoutURI, v)
}

// backchannel queues a logout token for c.
func (e *Endpoint) backchannel(c *clients.Client, sess store.Session) {
	token, jti, err := e.cfg.Tokens.LogoutToken(c.ID, c.IDTokenSignedResponseAlg, sess.Subject, sess.ID)
	if err != nil {
		e.cfg.Logger.Error("minting a logout token", zap.String("client_id", c.ID), zap.Error(err))
		return
	}
	e.cfg.Notifier.Notify(c.BackchannelLogoutURI, c.ID, jti, token)
}

// done ends the request: back to the relying party (with state) when it
// named a registered redirect URI, else the logged-out page; the page
// whenever there are front-channel frames to load first.
func (e *Endpoint) done(w http.ResponseWriter, r *http.Request, q *request, frames []string) {
	target := ""
	if q.redirect != "" {
		target = q.redirect
		if q.state != "" {
			target = appendQuery(target, url.Values{"state": {q.state}})
		}
	}
	if target != "" && len(frames) == 0 {
		w.Header().Set("Location", target)
		status := http.StatusFound
		if r.Method == http.MethodPost {
			status = http.StatusSeeOther
		}
		w.WriteHeader(status)
		return
	}
	e.cfg.Pages.LoggedOut(w, r, web.LoggedOut{Frames: frames, Redirect: target, Wait: frameWait})
}

// refuse logs and counts a refused request and shows why.
func (e *Endpoint) refuse(w http.ResponseWriter, r *http.Request, q *request, f *failure) {
	level := zapcore.DebugLevel
	if f.code == oauth.ErrServerError {
		level = zapcore.ErrorLevel
	}
	if ce := e.cfg.Logger.Check(level, "request failed"); ce != nil {
		fields := []zap.Field{zap.String("endpoint", EndSessionName), zap.String("remote_addr", r.RemoteAddr),
			zap.String("error", f.code), zap.Int("status", f.status)}
		if q != nil && q.client != nil {
			fields = append(fields, zap.String("client_id", q.client.ID))
		}
		if f.cause != nil {
			fields = append(fields, zap.NamedError("cause", f.cause))
		}
		ce.Write(fields...)
	}
	if e.cfg.Failed != nil {
		e.cfg.Failed(EndSessionName, f.code)
	}
	e.cfg.Pages.Error(w, r, f.status, web.Error{Heading: "Sign-out failed", Message: f.message})
}

// appendQuery adds v to uri's query.
func appendQuery(uri string, v url.Values) string {
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	return uri + sep + v.Encode()
}
