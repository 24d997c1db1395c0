package clients

import (
	"crypto"
	"fmt"
	"slices"
	"time"

	"github.com/gatehouse/gatehouse/identity/oauth"
)

// Client is a registered client with its effective policy. It is
// read-only once built.
type Client struct {
	Config
	// AccessLifetime is the lifetime of the client's access tokens.
	AccessLifetime time.Duration
	// Refresh is the client's effective refresh-token policy.
	Refresh RefreshPolicy

	// RequestKeys are the keys of RequestObjectJWKS, by kid.
	RequestKeys map[string]crypto.PublicKey
	grants      map[string]bool
	scopes      map[string]bool
	origins     map[string]bool
	anyOrigin   bool
}

// AllowsGrant reports whether the client may use grant type g.
func (c *Client) AllowsGrant(g string) bool { return c.grants[g] }

// AllowsOrigin reports whether the browser origin o may call endpoints for
// the client.
func (c *Client) AllowsOrigin(o string) bool { return c.anyOrigin || c.origins[o] }

// AllowsScope reports whether the client may request scope s.
func (c *Client) AllowsScope(s string) bool { return c.scopes[s] }

// RequestedScopes resolves a scope parameter against what the client may
// request: every named scope must be the client's (else invalid_scope);
// none named means the client's default scopes.
func (c *Client) RequestedScopes(param string) ([]string, *oauth.Error) {
	requested, err := oauth.ParseScope(param)
	if err != nil {
		return nil, err
	}
	if len(requested) == 0 {
		return slices.Clone(c.DefaultScopes), nil
	}
	for _, s := range requested {
		if !c.scopes[s] {
			return nil, oauth.NewError(oauth.ErrInvalidScope, "the client may not request scope "+oauth.QuoteScope(s))
		}
	}
	return requested, nil
}

// Registry is the set of registered clients and API resources. It is
// read-only once built and safe for concurrent use.
type Registry struct {
	clients   map[string]*Client
	resources map[string]APIResource
}

// Defaults are the server-wide values a client's policy starts from.
type Defaults struct {
	AccessTokenLifetime time.Duration
	Refresh             RefreshPolicy // with its defaults applied
}

// NewRegistry checks the clients and resources (ValidateAll) and builds
// each client's effective policy from d.
func NewRegistry(list []Config, resources []APIResource, d Defaults) (*Registry, error) {
	if err := ValidateAll(list, resources); err != nil {
		return nil, err
	}
	reg := &Registry{clients: make(map[string]*Client, len(list)), resources: make(map[string]APIResource, len(resources))}
	var err error
	for _, cc := range list {
		c := &Client{Config: cc, grants: set(cc.GrantTypes), scopes: set(cc.Scopes), origins: map[string]bool{}}
		if len(c.DefaultScopes) == 0 {
			c.DefaultScopes = slices.Clone(cc.Scopes)
		}
		for _, o := range cc.AllowedOrigins {
			if o == "*" {
				c.anyOrigin = true
			} else {
				c.origins[o] = true
			}
		}
		c.AccessLifetime = cc.AccessTokenLifetime
		if c.AccessLifetime <= 0 {
			c.AccessLifetime = d.AccessTokenLifetime
		}
		c.Refresh = d.Refresh.override(cc.Refresh)
		if c.RequestKeys, err = requestKeys(cc.RequestObjectJWKS); err != nil {
			return nil, fmt.Errorf("client %q: request object keys: %w", cc.ID, err)
		}
		reg.clients[cc.ID] = c
	}
	for _, r := range resources {
		reg.resources[r.Name] = r
	}
	return reg, nil
}

// Client returns the client with id.
func (reg *Registry) Client(id string) (*Client, bool) {
	c, ok := reg.clients[id]
	return c, ok
}

// All returns every client, in no particular order.
func (reg *Registry) All() []*Client {
	out := make([]*Client, 0, len(reg.clients))
	for _, c := range reg.clients {
		out = append(out, c)
	}
	return out
}

// AnyAllowsOrigin reports whether some client allows origin. A CORS
// preflight carries no client id, so it is answered for the union.
func (reg *Registry) AnyAllowsOrigin(origin string) bool {
	for _, c := range reg.clients {
		if c.AllowsOrigin(origin) {
			return true
		}
	}
	return false
}

// LongestAccessLifetime is the longest access-token lifetime of any
// client, at least d.
func (reg *Registry) LongestAccessLifetime(d time.Duration) time.Duration {
	for _, c := range reg.clients {
		d = max(d, c.AccessLifetime)
	}
	return d
}

func set(items []string) map[string]bool {
	m := make(map[string]bool, len(items))
	for _, s := range items {
		m[s] = true
	}
	return m
}
